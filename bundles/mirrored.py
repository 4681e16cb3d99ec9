"""What the brain mirrors: the wanted item, the reconcile's tally and the provenance key.

Shared by `bundles.mirror` (the desired sets) and `bundles.reconcile` (the writers), and by the
importer and export, which read `PROVENANCE_KEY`. See docs/brain.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

PROVENANCE_KEY = "memoryadmin"


@dataclass(frozen=True)
class Mirrored:
    """What one source record or repository memory should look like as a chunk."""

    ref: str
    content: str
    memory_type: str
    tags: list[str]
    zone: str
    is_pinned: bool
    provenance: dict[str, Any]
    expires_at: datetime | None = None


@dataclass
class MirrorResult:
    chunks_created: int = 0
    chunks_updated: int = 0
    origins_created: int = 0
    activated: int = 0
    deactivated: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.chunks_created
            or self.chunks_updated
            or self.origins_created
            or self.activated
            or self.deactivated
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "chunks_created": self.chunks_created,
            "chunks_updated": self.chunks_updated,
            "origins_created": self.origins_created,
            "activated": self.activated,
            "deactivated": self.deactivated,
            "unchanged": self.unchanged,
            "skipped": self.skipped[:20],
        }
