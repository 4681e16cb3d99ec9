"""The brain listens: what sources serve and reviews approve is mirrored into chunks, in the
transaction that changed it (connected in BundlesConfig.ready)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from bundles.mirror import brain_mirror_repository, brain_mirror_source
from reviews.signals import repository_indexed
from sources.signals import source_served_changed


@receiver(source_served_changed, dispatch_uid="bundles.mirror_source")
def mirror_source(
    sender: Any, *, source: Any, actor: Any = None, records: Any = None, **kwargs: Any
) -> None:
    brain_mirror_source(source=source, actor=actor, records=records)


@receiver(repository_indexed, dispatch_uid="bundles.mirror_repository")
def mirror_repository(
    sender: Any, *, repository: Any, actor: Any = None, memories: Any = None, **kwargs: Any
) -> None:
    brain_mirror_repository(repository=repository, actor=actor, memories=memories)
