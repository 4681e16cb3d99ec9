"""The source page keeps a flat query count however many records the snapshot holds."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memoryadmin.audit import Actor
from sources.models import Record
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.helpers import record_text, write_source


def _queries(client, url: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_it_shows_a_source_of_ten_thousand_records_in_as_many_queries_as_one_of_two(
    client, admin_user, team, tmp_path, django_assert_max_num_queries
):
    root = write_source(tmp_path, {"a": record_text("a"), "b": record_text("b")})
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
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
