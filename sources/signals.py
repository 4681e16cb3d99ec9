"""What sources announce. Sent inside the transaction that changed what a source serves;
receivers (the brain's mirror) run in it, so a receiver that raises rolls the change back."""

from __future__ import annotations

from django.dispatch import Signal

# kwargs: source (sources.models.Source), actor (memoryadmin.audit.Actor or None)
source_served_changed = Signal()
