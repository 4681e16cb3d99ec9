"""The source page keeps a flat query count however many records the snapshot holds, and
leaves what it does not show unread."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memoryadmin.audit import Actor
from sources.models import Record, Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.helpers import record_text, write_source


def _refreshed(team, root, ids: tuple[str, ...]) -> Source:  # type: ignore[no-untyped-def]
    """An approved local source of these records, refreshed once."""
    write_source(root, {i: record_text(i) for i in ids})
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return source


def _queries(client, url: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_it_shows_a_source_of_ten_thousand_records_in_as_many_queries_as_one_of_two(
    client, admin_user, team, tmp_path, django_assert_max_num_queries
):
    source = _refreshed(team, tmp_path, ("a", "b"))
    client.force_login(admin_user)
    url = reverse("source-detail", args=[team.slug, source.pk])
    client.get(url)  # warm the session and role caches
    few = _queries(client, url)
    template = Record.objects.filter(snapshot=source.current_snapshot).first()
    rows = []
    for n in range(10_000):
        template.pk = None
        template.record_id = f"bulk-{n:05d}"
        template.path = f"records/bulk-{n:05d}.md"
        template.active = n % 10 != 0  # some inactive ones too
        template.inactive_reason = "" if template.active else "superseded"
        rows.append(
            Record(**{f.attname: getattr(template, f.attname) for f in Record._meta.fields})
        )
    Record.objects.bulk_create(rows, batch_size=1000)
    assert _queries(client, url) == few
    with django_assert_max_num_queries(14):
        response = client.get(url, {"page": 40})
    assert response.status_code == 200 and "bulk-" in response.content.decode()


def test_the_pages_that_show_a_source_leave_its_snapshots_bytes_unread(
    client, admin_user, team, tmp_path
):  # type: ignore[no-untyped-def]
    """A snapshot's byte fields (`Snapshot.BYTE_FIELDS`: the manifest, the raw check's
    entries and stats, ~1 MB per 10,000 records) are the next refresh's alone: the list, the
    source's page, the dashboard and the API never select them."""
    source = _refreshed(team, tmp_path, ("a", "b"))
    assert source.current_snapshot.raw_stats  # the refresh kept them
    client.force_login(admin_user)
    pages = [
        reverse("source-detail", args=[team.slug, source.pk]),
        reverse("source-list", args=[team.slug]),
        reverse("team-home", args=[team.slug]),
    ]
    for url in pages:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200, url
        selected = " ".join(q["sql"] for q in captured.captured_queries)
        for name in ("manifest_body", "raw_entries", "raw_stats"):
            assert f'"sources_snapshot"."{name}"' not in selected, (url, name)
        assert '"sources_snapshot"."record_count"' in selected or url != pages[0]


def test_the_page_counts_active_records_only_when_one_may_have_expired_since(
    client, admin_user, team, tmp_path
):  # type: ignore[no-untyped-def]
    """The stored count stands while no record has an expiry date; once one has, the page
    counts them (a record may have expired since the refresh), and says so right."""
    source = _refreshed(team, tmp_path, ("a", "b", "c"))
    client.force_login(admin_user)
    url = reverse("source-detail", args=[team.slug, source.pk])

    def page() -> tuple[str, list[str]]:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200
        return response.content.decode(), [q["sql"] for q in captured.captured_queries]

    html, queries = page()
    assert "Active records (3)" in html
    assert not [q for q in queries if "COUNT(" in q and '"sources_record"' in q]
    # one record now carries an expiry date in the past: the stored count (3) is stale
    Record.objects.filter(snapshot=source.current_snapshot, record_id="b").update(
        expires=timezone.now() - timedelta(minutes=1)
    )
    html, queries = page()
    assert "Active records (2)" in html
    assert [q for q in queries if "COUNT(" in q and '"sources_record"' in q]
    # a filter narrows the list: counted, whatever is stored
    Record.objects.filter(snapshot=source.current_snapshot).update(expires=None)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, {"q": "zzz-no-such-text"})
    assert response.status_code == 200
    assert "No active record matches the filter." in response.content.decode()
    assert [q for q in captured.captured_queries if "COUNT(" in q["sql"]]
