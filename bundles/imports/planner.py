"""PostgreSQL's planner statistics while an import grows the chunk table."""

from __future__ import annotations

from django.db import connection

from bundles.models import Chunk

ANALYZE_EVERY = 20_000  # PostgreSQL: chunks inserted before the planner needs fresh stats


class PlannerStats:
    """When to ANALYZE the chunk table during one import (nothing to do on SQLite)."""

    def __init__(self) -> None:
        self.inserted_since_analyze = 0
        self.analyze_at = ANALYZE_EVERY

    def analyze_if_stale(self) -> None:
        """PostgreSQL plans the hash look-ups as table scans until the chunk table has been
        analysed (no stats: each IN value is assumed to match 0.5% of rows). A 100k import
        is 5x slower without this; ANALYZE counts this transaction's own new rows."""
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT n_mod_since_analyze, n_live_tup FROM pg_stat_user_tables "
                "WHERE relid = %s::regclass",
                [Chunk._meta.db_table],
            )
            row = cursor.fetchone()
        if row is not None and row[0] > max(ANALYZE_EVERY, row[1] // 10):
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
