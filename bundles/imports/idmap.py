"""The producer-id → local-id map of one import's chunks, which its edges are resolved by.

One entry per chunk of the bundle: a dict of 1M entries held ~117 MB at the 1M-chunk import
(the one part of an import's memory that grew with the bundle). Past SPILL_AFTER entries the
map moves to a temporary table of this connection and the edges look their ends up a batch
at a time, so the import's memory stays flat at any size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db import connection

from memoryadmin.batching import for_batches

SPILL_AFTER = 50_000  # entries held in memory (~5 MB) before the map moves to a table
TABLE = "import_chunk_ids"
_LOOK_UP = 1000  # ids per look-up statement (SQLite's variables)


class ChunkIdMap:
    """bundle chunk id -> chunk id; the last chunk given an id wins (as a dict's update).

    Spilled, the pairs are `COPY`-ed with a running number into a table without an index
    (an upsert per batch into an indexed table cost a 100k import 0.7 s); the first look-up
    indexes it once, and each look-up takes the last pair of an id."""

    def __init__(self, spill_after: int | None = None) -> None:
        self.spill_after = SPILL_AFTER if spill_after is None else spill_after
        self.held: dict[int, int] = {}
        self.spilled = False
        self.stored = 0  # pairs in the table (their running number)
        self.indexed = False

    def __len__(self) -> int:
        if not self.spilled:
            return len(self.held)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(DISTINCT bundle_id) FROM {TABLE}")  # noqa: S608
            return int(cursor.fetchone()[0])

    def update(self, pairs: Mapping[int, int]) -> None:
        if not pairs:
            return
        if self.spilled:
            self._store(pairs)
            return
        self.held.update(pairs)
        if len(self.held) > self.spill_after:
            self._create()
            self._store(self.held)
            self.held = {}
            self.spilled = True

    def look_up(self, ids: Iterable[int]) -> dict[int, int]:
        """The entries of `ids` that the map holds."""
        if not self.spilled:
            held = self.held
            return {i: held[i] for i in ids if i in held}
        wanted = list(set(ids))
        found: dict[int, int] = {}
        with connection.cursor() as cursor:
            if not self.indexed:
                cursor.execute(f"CREATE INDEX {TABLE}_bundle ON {TABLE} (bundle_id, seq)")
                self.indexed = True
            # PostgreSQL: one array, one statement; SQLite: its variables, _LOOK_UP at a time
            size = max(len(wanted), 1) if connection.vendor == "postgresql" else _LOOK_UP
            for part in for_batches(wanted, size):
                if connection.vendor == "postgresql":
                    where, params = "bundle_id = ANY(%s::bigint[])", [part]
                else:
                    where, params = f"bundle_id IN ({', '.join(['%s'] * len(part))})", part
                cursor.execute(
                    f"SELECT bundle_id, chunk_id FROM {TABLE} WHERE {where} "  # noqa: S608
                    "ORDER BY bundle_id, seq",
                    params,
                )
                found.update(cursor.fetchall())  # in running order: the last pair wins
        return found

    def get(self, bundle_id: int) -> int | None:
        return self.look_up([bundle_id]).get(bundle_id)

    def close(self) -> None:
        """Drop the table (PostgreSQL drops it at commit anyway; SQLite keeps it otherwise)."""
        if self.spilled:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
        self.held, self.spilled, self.stored, self.indexed = {}, False, 0, False

    def _create(self) -> None:
        on_commit = " ON COMMIT DROP" if connection.vendor == "postgresql" else ""
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")  # a run before in this session
            cursor.execute(
                f"CREATE TEMP TABLE {TABLE} "
                f"(bundle_id bigint NOT NULL, chunk_id bigint NOT NULL, seq bigint NOT NULL)"
                f"{on_commit}"
            )

    def _store(self, pairs: Mapping[int, int]) -> None:
        first, self.stored = self.stored, self.stored + len(pairs)
        rows = ((b, c, first + n) for n, (b, c) in enumerate(pairs.items()))
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                columns = "(bundle_id, chunk_id, seq)"
                with cursor.cursor.copy(f"COPY {TABLE} {columns} FROM STDIN") as copy:
                    # COPY's text form written at once: integers need no escaping, and
                    # write_row per pair was most of a 100k import's spill
                    copy.write("".join([f"{b}\t{c}\t{n}\n" for b, c, n in rows]))
                return
            cursor.executemany(
                f"INSERT INTO {TABLE} (bundle_id, chunk_id, seq) VALUES (%s, %s, %s)",  # noqa: S608
                list(rows),
            )
