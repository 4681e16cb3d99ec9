"""The Brain page's chunk list: filters, sort, the pager, and a CSV that streams any size."""

from __future__ import annotations

import csv
import io
import re
import tracemalloc

import pytest
from django.urls import reverse

from bundles.models import Chunk
from formats import memoryai as protocol
from memoryadmin.listing import CSV_CHUNK


def _chunks(team, count: int, *, start: int = 0, **fields) -> None:  # type: ignore[no-untyped-def]
    rows = []
    for index in range(start, start + count):
        content = fields.pop("content", None) or f"chunk number {index} about deploys"
        rows.append(
            Chunk(
                team=team,
                content=content,
                content_hash=protocol.content_hash(content),
                memory_type=fields.get("memory_type", "fact"),
                zone=fields.get("zone", "standard"),
                is_dna=fields.get("is_dna", False),
            )
        )
    Chunk.objects.bulk_create(rows, batch_size=2000)


def _csv(response) -> list[list[str]]:  # type: ignore[no-untyped-def]
    assert response.streaming and response["Content-Type"] == "text/csv"
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_it_filters_sorts_and_counts_the_chunks(client, viewer_user, team, other_team):
    _chunks(team, 3)
    _chunks(team, 1, start=10, content="Rollback runbook", memory_type="procedure", zone="critical")
    _chunks(other_team, 1, start=20, content="beta rollback")
    client.force_login(viewer_user)
    url = reverse("brain", args=[team.slug])
    found = client.get(url, {"q": "rollback"}).context["page"]
    assert [c.content for c in found] == ["Rollback runbook"]
    assert [c.memory_type for c in client.get(url, {"type": "PROCEDURE"}).context["page"]] == [
        "procedure"
    ]
    assert len(client.get(url, {"zone": "critical"}).context["page"].object_list) == 1
    ordered = client.get(url, {"sort": "id"}).context["page"].object_list
    assert [c.pk for c in ordered] == sorted(c.pk for c in ordered)
    html = client.get(url).content.decode()
    assert "Page 1 of 1 · 1\u20134 of 4" in html
    refused = client.get(url, {"zone": "nowhere", "after": "yesterday"})
    assert refused.status_code == 400
    assert "Fix the filter" in refused.content.decode()
    assert refused.context["page"].paginator.count == 0


def test_it_reads_the_brain_page_in_as_many_queries_for_one_chunk_as_for_two_pages(
    client, viewer_user, team
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(viewer_user)
    url = reverse("brain", args=[team.slug])

    def queries() -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return [q["sql"] for q in captured.captured_queries]

    _chunks(team, 1)
    queries()  # the first read also looks up, once per process, which vector column exists
    one = queries()
    _chunks(team, 49, start=1)
    fifty = queries()
    assert len(one) == len(fifty)
    live = re.compile(
        r'SELECT COUNT\(\*\) .* FROM "bundles_chunk" WHERE '
        r'\(NOT "bundles_chunk"."is_deleted" AND "bundles_chunk"."team_id" = \d+\)$'
    )
    live_counts = [sql for sql in fifty if live.match(sql)]
    assert len(live_counts) == 1, "\n".join(
        live_counts
    )  # the pager and the embedding progress share it


def test_it_counts_the_filtered_chunks_in_the_pager_not_the_whole_brain(client, viewer_user, team):
    _chunks(team, 3)
    _chunks(team, 1, start=10, content="Rollback runbook", memory_type="procedure")
    client.force_login(viewer_user)
    response = client.get(reverse("brain", args=[team.slug]), {"type": "procedure"})
    html = response.content.decode()
    assert "Page 1 of 1 · 1\u20131 of 1" in html
    assert response.context["embeddings"]["total"] == 4


def test_it_shows_where_the_pager_is_with_thousands(client, viewer_user, team):
    _chunks(team, 26 * 25)
    client.force_login(viewer_user)
    html = client.get(reverse("brain", args=[team.slug]), {"page": "13"}).content.decode()
    assert "Page 13 of 26 · 301\u2013325 of 650" in html
    assert 'aria-current="page">13<' in html and "page=26" in html and "page=1" in html
    assert "…" in html


def test_it_exports_the_filtered_chunks_as_csv_masking_secrets_and_formulas(
    client, viewer_user, team
):
    _chunks(team, 2)
    _chunks(team, 1, start=5, content='=HYPERLINK("http://evil")', memory_type="x_formula")
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    _chunks(team, 1, start=6, content=f"aws key {key}", memory_type="x_secret")
    Chunk.objects.filter(memory_type="x_secret").update(
        secret_findings=[{"rule": "aws-access-key-id", "line": 1, "start": 8, "end": 28}]
    )
    client.force_login(viewer_user)
    url = reverse("brain", args=[team.slug])
    rows = _csv(client.get(url, {"export": "csv", "type": "x_formula"}))
    assert rows[0][:3] == ["id", "type", "zone"]
    assert len(rows) == 2 and rows[1][-1] == '\'=HYPERLINK("http://evil")'
    masked = _csv(client.get(url, {"export": "csv", "type": "x_secret"}))
    assert key not in str(masked)
    everything = _csv(client.get(url, {"export": "csv"}))
    assert len(everything) == 1 + 4


# Both sizes span several read chunks (memoryadmin.listing.CSV_CHUNK rows each).
@pytest.mark.parametrize("small, big", [(2 * CSV_CHUNK, 12 * CSV_CHUNK)])
def test_it_streams_a_big_brain_in_one_query_with_flat_memory(
    client, viewer_user, team, django_assert_max_num_queries, small, big
):
    client.force_login(viewer_user)
    url = reverse("brain", args=[team.slug])

    def export_peak() -> tuple[int, int]:
        response = client.get(url, {"export": "csv"})
        tracemalloc.start()
        lines = 0
        with django_assert_max_num_queries(1):  # one (server-side) cursor read in chunks
            for part in response.streaming_content:
                lines += part.count(b"\n")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return lines, peak

    _chunks(team, small)
    small_lines, small_peak = export_peak()
    _chunks(team, big - small, start=small)
    big_lines, big_peak = export_peak()
    assert (small_lines, big_lines) == (small + 1, big + 1)
    # Six times the rows, not six times the memory: only one read chunk is held at a time.
    assert big_peak < small_peak * 1.5, (small_peak, big_peak)


def test_it_lists_the_chunks_over_the_api_with_the_pages_filters_masking_secrets(
    client, viewer_user, team, other_team, token_client, django_assert_max_num_queries
):
    _chunks(team, 3)
    _chunks(team, 1, start=10, content="Rollback runbook", memory_type="procedure", zone="critical")
    _chunks(other_team, 1, start=20, content="beta rollback")
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    _chunks(team, 1, start=30, content=f"aws key {key}", memory_type="x_secret")
    Chunk.objects.filter(memory_type="x_secret").update(
        secret_findings=[{"rule": "aws-access-key-id", "line": 1, "start": 8, "end": 28}]
    )
    api = token_client(team, ["bundles:export"])
    client.force_login(viewer_user)
    url = reverse("brain", args=[team.slug])
    for params in ({"q": "rollback"}, {"zone": "critical"}, {"type": "PROCEDURE"}, {"sort": "id"}):
        page = [c.pk for c in client.get(url, params).context["page"]]
        body = api.get("/api/brain/chunks/", params).json()
        assert [c["id"] for c in body["results"]] == page, params
    body = api.get("/api/brain/chunks/", {"q": "rollback"}).json()
    assert body["count"] == 1
    row = body["results"][0]
    assert (row["type"], row["zone"], row["dna"], row["served"]) == (
        "procedure",
        "critical",
        False,
        True,
    )
    secret = api.get("/api/brain/chunks/", {"flag": "secret"}).json()["results"]
    assert len(secret) == 1 and secret[0]["secret"] is True and key not in secret[0]["content"]
    assert api.get("/api/brain/chunks/", {"limit": 2}).json()["count"] == 5  # not other_team's
    with django_assert_max_num_queries(4):  # token, usage-free read: count + page, no per row
        api.get("/api/brain/chunks/", {"limit": 50})
    bad = api.get("/api/brain/chunks/", {"zone": "nowhere"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid-filter"
    assert token_client(team, ["context:read"]).get("/api/brain/chunks/").status_code == 403
