"""`for_batches` walks ids in bounded slices: every id once, in order, no slice over the size."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryadmin.batching import LOOKUP_BATCH, for_batches


@given(ids=st.lists(st.integers()), size=st.integers(min_value=1, max_value=50))
def test_it_yields_every_id_once_in_order_in_slices_no_larger_than_the_size(ids, size):
    batches = list(for_batches(ids, size))
    assert [item for batch in batches for item in batch] == ids
    assert all(1 <= len(batch) <= size for batch in batches)
    assert all(len(batch) == size for batch in batches[:-1])


def test_it_reads_a_generator_once_and_yields_nothing_for_nothing():
    assert list(for_batches((n for n in range(5)), 2)) == [[0, 1], [2, 3], [4]]
    assert list(for_batches([], 3)) == []


def test_it_uses_the_projects_lookup_size_by_default():
    assert [len(batch) for batch in for_batches(range(LOOKUP_BATCH + 1))] == [LOOKUP_BATCH, 1]


@pytest.mark.parametrize("size", [0, -1])
def test_it_refuses_a_size_that_would_never_finish(size):
    with pytest.raises(ValueError, match="at least 1"):
        list(for_batches([1, 2], size))
