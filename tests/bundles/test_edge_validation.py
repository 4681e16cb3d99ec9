"""An edge in its plain form takes the short check; every edge gets the answer (record or
error code, message and path) the field-by-field check gives."""

from __future__ import annotations

import itertools

from formats.memoryai import BundleError, validate_edge
from formats.memoryai.fields import MAX_INT
from formats.memoryai.records import _validate_edge_fields

ENDS = [1, -MAX_INT, MAX_INT, MAX_INT + 1, -MAX_INT - 1, True, 1.0, "1", None]
TYPES = ["co_activation", "", "x" * 64, "x" * 65, "a\x00b", "é", "\ud800", 7, None]
WEIGHTS = [0.5, 0, 3, 1e12, -1e12, 1e12 + 1, 10**13, float("nan"), float("inf"), True, "1", None]
COUNTS = [0, 5, -1, MAX_INT, MAX_INT + 1, 2.0, False, None]
TIMES = ["2026-01-02T03:04:05Z", "2026-01-02", "not a time", 5, None]


def _answer(check, value):
    try:
        return check(value, path="memory_edges[3]")
    except BundleError as exc:
        return ("error", exc.code, str(exc))


def _edges():
    yield from (None, [], "edge", {})
    for a, b in itertools.product(ENDS, repeat=2):
        yield {"chunk_a": a, "chunk_b": b, "edge_type": "x", "weight": 0.1}
    for edge_type, weight, count in itertools.product(TYPES, WEIGHTS, COUNTS):
        yield {"chunk_a": 1, "chunk_b": 2, "edge_type": edge_type, "weight": weight,
               "co_activation_count": count}  # fmt: skip
    for created, updated in itertools.product(TIMES, repeat=2):
        yield {"chunk_a": 1, "chunk_b": 2, "edge_type": "x", "weight": 1.0,
               "co_activation_count": 1, "created_at": created, "updated_at": updated}  # fmt: skip


def test_the_short_check_answers_as_the_full_one():
    def full(value, path):
        return _validate_edge_fields(value, path)

    edges = list(_edges())
    differ = [e for e in edges if _answer(validate_edge, e) != _answer(full, e)]
    assert differ == []
    assert len(edges) > 900


def test_a_plain_edge_reads_as_before():
    record = validate_edge(
        {"chunk_a": 1, "chunk_b": 2, "edge_type": "x", "weight": 1, "co_activation_count": 3}
    )
    assert (record.weight, type(record.weight), record.co_activation_count) == (1.0, float, 3)
    assert record.created_at is None and record.updated_at is None
