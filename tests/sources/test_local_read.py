"""The local fetcher reads a record with one read of its size + 1, and still judges the size
limit exactly when the file is at, over, or grows past it."""

from __future__ import annotations

import os

import pytest

from formats import openmemories as om
from sources.fetchers import FetchPolicy
from sources.fetchers.local import LocalFetcher, _read_upto


def fetcher(root, limit: int) -> LocalFetcher:
    return LocalFetcher(str(root), policy=FetchPolicy(max_response_bytes=limit))


@pytest.mark.parametrize("size", [0, 1, 999, 1000])
def test_it_reads_a_file_up_to_the_limit_whole(tmp_path, size):
    data = bytes(range(256)) * 4
    (tmp_path / "r.md").write_bytes(data[:size])
    assert fetcher(tmp_path, 1000).get_record("r.md", None).body == data[:size]


@pytest.mark.parametrize("size", [1001, 5000, 200_000])
def test_it_refuses_a_file_over_the_limit(tmp_path, size):
    (tmp_path / "r.md").write_bytes(b"x" * size)
    with pytest.raises(om.Rejection) as caught:
        fetcher(tmp_path, 1000).get_record("r.md", None)
    assert caught.value.code == "too-large"


def test_a_file_longer_than_its_first_read_is_read_on_to_the_limit(tmp_path):
    # as when the file grew between its fstat and the read: asked for 10 bytes first
    path = tmp_path / "grown"
    path.write_bytes(b"a" * 150_000)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        assert _read_upto(descriptor, 10, 100_001) == b"a" * 100_001
    finally:
        os.close(descriptor)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        assert _read_upto(descriptor, 10, 200_001) == b"a" * 150_000
    finally:
        os.close(descriptor)


def test_a_fifo_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "r.md")
    with pytest.raises(om.Rejection) as caught:
        fetcher(tmp_path, 1000).get_record("r.md", None)
    assert caught.value.code == "not-found"
