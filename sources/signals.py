"""What sources announce. Sent inside the transaction that changed what a source serves;
receivers (the brain's mirror) run in it, so a receiver that raises rolls the change back."""

from __future__ import annotations

from django.dispatch import Signal

from memoryadmin.audit import Actor
from sources.models import Source

# kwargs: source (sources.models.Source), actor (memoryadmin.audit.Actor or None)
source_served_changed = Signal()


def announce(source: Source, actor: Actor | None = None) -> None:
    """What the source serves changed: the brain mirrors it in this transaction."""
    source_served_changed.send(sender=Source, source=source, actor=actor)
