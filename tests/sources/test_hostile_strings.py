"""NUL characters and lone surrogates in a source's strings, and refreshes that fail to store.

A bad manifest name used to crash every refresh inside the worker: the run stayed `running`,
the source stayed `fresh` and its old records were served as current. Now the format library
refuses such strings and any failure while storing fails the run and marks the source stale.
"""

from __future__ import annotations

import json

import pytest

from formats import openmemories as om
from memoryadmin.audit import Actor
from sources.models import Health, RefreshRun, RunStatus, Source
from sources.services.lifecycle import source_add, source_approve, source_refresh_request
from tests.conftest import wait_for
from tests.sources.helpers import record_text, write_source

# As JSON escapes, the way a hostile memories.json carries them.
NUL = "\\u0000"
SURROGATE = "\\ud800"


def _manifest(name: str, entries: str = "[]", extra: str = "") -> bytes:
    return f'{{"openmemories": "0.1", "name": "{name}", "memories": {entries}{extra}}}'.encode()


@pytest.mark.parametrize(("escape", "code"), [(NUL, "nul-byte"), (SURROGATE, "lone-surrogate")])
def test_it_refuses_a_manifest_name_no_database_can_store(escape, code):
    with pytest.raises(om.ManifestError) as caught:
        om.parse_manifest(_manifest(f"a{escape}b"))
    assert caught.value.code == code and "'name'" in caught.value.message
    assert "\x00" not in caught.value.message and not om.SURROGATE_RE.search(str(caught.value))


@pytest.mark.parametrize(("escape", "code"), [(NUL, "nul-byte"), (SURROGATE, "lone-surrogate")])
def test_it_refuses_such_strings_in_manifest_keys_and_extensions(escape, code):
    for extra in (f', "x-{escape}": 1', f', "x-meta": {{"k": ["{escape}"]}}'):
        with pytest.raises(om.ManifestError) as caught:
            om.parse_manifest(_manifest("Fine", extra=extra))
        assert caught.value.code == code


@pytest.mark.parametrize(("escape", "code"), [(NUL, "nul-byte"), (SURROGATE, "lone-surrogate")])
def test_it_rejects_only_the_entries_that_carry_such_strings(escape, code):
    entries = json.dumps(
        [
            {"id": "good", "path": "records/good.md"},
            {"id": "bad-id", "path": "records/bad-id.md"},
            {"id": "bad-path", "path": "records/bad-path.md"},
            {"id": "bad-ext", "path": "records/bad-ext.md", "x-note": "PLACEHOLDER"},
        ]
    )
    entries = (
        entries.replace('"bad-id"', f'"bad{escape}id"', 1)
        .replace("records/bad-path.md", f"records/bad{escape}.md")
        .replace("PLACEHOLDER", escape)
    )
    manifest = om.parse_manifest(_manifest("Fine", entries))
    assert [entry.id for entry in manifest.entries] == ["good"]
    assert [r.code for r in manifest.rejected] == [code, code, code]
    for rejection in manifest.rejected:  # what a rejection keeps can be stored and shown
        for text in (rejection.message, rejection.path or "", rejection.id or ""):
            assert om.string_fault(text) is None


def test_it_rejects_a_record_with_such_strings_anywhere():
    for text in (
        record_text("a", extra='x-note: {"deep": ["\\0"]}\n'),
        record_text("a", extra='provenance:\n  author: "a\\ud800"\n'),
        record_text("a", body="A body with half a pair: \ud800\n"),
    ):
        with pytest.raises(om.Rejection) as caught:
            om.parse_record(text, expected_id="a", path="records/a.md")
        assert caught.value.code in ("nul-byte", "lone-surrogate", "yaml-syntax")
        assert om.string_fault(caught.value.message) is None


def test_it_lists_the_same_check_for_every_string_type():
    assert om.string_problem({"a": [{"b": "ok"}, "c\x00"]}, "x") == (
        "nul-byte",
        "'x.a[1]' contains a NUL character (\\u0000)",
    )
    assert om.string_problem({"\ud800": 1}, "x")[0] == "lone-surrogate"
    assert om.string_problem("emoji \U0001f600 is fine", "x") is None


@pytest.mark.worker
@pytest.mark.parametrize(("escape", "code"), [(NUL, "nul-byte"), (SURROGATE, "lone-surrogate")])
def test_it_fails_the_run_and_marks_the_source_stale_in_a_real_worker(
    celery_worker, team, tmp_path, token_client, escape, code
):
    root = write_source(tmp_path / "source", {"a": record_text("a")}, name="Good name")
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)  # queues the first refresh
    wait_for(lambda: Source.objects.filter(pk=source.pk, health=Health.FRESH).exists(), timeout=60)

    manifest = json.loads((root / "memories.json").read_text())
    text = json.dumps(manifest).replace('"Good name"', f'"a{escape}b"')
    (root / "memories.json").write_text(text, encoding="utf-8")
    run = source_refresh_request(actor=Actor.system(), source=source)
    finished = wait_for(
        lambda: RefreshRun.objects.filter(pk=run.pk, status=RunStatus.FAILED).first(), timeout=60
    )

    assert finished.error_code == code and "'name'" in finished.error
    source.refresh_from_db()
    assert source.health == Health.STALE and source.last_error_code == code
    assert source.display_name == "Good name"
    records = token_client(team, ["context:read"]).get("/api/context/").json()["records"]
    assert [(r["id"], r["stale"]) for r in records] == [("a", True)]
