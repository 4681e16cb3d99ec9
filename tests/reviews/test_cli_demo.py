"""`manage.py memoryrail_check` on working copies, and the demo seed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from reviews.demo import seed
from reviews.models import Memory, Repository

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance" / "memoryrail"


def run_check(path: Path, capsys) -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    code = 0
    try:
        call_command("memoryrail_check", str(path), "--json")
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "case", sorted(p.name for p in CONFORMANCE.iterdir() if (p / "expected.json").is_file())
)
def test_it_matches_the_conformance_cases(case, capsys, tmp_path):
    # copy so symlinks and paths resolve inside a fresh tree
    root = tmp_path / case
    shutil.copytree(CONFORMANCE / case / "repo", root, symlinks=True)
    expected = json.loads((CONFORMANCE / case / "expected.json").read_text())
    code, report = run_check(root, capsys)
    assert code == expected["exit"]
    assert report["ok"] is expected["ok"]
    assert sorted((p["code"], p["path"], p["line"]) for p in report["problems"]) == sorted(
        tuple(p) for p in expected["problems"]
    )
    assert sorted((s["rule"], s["line"]) for s in report["secrets"]) == sorted(
        tuple(s) for s in expected.get("secrets", [])
    )
    assert sorted((s["code"], s["link"]) for s in report["stale"]) == sorted(
        tuple(s) for s in expected.get("stale", [])
    )
    if "stale_memories" in expected:  # which memory each finding is about
        assert sorted((s["code"], s["memory"], s["link"]) for s in report["stale"]) == sorted(
            tuple(s) for s in expected["stale_memories"]
        )
    assert [m["ref"] for m in report["memories"]] == expected["refs"]
    assert set(report) == {
        "ok",
        "config",
        "memories",
        "problems",
        "secrets",
        "stale",
        "ambiguous_refs",
    }


def test_it_seeds_the_demo_idempotently(team, admin_user, data_dir):
    message = seed(team=team, user=admin_user)
    assert message and "demo-app" in message
    repository = Repository.objects.get(team=team)
    assert repository.last_sync_ok is True, repository.last_error
    proposals = Memory.objects.filter(repository=repository, status="proposed")
    assert proposals.count() == 3
    assert proposals.filter(has_secret=True).count() == 1
    assert proposals.exclude(supersedes="").count() == 1
    assert seed(team=team, user=admin_user) is None
    assert Repository.objects.count() == 1
