"""GET /v1/spec: the protocol as this server implements it, in our own words (JSON)."""

from __future__ import annotations

from typing import Any

from bundles import mirrored
from formats import crosswalk
from formats import memoryai as protocol


def server_spec(*, max_bytes: int, sync_max_bytes: int) -> dict[str, Any]:
    return {
        "protocol": "MemoryAI Protocol",
        "protocol_version": protocol.MAX_VERSION,
        "implementation": protocol.GENERATOR,
        "claims": "MemoryAI-Protocol-compatible, Level 3 (bidirectional)",
        "format": {
            "format": protocol.FORMAT,
            "versions_read": list(range(1, protocol.MAX_VERSION + 1)),
            "sections": list(protocol.SECTIONS),
            "scopes": list(protocol.SCOPES),
            "memory_types": list(protocol.CORE_TYPES),
            "vendor_types": "any memory_type matching ^x_[a-z0-9_]{1,60}$",
            "dna": {
                "memory_types": sorted(protocol.DNA_TYPES),
                "zones": sorted(protocol.DNA_ZONES),
                "is_pinned": True,
                "rule": "any one condition makes a chunk DNA; DNA is never decayed, expired "
                "or deleted by an automatic process, and stays DNA once it is",
            },
            "zones": list(protocol.ZONES),
            "tiers": list(protocol.TIERS),
            "natural_keys": {
                "chunks": "content_hash (SHA-256 hex of the UTF-8 content as given)",
                "memory_edges": "(source chunk, target chunk, edge_type), ends mapped by "
                "content hash of the bundle's chunks",
                "entities": "name",
                "l2_sessions": "SHA-256 of the canonical record without 'id'; inserted once",
                "mood_states": "'key', else 'name', else record hash; upserted",
                "agents": "'name', else 'id'; upserted",
            },
        },
        "brain": {
            "what_is_served": "chunks that are not deleted and either were imported/entered or "
            "mirror an approved source record (approved, not denied, active, unexpired) or an "
            "active repository memory; exports and counts use only served chunks",
            "content": "title, a blank line, body (both trimmed); content_hash follows",
            "type_mapping": {
                "openmemories": {
                    kind: {"memory_type": t, "tags": list(tags)}
                    for kind, (t, tags) in crosswalk.SOURCE_TYPES.items()
                },
                "memoryrail": {
                    kind: {"memory_type": t, "zone": zone, "tags": list(tags)}
                    for kind, (t, zone, tags) in crosswalk.MEMORY_TYPES.items()
                },
                "pinned": "MemoryRail pinned: true -> is_pinned true",
            },
            "provenance": {
                "where": f"chunk metadata.{mirrored.PROVENANCE_KEY}, written by this server only "
                f"(an imported metadata.{mirrored.PROVENANCE_KEY} is kept as "
                f"metadata.{mirrored.PROVENANCE_KEY}_claimed)",
                "source": [
                    "origin",
                    "ref",
                    "source_id",
                    "source",
                    "source_name",
                    "record_id",
                    "retrieved_at",
                    "stale",
                ],
                "repository": [
                    "origin",
                    "ref",
                    "repository_id",
                    "repository",
                    "memory_id",
                    "memory_ref",
                    "commit",
                    "approved_by",
                    "approval",
                ],
            },
            "propose_to": "POST /v1/brain/import?propose_to=<repository id>: DNA chunks not "
            "already in the repository become MemoryRail proposals (status proposed; decision, "
            "x_constraint->constraint, pitfall->gotcha or attempt (tag attempt), goal->thread, "
            "episodic->session, anything else->constraint tagged with its type); secret-scanned "
            "first, a finding is reported by rule name and not written; at most 200 per import. "
            "A text the repository holds, has waiting or approved before is skipped "
            "(report.proposals.skipped_existing); a text a reviewer rejected there is not "
            "proposed again (skipped_rejected, with a warning naming the decision) until a "
            "reviewer allows it (POST /api/reviews/decisions/{id}/allow-reproposal/)",
            "report_proposals": [
                "repository",
                "candidates",
                "proposed",
                "skipped_existing",
                "skipped_rejected",
                "skipped_secret",
                "skipped_invalid",
                "skipped_limit",
                "proposal",
            ],
        },
        "checksum": {
            "algorithm": "sha256 hex",
            "covers": "the bundle without manifest.checksum",
            "serialisation": "JSON, keys sorted, separators ',' and ':', non-ASCII written as "
            "UTF-8 (not \\u escapes), numbers as Python's json module writes them "
            "(1.0 -> 1.0, 1e-7 -> 1e-07), timestamps as the strings given",
            "on_import": "verified; the ASCII-escaped form is also accepted; a mismatch is a "
            "warning, never a rejection",
        },
        "embeddings": {
            "encoding": "base64 (strict) of little-endian float32; decoded length must be "
            "manifest.embedding_dim x 4 bytes, else the chunk is skipped as invalid",
            "model_rules": "kept when the bundle's model and dimension equal the team's; a team "
            "without a model adopts the first bundle's; keep_embeddings=false drops all; a "
            "different model is kept only with accept_foreign_embeddings=true; every drop is "
            "a warning naming both models",
            "export": "only embeddings of the team's model are exported, others as null",
        },
        "endpoints": [
            {
                "method": "POST",
                "path": "/v1/brain/export",
                "scope": "bundles:export",
                "body": {"scope": "full | dna_only | since", "since": "ISO-8601 (for since)"},
                "returns": "application/json bundle",
            },
            {
                "method": "POST",
                "path": "/v1/brain/export/stream",
                "scope": "bundles:export",
                "body": "as /v1/brain/export",
                "returns": "application/x-ndjson, see ndjson",
            },
            {
                "method": "POST",
                "path": "/v1/brain/import",
                "scope": "bundles:import",
                "body": "application/json bundle",
                "query": {
                    "keep_embeddings": "true (default) | false",
                    "accept_foreign_embeddings": "false (default) | true",
                },
                "returns": "200 ImportReport, or 202 {job} when larger than the sync limit",
            },
            {
                "method": "POST",
                "path": "/v1/brain/import/file",
                "scope": "bundles:import",
                "body": "multipart/form-data with the bundle in field 'file'",
                "query": "as /v1/brain/import",
                "returns": "as /v1/brain/import",
            },
            {
                "method": "GET",
                "path": "/v1/brain/import/jobs/{id}",
                "scope": "bundles:import",
                "returns": "{id, state: queued|running|succeeded|failed, progress: "
                "{records_done, records_total}, report: ImportReport|null, "
                "error: {code, message}|null}",
            },
            {"method": "GET", "path": "/v1/spec", "scope": None, "returns": "this document"},
        ],
        "ndjson": {
            "order": "header, then records section by section in the order "
            + ", ".join(protocol.SECTIONS)
            + ", then the trailer",
            "header": {
                "kind": "header",
                "format": "…",
                "version": 1,
                "generator": "…",
                "exported_at": "…",
                "manifest": "the manifest without checksum; counts counted before streaming",
            },
            "record": {"kind": "<section name, e.g. chunks>", "record": "<the record>"},
            "trailer": {
                "kind": "trailer",
                "counts": "records actually streamed per section",
                "counts_match": "whether they equal the header's counts",
                "checksum": "the §3.6 checksum of the bundle the lines make: header fields + "
                "manifest (header counts) + records; equals manifest.checksum of that bundle",
            },
        },
        "import_rules": [
            "format must be 'memoryai-bundle'; version above 1 is refused (422 "
            "version-unsupported)",
            "chunks whose content_hash already exists in the team are skipped (existing row "
            "kept); a content_hash that does not match the content is replaced by the true one, "
            "with a warning",
            "memory_edges upserted: co_activation_count added, weight max, updated_at refreshed",
            "entities upserted: frequency added, latest last_seen, earliest first_seen, is_dna "
            "OR-ed",
            "invalid records are skipped, counted and explained in warnings",
            "manifest.tenant_id is ignored; the token's team is the tenant",
            "content that looks like prompt injection is stored as data, flagged, and named in "
            "a warning",
            "an import is one transaction: it lands whole or not at all",
        ],
        "limits": {
            "max_bundle_bytes": max_bytes,
            "sync_import_max_bytes": sync_max_bytes,
            "max_content_chars": protocol.MAX_CONTENT_CHARS,
            "max_embedding_dim": protocol.MAX_EMBEDDING_DIM,
            "max_metadata_depth": protocol.MAX_JSON_DEPTH,
            "report_warnings": 100,
        },
        "errors": {
            "shape": {"error": {"code": "…", "message": "…", "details": "…"}},
            "400": "malformed JSON or bad parameters (malformed-json, bad-request)",
            "401": "no or unknown token",
            "403": "token lacks the scope",
            "413": "body larger than max_bundle_bytes (too-large)",
            "415": "wrong Content-Type (unsupported-media-type)",
            "422": "not a valid bundle envelope (format-invalid, version-unsupported, "
            "manifest-missing, …)",
        },
    }
