"""listing.csv_chunks writes what one csv.writer pass over the same cells writes, in chunks."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zoneinfo

from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from memoryadmin.listing import Column, column, csv_cell, csv_chunks

COLUMNS = (column("id", "id"), column("who", "owner.name"), Column("v", lambda r: r["v"]))

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.sampled_from(["=1+1", "+x", "-3", "@a", "\tt", "\rr", "", "a,b", 'say "hi"', "l1\nl2"]),
    st.lists(st.text(max_size=5), max_size=3),
    st.tuples(st.integers(), st.text(max_size=3)),
    st.datetimes(timezones=st.just(dt.UTC)),
    st.datetimes(),
)


def _one_pass(rows: list[dict]) -> str:
    """The reference: the whole CSV written by csv.writer in one go."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([c.header for c in COLUMNS])
    writer.writerows([csv_cell(c.value(row)) for c in COLUMNS] for row in rows)
    return out.getvalue()


def _rows(vs: list) -> list[dict]:
    return [
        {"id": i, "owner": {"name": f"=u{i}" if i % 2 else None}, "v": v} for i, v in enumerate(vs)
    ]


@given(st.lists(values, max_size=40))
def test_it_writes_the_same_text_as_the_line_writer(vs):
    rows = _rows(vs)
    assert "".join(csv_chunks(COLUMNS, rows, chunk_chars=50)) == _one_pass(rows)


def test_it_says_times_in_the_current_zone_and_flushes_in_chunks():
    rows = _rows([dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)] * 500)
    with timezone.override(zoneinfo.ZoneInfo("Europe/Berlin")):
        chunks = list(csv_chunks(COLUMNS, rows, chunk_chars=4096))
        assert "".join(chunks) == _one_pass(rows)
    assert "2026-03-01T13:00:00+01:00" in chunks[0]
    assert len(chunks) > 3 and all(len(c) < 4096 + 200 for c in chunks)
    assert list(csv_chunks(COLUMNS, [])) == ["id,who,v\r\n"]
