"""What sources announce. Sent inside the transaction that changed what a source serves;
receivers (the brain's mirror) run in it, so a receiver that raises rolls the change back."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.dispatch import Signal

from memoryadmin.audit import Actor
from sources.models import Source

# kwargs: source (sources.models.Source), actor (memoryadmin.audit.Actor or None), records
# (None, or the current snapshot's active records as (record_id, kind, title, body, tags,
# expires) tuples in record id order, when the sender holds them: a refresh that just read
# them; receivers then need not read them back)
source_served_changed = Signal()

ServedRow = tuple[str, str, str, str, Any, datetime | None]


def announce(
    source: Source, actor: Actor | None = None, records: Iterable[ServedRow] | None = None
) -> None:
    """What the source serves changed: the brain mirrors it in this transaction."""
    source_served_changed.send(sender=Source, source=source, actor=actor, records=records)
