"""What reviews announce. Sent inside the transaction that stored a repository's new index;
receivers (the brain's mirror) run in it, so a receiver that raises rolls the index back."""

from __future__ import annotations

from typing import Any, NamedTuple

from django.dispatch import Signal

# kwargs: repository (reviews.models.Repository), actor (memoryadmin.audit.Actor or None),
# memories (None, or the repository's active memories as this index stored them, as
# `IndexedMemory` rows in memory id order (code points), when the sender holds them: an index
# that just stored them; receivers then need not read them back)
repository_indexed = Signal()


class IndexedMemory(NamedTuple):
    """An active memory as the brain mirrors it: the `Memory` fields its chunk needs (the
    reviews selectors read `memory_id`, `front_matter`, `added_commit` and `author_name`)."""

    memory_id: str
    ref: str
    type: str
    title: str
    body: str
    front_matter: dict[str, Any]
    added_commit: str
    author_name: str
