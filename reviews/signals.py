"""What reviews announce. Sent inside the transaction that stored a repository's new index;
receivers (the brain's mirror) run in it, so a receiver that raises rolls the index back."""

from __future__ import annotations

from django.dispatch import Signal

# kwargs: repository (reviews.models.Repository), actor (memoryadmin.audit.Actor or None)
repository_indexed = Signal()
