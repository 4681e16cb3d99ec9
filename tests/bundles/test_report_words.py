"""An import's audit summary, page message and omitted-warnings line say their numbers in words."""

from __future__ import annotations

import io

import orjson
import pytest
from django.urls import reverse

from bundles.imports import bundle_import
from bundles.imports import report as import_report
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from tests.bundles.helpers import chunk, make_bundle

pytestmark = pytest.mark.django_db


def test_it_says_one_chunk_not_one_chunks_in_the_audit_summary(team):
    bundle_import(team=team, actor=Actor.system(), bundle=make_bundle(chunks=[chunk(1, "Alone")]))
    summary = AuditEvent.objects.get(team=team, action="bundle.import").summary
    assert "1 chunk inserted" in summary
    assert "0 duplicates" in summary and "0 edges" in summary and "0 warnings" in summary
    assert "chunks" not in summary


def test_it_says_two_chunks_and_one_duplicate_on_the_page(client, team, admin_user):
    bundle = make_bundle(chunks=[chunk(1, "One"), chunk(2, "Two"), chunk(3, "One")])
    upload = io.BytesIO(orjson.dumps(bundle))
    upload.name = "brain.json"
    client.force_login(admin_user)
    response = client.post(reverse("brain-import", args=[team.slug]), {"file": upload}, follow=True)
    html = response.content.decode()
    assert "2 chunks inserted, 1 duplicate," in html
    summary = AuditEvent.objects.get(team=team, action="bundle.import").summary
    assert "2 chunks inserted, 1 duplicate," in summary


def test_it_counts_a_single_omitted_warning_in_the_singular(monkeypatch):
    monkeypatch.setattr(import_report, "MAX_WARNINGS", 2)
    report = import_report.ImportReport(bundle_format="memoryai", bundle_version=1)
    for n in range(3):
        report.warn(f"warning {n}")
    warnings = report.as_dict()["report"]["warnings"]
    assert warnings[-1] == "1 more warning was left out of this report"
    assert import_report._OMITTED_WARNINGS.match(warnings[-1]).group(1) == "1"
    report.warn("warning 3")
    last = report.as_dict()["report"]["warnings"][-1]
    assert last == "2 more warnings were left out of this report"
    assert import_report._OMITTED_WARNINGS.match(last).group(1) == "2"


def test_it_says_where_an_uploaded_file_stops_being_json_without_parser_jargon(
    client, team, admin_user
):
    upload = io.BytesIO(b'{"manifest": {"name": "cut')
    upload.name = "brain.json"
    client.force_login(admin_user)
    response = client.post(reverse("brain-import", args=[team.slug]), {"file": upload}, follow=True)
    html = response.content.decode()
    assert "This file is not a bundle: it is not valid JSON" in html
    assert "at line 1, column" in html and "Was it cut short" in html
    assert "char " not in html and "The body" not in html
