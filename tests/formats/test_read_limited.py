"""memoryrail's read_limited asks for the file's size + 1 and still returns at most limit + 1
bytes: enough to tell a file is too large."""

from __future__ import annotations

import pytest

from formats.memoryrail.config import read_limited


@pytest.mark.parametrize(
    ("size", "limit", "expected"),
    [(0, 100, 0), (50, 100, 50), (100, 100, 100), (101, 100, 101), (300_000, 100, 101)],
)
def test_it_reads_whole_files_and_one_byte_past_the_limit(tmp_path, size, limit, expected):
    path = tmp_path / "m.md"
    data = (b"0123456789" * (size // 10 + 1))[:size]
    path.write_bytes(data)
    assert read_limited(path, limit) == data[:expected]
