"""`for_batches`: walk a long list of ids (or hashes, keys) in bounded slices, so an `__in`
lookup or a bulk update never grows with the input."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")

# The size the project's `__in` lookups use: far under SQLite's and PostgreSQL's parameter limits.
LOOKUP_BATCH = 500


def for_batches(ids: Iterable[T], size: int = LOOKUP_BATCH) -> Iterator[list[T]]:
    """`ids` in order, as consecutive lists of `size` (the last may be shorter, none is empty).

    Takes any iterable, a generator or a queryset's `values_list` included, and reads it once.
    """
    if size < 1:
        raise ValueError(f"batch size must be at least 1, not {size}")
    items = iter(ids)
    while batch := list(islice(items, size)):
        yield batch
