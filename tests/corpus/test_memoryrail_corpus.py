"""Hostile MemoryRail repositories through the real sync (git over file://).

A bad memory file becomes a visible problem while the rest is indexed; a bad config keeps the
last index; nothing outside the working copy is ever read (symlinks in the repository).
"""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest
from django.core.management import call_command
from django.urls import reverse

from reviews.models import Memory, Repository
from reviews.services.repositories import repository_sync
from tests.corpus.hostile import YAML_CASES, deep_json
from tests.reviews.conftest import M, git, memory_text


def _sync(repo: Repository) -> Repository:
    return repository_sync(repository_id=repo.pk)


def _index(repo: Repository) -> list[tuple[str, str, str]]:
    return sorted(Memory.objects.filter(repository=repo).values_list("memory_id", "status", "body"))


def _problems(repo: Repository) -> dict[str, str]:
    repo.refresh_from_db()
    return {p["path"]: p["code"] for p in repo.problems if p.get("path")}


def _commit_bytes(remote, files: dict[str, bytes]) -> None:  # type: ignore[no-untyped-def]
    path = remote.clone("elsewhere")
    git(path, "pull", "--quiet", "--ff-only")
    for name, data in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        git(path, "add", name)
    git(path, "commit", "--quiet", "-m", "hostile")
    git(path, "push", "--quiet", "origin", "main")


def _memory(extra: str = "", body: str = "Body.\n") -> str:
    return memory_text("20260401-bad", status="proposed", body=body).replace(
        "---\n", "---\n" + extra, 1
    )


HOSTILE_FILES: dict[str, tuple[bytes, tuple[str, ...]]] = {
    **{
        name: (_memory(fields).encode(), (code,) if code else ())
        for name, (fields, code) in YAML_CASES.items()
        if name != "duplicate-key"
    },
    "duplicate-key": (_memory('title: "again"\n').encode(), ("yaml-duplicate-key",)),
    "invalid-utf8": (_memory().encode() + b"\xff\xfe", ("not-utf8",)),
    "nul-byte": (_memory(body="a\x00b\n").encode(), ("nul-byte",)),
    "huge-front-matter": (_memory("x_big: '" + "a" * 300_000 + "'\n").encode(), ("too-large",)),
    "no-front-matter": (b"plain text\n", ("frontmatter-missing",)),
    "unterminated": (b"---\nid: x\n", ("frontmatter-unterminated",)),
    "wrong-type-status": (
        _memory().replace('status: "proposed"', "status: [1]").encode(),
        ("field-type", "status-invalid"),
    ),
    "timestamp-object": (
        _memory().replace('created: "2026-01-01T00:00:00.000Z"', "created: 2026-01-01").encode(),
        (),  # YAML timestamps stay strings: a date-only value may be accepted
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_FILES))
def test_it_lists_a_hostile_memory_file_as_a_problem_and_indexes_the_rest(repository, remote, case):
    before = {row for row in _index(repository) if row[0] != "20260401-bad"}
    data, codes = HOSTILE_FILES[case]
    _commit_bytes(remote, {f"{M}/20260401-bad.md": data})
    repo = _sync(repository)
    assert repo.last_sync_ok, repo.last_error
    after = _index(repo)
    assert before <= set(after)
    problems = _problems(repo)
    if codes:
        assert problems.get(f"{M}/20260401-bad.md") in codes, problems
        assert "20260401-bad" not in {row[0] for row in after}


CONFIGS: dict[str, bytes] = {
    "deep-json": deep_json(),
    "duplicate-keys": b'{"version": 1, "review": "agents", "review": "off"}',
    "nan": b'{"version": NaN, "review": "agents"}',
    "invalid-utf8": b'{"version": 1, "review": "\xff"}',
    "too-large": b'{"version": 1, "review": "agents", "x": "' + b"a" * 100_000 + b'"}',
    "wrong-types": b'{"version": "1", "review": ["agents"]}',
    "not-object": b"[]",
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_it_keeps_the_last_index_when_the_config_turns_hostile(repository, remote, case):
    before = _index(repository)
    _commit_bytes(remote, {".memoryrail/config.json": CONFIGS[case]})
    repo = _sync(repository)
    assert not repo.last_sync_ok
    assert repo.last_error
    assert _index(repo) == before


def _commit_symlink(remote, name: str, target: str) -> None:  # type: ignore[no-untyped-def]
    path = remote.clone("elsewhere")
    git(path, "pull", "--quiet", "--ff-only")
    link = path / name
    if link.exists() or link.is_symlink():
        git(path, "rm", "-r", "--quiet", name)
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    git(path, "add", name)
    git(path, "commit", "--quiet", "-m", "symlink")
    git(path, "push", "--quiet", "origin", "main")


@pytest.fixture
def outside(tmp_path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "20260501-secret.md").write_text(
        memory_text("20260501-secret", title="SECRET OUTSIDE", status="proposed")
    )
    (folder / "config.json").write_text(json.dumps({"version": 1, "review": "agents"}))
    return folder


def test_it_refuses_a_memory_file_that_is_a_symlink(repository, remote, outside):
    _commit_symlink(remote, f"{M}/20260501-secret.md", str(outside / "20260501-secret.md"))
    repo = _sync(repository)
    assert not Memory.objects.filter(title="SECRET OUTSIDE").exists()
    assert _problems(repo).get(f"{M}/20260501-secret.md") == "file-not-regular"


def test_it_refuses_a_memories_folder_that_is_a_symlink(repository, remote, outside):
    path = remote.clone("elsewhere")
    git(path, "rm", "-r", "--quiet", M)
    git(path, "commit", "--quiet", "-m", "drop memories")
    git(path, "push", "--quiet", "origin", "main")
    _commit_symlink(remote, M, str(outside))
    repo = _sync(repository)
    assert not Memory.objects.filter(title="SECRET OUTSIDE").exists()
    assert repo.problems, "a symlinked memories folder must be reported"


def test_it_refuses_a_config_that_is_a_symlink(repository, remote, outside):
    _commit_symlink(remote, ".memoryrail/config.json", str(outside / "config.json"))
    # The target is valid config: reading it would "work". It must not be read at all.
    (outside / "config.json").write_text(json.dumps({"version": 1, "review": "off"}))
    repo = _sync(repository)
    assert not repo.last_sync_ok
    assert "config" in repo.last_error.lower()


def test_it_reads_a_huge_memory_file_with_bounded_memory(repository, remote):
    big = _memory(body="x" * (30 * 1024 * 1024)).encode()
    _commit_bytes(remote, {f"{M}/20260401-bad.md": big})
    del big
    tracemalloc.start()
    try:
        repo = _sync(repository)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"measured: peak={peak}")
    assert _problems(repo).get(f"{M}/20260401-bad.md") == "too-large"
    assert peak < 8 * 1024 * 1024, f"peak Python allocation {peak} bytes for a 30 MB file"


# ----------------------------------------------------------------------------- NUL, surrogates

# A NUL or a lone surrogate anywhere in a memory file: (bytes, code, line). A lone surrogate
# cannot be written as UTF-8: its UTF-8-shaped bytes (b"\xed\xa0\x80") are invalid UTF-8, and
# the YAML escape "\ud800" in a double-quoted scalar decodes into one.
# _memory() puts extra fields on line 2; its own fields end with "---" on line 8.
_BODY_LINE_10 = "line one\nline {} two\n"
NUL_AND_SURROGATE_FILES: dict[str, tuple[bytes, str, int]] = {
    "nul-in-a-value": (_memory('x-note: "a\x00b"\n').encode(), "nul-byte", 2),
    "nul-in-a-key": (_memory("x\x00key: 1\n").encode(), "nul-byte", 2),
    "nul-in-the-body": (_memory(body=_BODY_LINE_10.format("\x00")).encode(), "nul-byte", 10),
    "nul-escape-in-a-value": (_memory('x-note: "a\\0b"\n').encode(), "nul-byte", 2),
    "nul-escape-in-a-key": (_memory('"x\\x00": 1\n').encode(), "nul-byte", 2),
    "nul-escape-nested": (
        _memory('x-deep:\n  list:\n    - {k: "\\u0000"}\n').encode(),
        "nul-byte",
        4,
    ),
    "nul-escape-in-a-multiline-value": (
        _memory('x-note: "first\n  second\n  third \\0"\n').encode(),
        "nul-byte",
        4,
    ),
    "nul-in-a-file-with-cr-line-breaks": (
        _memory(body=_BODY_LINE_10.format("\x00")).replace("\n", "\r").encode(),
        "nul-byte",
        10,
    ),
    "surrogate-bytes-in-a-value": (
        _memory("x-note: 'a{}'\n").encode().replace(b"{}", b"\xed\xa0\x80"),
        "not-utf8",
        2,
    ),
    "surrogate-bytes-in-a-key": (
        _memory("x{}: 1\n").encode().replace(b"{}", b"\xed\xa0\x80"),
        "not-utf8",
        2,
    ),
    "surrogate-bytes-in-the-body": (
        _memory(body=_BODY_LINE_10).encode().replace(b"{}", b"\xed\xa0\x80"),
        "not-utf8",
        10,
    ),
    "surrogate-escape-in-a-value": (_memory('x-note: "\\ud800"\n').encode(), "yaml-syntax", 2),
    "surrogate-escape-in-a-key": (_memory('"k\\udc00": 1\n').encode(), "yaml-syntax", 2),
    "surrogate-escape-nested": (
        _memory('x-deep: [{k: ["ok", "\\U0000d800"]}]\n').encode(),
        "yaml-syntax",
        2,
    ),
    "surrogate-escape-after-a-pair-on-a-later-line": (
        _memory('x-note: "\\ud83d\\ude00 fine\n  then \\ud800 alone"\n').encode(),
        "yaml-syntax",
        3,
    ),
}


@pytest.mark.parametrize("case", sorted(NUL_AND_SURROGATE_FILES))
def test_it_rejects_nul_and_lone_surrogates_with_their_line(
    repository, remote, client, admin_user, token_client, team, capsys, case
):
    data, code, line = NUL_AND_SURROGATE_FILES[case]
    _commit_bytes(remote, {f"{M}/20260401-bad.md": data})
    repo = _sync(repository)
    assert repo.last_sync_ok, repo.last_error
    found = [p for p in repo.problems if p["path"] == f"{M}/20260401-bad.md"]
    assert [(p["code"], p["line"]) for p in found] == [(code, line)], found
    assert not Memory.objects.filter(repository=repo, memory_id="20260401-bad").exists()
    assert Memory.objects.filter(repository=repo, status="proposed").count() == 3
    # visible, never a 500: the repository page, the queue, the API
    client.force_login(admin_user)
    page = client.get(reverse("repository-detail", args=["alpha", repo.pk]))
    assert page.status_code == 200
    assert f"20260401-bad.md:{line}" in page.content.decode()
    assert client.get(reverse("review-queue", args=["alpha"])).status_code == 200
    api = token_client(team, ["reviews:read"])
    body = api.get(f"/api/reviews/repositories/{repo.pk}/").json()
    assert (code, line) in {(p["code"], p["line"]) for p in body["problems"]}
    # and memoryrail_check on the working copy says the same
    with pytest.raises(SystemExit):
        call_command("memoryrail_check", str(repo.working_dir), "--json")
    report = json.loads(capsys.readouterr().out)
    assert (code, f"{M}/20260401-bad.md", line) in {
        (p["code"], p["path"], p["line"]) for p in report["problems"]
    }


def _commit_raw_name(remote, name: bytes, data: bytes) -> None:  # type: ignore[no-untyped-def]
    path = remote.clone("elsewhere")
    git(path, "pull", "--quiet", "--ff-only")
    with open(os.fsencode(path / M) + b"/" + name, "wb") as handle:
        handle.write(data)
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "a file name that is not UTF-8")
    git(path, "push", "--quiet", "origin", "main")


def test_it_lists_a_file_name_that_is_not_utf8_as_a_problem(
    repository, remote, client, admin_user, capsys
):
    # git stores names as bytes; Python reads b"\xff" as the lone surrogate "\udcff", which no
    # JSON column of PostgreSQL accepts: the sync must neither store it nor crash on it.
    _commit_raw_name(remote, b"20260401-\xff.md", _memory().encode())
    repo = _sync(repository)
    assert repo.last_sync_ok, repo.last_error
    assert _problems(repo) == {f"{M}/20260401-\\xff.md": "not-utf8"}
    assert Memory.objects.filter(repository=repo, status="proposed").count() == 3
    client.force_login(admin_user)
    page = client.get(reverse("repository-detail", args=["alpha", repo.pk]))
    assert page.status_code == 200 and "20260401-\\xff.md" in page.content.decode()
    with pytest.raises(SystemExit):
        call_command("memoryrail_check", str(repo.working_dir))  # the text report
    assert "not-utf8" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("config", "code"),
    [
        (b'{"version": 1, "review": "agents", "x-note": "a\\u0000b"}', "config-nul"),
        (b'{"version": 1, "review": "agents",\n "\\ud800": 1}', "config-lone-surrogate"),
        (b'{"version": 1, "review": "agents", "x": ["\\ude00\\ud83d"]}', "config-lone-surrogate"),
    ],
)
def test_it_refuses_a_config_that_writes_a_nul_or_a_lone_surrogate(
    repository, remote, config, code
):
    before = _index(repository)
    _commit_bytes(remote, {".memoryrail/config.json": config})
    repo = _sync(repository)
    assert not repo.last_sync_ok
    assert repo.last_error.startswith(code)
    assert _index(repo) == before


def test_it_reads_a_config_with_an_escaped_pair_and_backslashes(repository, remote):
    config = b'{"version": 1, "review": "agents", "x": "\\ud83d\\ude00 \\\\u0000 \\\\ud800"}'
    _commit_bytes(remote, {".memoryrail/config.json": config})
    repo = _sync(repository)
    assert repo.last_sync_ok, repo.last_error


def test_it_reports_a_link_through_a_symlink_loop_as_stale_not_a_crash(repository, remote):
    path = remote.clone("elsewhere")
    git(path, "pull", "--quiet", "--ff-only")
    os.symlink("loop-b", path / "loop-a")
    os.symlink("loop-a", path / "loop-b")
    (path / M / "20260401-loop.md").write_text(
        memory_text("20260401-loop", status="proposed", links=["loop-a/x"]), encoding="utf-8"
    )
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "a symlink loop")
    git(path, "push", "--quiet", "origin", "main")
    repo = _sync(repository)
    assert repo.last_sync_ok, repo.last_error
    memory = Memory.objects.get(repository=repo, memory_id="20260401-loop")
    assert [(s["code"], s["link"]) for s in memory.stale] == [("stale-link", "loop-a/x")]
