"""A repository's sync (fetch, index, mirror) runs without the cyclic collector
(memoryadmin.process.collector_paused), which is back once it ends."""

from __future__ import annotations

import gc

from reviews.models import Memory
from reviews.services import repositories


def test_the_index_runs_without_the_collector(repository, monkeypatch, collector_on):  # type: ignore[no-untyped-def]
    seen: list[bool] = []
    read = repositories.index_read

    def index_read(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return read(*args, **kwargs)

    monkeypatch.setattr(repositories, "index_read", index_read)
    synced = repositories.repository_sync(repository_id=repository.pk)
    assert gc.isenabled()
    assert synced.last_sync_ok
    assert seen == [False]
    assert Memory.objects.filter(repository=repository).exists()
