"""A record in a folder already checked is opened at once (`_read_direct`): every answer it
gives, a body or a rejection, is the one the checked way (lstat, resolve, open) gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from formats import openmemories as om
from sources.fetchers import FetchPolicy
from sources.fetchers.local import LocalFetcher


def _answer(call):  # type: ignore[no-untyped-def]
    try:
        return ("body", call())
    except om.Rejection as exc:
        return ("rejected", exc.code, exc.message, exc.path)
    except ValueError as exc:  # a NUL in the path (the manifest's checks refuse it first)
        return ("error", str(exc))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "source"
    (root / "records" / "deep").mkdir(parents=True)
    (root / "records" / "plain.md").write_bytes(b"plain")
    (root / "records" / "deep" / "d.md").write_bytes(b"deep")
    (root / "records" / "big.md").write_bytes(b"x" * 2000)
    (root / "records" / "folder.md").mkdir()
    os.mkfifo(root / "records" / "fifo.md")
    (tmp_path / "outside.md").write_bytes(b"secret")
    (root / "records" / "inside-link.md").symlink_to(root / "records" / "plain.md")
    (root / "records" / "outside-link.md").symlink_to(tmp_path / "outside.md")
    (root / "records" / "dangling.md").symlink_to(root / "records" / "nothing.md")
    (root / "records" / "loop.md").symlink_to(root / "records" / "loop.md")
    (root / "linked").symlink_to(root / "records")
    return root


CASES = [
    "records/plain.md",
    "records/deep/d.md",
    "records/big.md",
    "records/folder.md",
    "records/fifo.md",
    "records/missing.md",
    "records/inside-link.md",
    "records/outside-link.md",
    "records/dangling.md",
    "records/loop.md",
    "records/deep/../plain.md",
    "records/./plain.md",
    "linked/plain.md",
    "records/",
    "records/..",
    "records/nul\x00.md",
]


@pytest.mark.parametrize("path", CASES)
def test_the_direct_read_answers_as_the_checked_way(tree: Path, path: str) -> None:
    policy = FetchPolicy(max_response_bytes=1000)
    checked = LocalFetcher(str(tree), policy=policy)
    expected = _answer(lambda: checked._read(checked._inside(path), 1000, path))
    direct = LocalFetcher(str(tree), policy=policy)
    for warm in ("records/plain.md", "records/deep/d.md", "linked/plain.md"):
        direct.get_record(warm, None)  # their folders are checked: the direct way is open
    assert _answer(lambda: direct.get_record(path, None).body) == expected
    hashed = _answer(lambda: direct.raw_hash(path))
    if expected[0] == "body":
        assert hashed == ("body", om.content_hash(expected[1]))
    else:
        assert hashed == expected
