"""`manage.py source_check`: validate without saving; JSON report; exit status."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from sources.models import Source
from tests.sources.helpers import record_text, write_source


def _run(capsys, *args):  # type: ignore[no-untyped-def]
    code = 0
    try:
        call_command("source_check", *args)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().out


@pytest.mark.django_db
def test_it_reports_a_valid_source_as_json(tmp_path, capsys):
    write_source(
        tmp_path,
        {
            "a": record_text("a"),
            "b": record_text("b", extra="supersedes: ['c']\n"),
            "c": record_text("c"),
            "bad": record_text("bad", created="2026-01-01"),
        },
    )
    code, out = _run(capsys, str(tmp_path), "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["error"] is None
    assert report["source"] == str(tmp_path)
    assert report["manifest"] == {"name": "Test source", "entries": 4}
    by_id = {r["id"]: r for r in report["records"]}
    assert by_id["c"]["active"] is False and by_id["c"]["inactive_reason"] == "superseded"
    assert by_id["a"] == {
        "id": "a",
        "path": "records/a.md",
        "kind": "fact",
        "scope": "user",
        "active": True,
        "inactive_reason": None,
    }
    assert [(r["id"], r["code"]) for r in report["rejected"]] == [("bad", "bad-timestamp")]
    assert report["problems"] == []
    assert not Source.objects.exists()


@pytest.mark.django_db
def test_it_fails_without_a_manifest(tmp_path, capsys):
    code, out = _run(capsys, str(tmp_path), "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["error"]["code"] == "not-found"
    assert report["manifest"] is None


@pytest.mark.django_db
def test_it_fails_for_a_denied_https_source(https_server, capsys):
    https_server.serve("memories.json", b"", status=401)
    code, out = _run(capsys, https_server.base, "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "denied"


@pytest.mark.django_db
def test_it_prints_a_readable_report(tmp_path, capsys):
    write_source(tmp_path, {"a": record_text("a"), "x": record_text("x", kind="nope")})
    code, out = _run(capsys, str(tmp_path))
    assert code == 0
    assert "1 valid records (1 active), 1 rejected" in out and "bad-kind" in out
