"""The producer-id → local-id map of one import's chunks, which its edges are resolved by.

One entry per chunk of the bundle: a dict of 1M entries held ~117 MB at the 1M-chunk import
(the one part of an import's memory that grew with the bundle). Past SPILL_AFTER entries the
map moves to a temporary table of this connection and the edges look their ends up a batch
at a time, so the import's memory stays flat at any size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db import connection

SPILL_AFTER = 50_000  # entries held in memory (~5 MB) before the map moves to a table
TABLE = "import_chunk_ids"
_LOOK_UP = 1000  # ids per look-up statement (SQLite's variables)


class ChunkIdMap:
    """bundle chunk id -> chunk id; the last chunk given an id wins (as a dict's update)."""

    def __init__(self, spill_after: int | None = None) -> None:
        self.spill_after = SPILL_AFTER if spill_after is None else spill_after
        self.held: dict[int, int] = {}
        self.spilled = False

    def __len__(self) -> int:
        if not self.spilled:
            return len(self.held)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {TABLE}")  # noqa: S608
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
            for start in range(0, len(wanted), _LOOK_UP):
                part = wanted[start : start + _LOOK_UP]
                if connection.vendor == "postgresql":
                    where, params = "bundle_id = ANY(%s::bigint[])", [part]
                else:
                    where, params = f"bundle_id IN ({', '.join(['%s'] * len(part))})", part
                cursor.execute(f"SELECT bundle_id, chunk_id FROM {TABLE} WHERE {where}", params)  # noqa: S608
                found.update(cursor.fetchall())
        return found

    def get(self, bundle_id: int) -> int | None:
        return self.look_up([bundle_id]).get(bundle_id)

    def close(self) -> None:
        """Drop the table (PostgreSQL drops it at commit anyway; SQLite keeps it otherwise)."""
        if self.spilled:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
        self.held, self.spilled = {}, False

    def _create(self) -> None:
        on_commit = " ON COMMIT DROP" if connection.vendor == "postgresql" else ""
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {TABLE} "
                f"(bundle_id bigint PRIMARY KEY, chunk_id bigint NOT NULL){on_commit}"
            )
            cursor.execute(f"DELETE FROM {TABLE}")  # noqa: S608 - a run before in this session

    def _store(self, pairs: Mapping[int, int]) -> None:
        upsert = "ON CONFLICT (bundle_id) DO UPDATE SET chunk_id = excluded.chunk_id"
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"INSERT INTO {TABLE} (bundle_id, chunk_id) "  # noqa: S608
                    f"SELECT * FROM unnest(%s::bigint[], %s::bigint[]) {upsert}",
                    [list(pairs.keys()), list(pairs.values())],
                )
                return
            cursor.executemany(
                f"INSERT INTO {TABLE} (bundle_id, chunk_id) VALUES (%s, %s) {upsert}",  # noqa: S608
                list(pairs.items()),
            )
