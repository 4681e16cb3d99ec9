"""What every stage of one import shares: the options, the run's context, how records arrive."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bundles.imports.idmap import ChunkIdMap
from bundles.imports.report import ImportReport
from bundles.models import BrainSettings
from formats import memoryai as protocol
from formats.memoryai import BundleError
from memoryadmin.audit import Actor
from memoryadmin.models import Team

BATCH = 1000
PROGRESS_EVERY = 2000

SectionReader = Callable[[str], Iterator[Any]]
Progress = Callable[[int, int], None]  # (records done, records declared)


@dataclass(frozen=True)
class ImportOptions:
    keep_embeddings: bool = True
    accept_foreign_embeddings: bool = False
    propose_to: int | None = None  # repository id: DNA chunks become proposals there
    job_id: int | None = None  # the background job running this import (its ImportRun's job)


@dataclass
class ImportContext:
    """One import run inside one transaction. Keeps only the producer-id → local-id map
    (in a temporary table past `idmap.SPILL_AFTER` chunks)."""

    team: Team
    actor: Actor
    now: datetime
    manifest: protocol.Manifest
    options: ImportOptions
    report: ImportReport
    settings: BrainSettings  # the team's brain settings, locked for the run
    run_id: int | None = None  # this import's ImportRun (what an undo takes back)
    progress: Progress | None = None
    chunk_ids: ChunkIdMap = field(default_factory=ChunkIdMap)
    done: int = 0
    total: int = 0

    def feed(
        self, section: str, records: Iterator[Any], sink: Callable[[bytes], Any]
    ) -> Iterator[tuple[int, Any, bytes]]:
        """(index, record, canonical bytes) per record; the bytes also go to `sink` (the
        checksum, or a spool hashed at the end), and progress is published as they pass."""
        encode = protocol.encode_record
        for index, raw in enumerate(records):
            try:
                data = encode(raw)[1]
                sink(data)
            except BundleError as exc:
                raise BundleError(exc.code, exc.message, f"{section}[{index}]") from exc
            self.done += 1
            if self.progress is not None and self.done % PROGRESS_EVERY == 0:
                self.progress(self.done, self.total)
            yield index, raw, data

    def validate(
        self, section: str, index: int, raw: Any, *, known: str | None = None, held: bool = False
    ) -> Any | None:
        try:
            if section == "chunks":
                return protocol.validate_chunk(
                    raw,
                    embedding_dim=self.manifest.embedding_dim,
                    path=f"chunks[{index}]",
                    decode_embedding=not held,
                    known_hash=known,
                )
            return protocol.validate_record(
                section,
                raw,
                embedding_dim=self.manifest.embedding_dim,
                path=f"{section}[{index}]",
            )
        except BundleError as exc:
            self.report.warn(f"skipped invalid record {exc}")
            return None
