"""Import a bundle (§3.8): validate record by record, insert in batches, one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from bundles.embeddings.queueing import brain_embed_queue
from bundles.embeddings.similar import (
    describe_near_duplicates,
    import_near_duplicates,
    imported_since,
)
from bundles.imports.chunks import ChunkWriter
from bundles.imports.context import ImportContext, ImportOptions, Progress, SectionReader
from bundles.imports.planner import PlannerStats
from bundles.imports.proposals import ImportProposals
from bundles.imports.report import ImportReport, _audit_import, _import_event
from bundles.imports.sections import EdgeWriter, EntityWriter, KeyedWriter
from bundles.mirrored import PROVENANCE_KEY
from bundles.models import BrainSettings, Chunk, ImportRun
from bundles.selectors import served_chunks
from formats import memoryai as protocol
from formats.memoryai import SECTIONS
from memoryadmin.audit import Actor
from memoryadmin.models import Team


class Importer:
    """One import run inside one transaction: the sections' writers over one context."""

    def __init__(
        self,
        *,
        team: Team,
        envelope: protocol.Envelope,
        options: ImportOptions,
        progress: Progress | None,
        actor: Actor | None = None,
    ) -> None:
        manifest = envelope.manifest
        settings, _ = BrainSettings.objects.select_for_update().get_or_create(team=team)
        actor = actor or Actor.system()
        run = ImportRun.objects.create(team=team, job_id=options.job_id, actor_label=actor.label)
        self.envelope = envelope
        self.ctx = ImportContext(
            team=team,
            actor=actor,
            now=timezone.now(),
            manifest=manifest,
            options=options,
            report=ImportReport(envelope.format, envelope.version),
            settings=settings,
            progress=progress,
            total=sum(manifest.counts.get(name, 0) for name in SECTIONS),
            run_id=run.pk,
        )
        # Chunks above this id are this import's (the near-duplicate hint compares them).
        self.chunk_id_floor = Chunk.objects.aggregate(top=Max("id"))["top"] or 0
        self.planner = PlannerStats()
        self.proposals = ImportProposals(self.ctx)
        self.chunks = ChunkWriter(self.ctx, self.planner, self.proposals)
        self.edges = EdgeWriter(self.ctx)
        self.entities = EntityWriter(self.ctx)
        self.keyed = KeyedWriter(self.ctx)
        if progress is not None:
            progress(0, self.ctx.total)
        self.planner.analyze_if_stale()

    # -- driving -----------------------------------------------------------------------------

    def run(self, read_section: SectionReader, head: dict[str, Any]) -> dict[str, Any]:
        checksum = protocol.StreamingChecksum(head, self.envelope.sections)
        for section in SECTIONS:
            if self.envelope.sections.get(section) != "array":
                continue
            self.ctx.report.section = section
            sink = partial(checksum.feed_encoded, section)
            items = self.ctx.feed(section, read_section(section), sink)
            self.write_section(section, items)
        return self.finish(checksum)

    def write_section(self, section: str, items: Iterator[tuple[int, Any, bytes]]) -> None:
        """Chunks take (index, record, canonical bytes); the other sections (index, record)."""
        if section == "chunks":
            self.chunks.write(items)
            return
        records = ((index, raw) for index, raw, _ in items)
        if section == "memory_edges":
            self.edges.write(records)
        elif section == "entities":
            self.entities.write(records)
        else:
            self.keyed.write(section, records)

    # -- wrap-up -----------------------------------------------------------------------------

    def finish(self, checksum: protocol.StreamingChecksum) -> dict[str, Any]:
        report = self.ctx.report
        report.section = None
        self.ctx.chunk_ids.close()  # every edge is in
        self.chunks.link_run()
        self.planner.analyze_at_end()
        self._finish_checksum(checksum)
        self._finish_embeddings()
        brain_embed_queue(team_id=self.ctx.team.pk)  # dropped or absent vectors, after commit
        self._finish_near_duplicates()
        if self.chunks.claimed_provenance:
            report.warn(
                f"{self.chunks.claimed_provenance} chunks carried metadata.{PROVENANCE_KEY}; "
                f"kept as metadata.{PROVENANCE_KEY}_claimed (only this server writes provenance)"
            )
        proposals = self.proposals.propose()
        result = report.as_dict()
        if proposals is not None:
            result["report"]["proposals"] = proposals
        return result

    def _finish_near_duplicates(self) -> None:
        """Imported chunks that came with our model's vectors and nearly duplicate served
        ones (the rest are compared when the worker has embedded them: brain.embed). A run
        that inserted no chunk has none to compare (a re-import: no look-up of the ids above
        the floor, which scanned the team's chunks)."""
        if not self.ctx.report.counts["chunks"]["inserted"]:
            return
        team, floor = self.ctx.team, self.chunk_id_floor
        pairs = import_near_duplicates(
            team,
            imported_since(team, floor),
            against=served_chunks(team).filter(pk__lte=floor),
        )
        for line in describe_near_duplicates(pairs):
            self.ctx.report.warn(line)

    def _finish_checksum(self, checksum: protocol.StreamingChecksum) -> None:
        utf8, ascii_form = checksum.hexdigests()
        declared = self.ctx.manifest.checksum
        if declared is None:
            self.ctx.report.warn("the bundle carries no manifest.checksum; nothing was verified")
        elif declared not in (utf8, ascii_form):
            self.ctx.report.warn(
                f"checksum mismatch: manifest says {declared}, content hashes to {utf8}; "
                "imported anyway (the protocol says warn, not reject)"
            )

    def _finish_embeddings(self) -> None:
        manifest, settings, report = self.ctx.manifest, self.ctx.settings, self.ctx.report
        embeddings = self.chunks.embeddings
        bundle_model = f"'{manifest.embedding_model}' (dim {manifest.embedding_dim})"
        team_model = (
            f"'{settings.embedding_model}' (dim {settings.embedding_dim})"
            if settings.is_set
            else "none set"
        )
        if embeddings["dropped_option"]:
            report.warn(
                f"dropped {embeddings['dropped_option']} embeddings because "
                f"keep_embeddings=false (bundle model {bundle_model}, team model {team_model})"
            )
        if embeddings["dropped_model"]:
            report.warn(
                f"dropped {embeddings['dropped_model']} embeddings: bundle model "
                f"{bundle_model} differs from team model {team_model}; send "
                "accept_foreign_embeddings=true to keep them"
            )
        if embeddings["foreign_kept"]:
            report.warn(
                f"kept {embeddings['foreign_kept']} embeddings from bundle model "
                f"{bundle_model} although the team model is {team_model} "
                "(accept_foreign_embeddings=true)"
            )
        if self.chunks.adopted:
            report.warn(f"this team had no embedding model; adopted {team_model}")
        report.embedding_model_match = (settings.embedding_model, settings.embedding_dim) == (
            manifest.embedding_model,
            manifest.embedding_dim,
        )


def _head_of(bundle: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in bundle.items() if k not in SECTIONS}


@transaction.atomic
def bundle_import(
    *,
    team: Team,
    actor: Actor,
    bundle: Any,
    options: ImportOptions | None = None,
    size: int | None = None,
) -> dict[str, Any]:
    """Import an in-memory bundle. Raises BundleError for an invalid envelope (nothing saved)."""
    envelope = protocol.validate_envelope(bundle)
    importer = Importer(
        team=team,
        envelope=envelope,
        options=options or ImportOptions(),
        progress=None,
        actor=actor,
    )
    result = importer.run(lambda section: protocol.iter_records(bundle, section), _head_of(bundle))
    _audit_import(team=team, actor=actor, result=result, source="json", size=size)
    _import_event(team=team, job_id=None, result=result)
    return result
