"""When an import refreshes PostgreSQL's statistics of the chunk table."""

from __future__ import annotations

import pytest
from django.db import connection

from bundles.imports.planner import ANALYZE_EVERY, PlannerStats, grown_past_stats


def test_it_analyzes_a_table_that_outgrew_its_stats():
    assert grown_past_stats(live=ANALYZE_EVERY + 1, analyzed=-1)  # never analysed
    assert grown_past_stats(live=300_000, analyzed=200_000)
    assert not grown_past_stats(live=0, analyzed=-1)  # an empty table has nothing to plan
    assert not grown_past_stats(live=ANALYZE_EVERY, analyzed=0)
    # a tenth of a large table, not a fixed count
    assert not grown_past_stats(live=1_000_000, analyzed=950_000)
    assert grown_past_stats(live=1_000_000, analyzed=890_000)


def test_it_does_not_analyze_again_what_it_has_just_analyzed(db):
    """Our ANALYZE names two columns, which leaves n_mod_since_analyze as it was: the check
    reads the row count the stats were taken at instead."""
    if connection.vendor != "postgresql":
        pytest.skip("the planner's statistics are PostgreSQL's")
    planner = PlannerStats()
    planner.analyze()
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.reltuples FROM pg_class c WHERE c.oid = 'bundles_chunk'::regclass")
        assert cursor.fetchone()[0] >= 0  # the column-list ANALYZE recorded its row count
    calls = []
    planner.analyze = lambda: calls.append(1)  # type: ignore[method-assign]
    planner.analyze_if_stale()
    assert calls == []
