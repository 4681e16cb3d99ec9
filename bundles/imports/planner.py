"""PostgreSQL's planner statistics while an import grows the chunk table."""

from __future__ import annotations

from django.db import connection

from bundles.models import Chunk

ANALYZE_EVERY = 20_000  # PostgreSQL: chunks inserted before the planner needs fresh stats


def grown_past_stats(*, live: int, analyzed: float) -> bool:
    """Whether a table of `live` rows has outgrown the stats taken at `analyzed` rows (-1:
    never analysed): by more than ANALYZE_EVERY rows and a tenth of its size."""
    grown = live - max(analyzed, 0)
    return grown > max(ANALYZE_EVERY, live // 10)


class PlannerStats:
    """When to ANALYZE the chunk table during one import (nothing to do on SQLite)."""

    def __init__(self) -> None:
        self.inserted_since_analyze = 0
        self.analyze_at = ANALYZE_EVERY

    def analyze_if_stale(self) -> None:
        """PostgreSQL plans the hash look-ups as table scans until the chunk table has been
        analysed (no stats: each IN value is assumed to match 0.5% of rows). A 100k import
        is 5x slower without this; ANALYZE counts this transaction's own new rows.

        Stale means grown since the last ANALYZE (`pg_class.reltuples`, which our column-list
        ANALYZE updates), not `n_mod_since_analyze`: PostgreSQL resets that counter only
        after an ANALYZE of every column, so after our own it stayed high and every later
        import, a re-import of 20k chunks too, began with an ANALYZE (0.8 s, loaded)."""
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT s.n_live_tup, c.reltuples FROM pg_stat_user_tables s "
                "JOIN pg_class c ON c.oid = s.relid WHERE s.relid = %s::regclass",
                [Chunk._meta.db_table],
            )
            row = cursor.fetchone()
        if row is not None and grown_past_stats(live=row[0], analyzed=row[1]):
            self.analyze()

    def analyze(self) -> None:
        """Stats for the look-up's columns only: a whole-table ANALYZE also samples the
        embeddings and JSON columns and took 3x as long (0.37 s against 0.13 s at 100k)."""
        self.inserted_since_analyze = 0
        if connection.vendor != "postgresql":
            return
        table = connection.ops.quote_name(Chunk._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {table} (team_id, content_hash)")

    def analyze_while_growing(self, inserted: int) -> None:
        self.inserted_since_analyze += inserted

    def analyze_before_look_up(self) -> None:
        """Only a look-up needs the stats: an import into an empty team makes none (unless
        its bundle repeats content), so it analyses once, at the end, for the next import."""
        if self.inserted_since_analyze >= self.analyze_at:
            self.analyze_at *= 2  # stats of a table this size stay good while it doubles
            self.analyze()

    def analyze_at_end(self) -> None:
        if self.inserted_since_analyze >= ANALYZE_EVERY:
            self.analyze()
