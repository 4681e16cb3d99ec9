"""A small load run in the suite: see tests/faults/load.py (`python -m tests.faults.load`).

Eight API clients export, import and read context for a few seconds against gunicorn and a
Celery worker, while two reviewers approve proposals and a thread refreshes the source. Then
the final state is checked: no 5xx, no transport error, no duplicate chunk, every chunk and
decision explained, every approval active at the bare remote.
"""

from __future__ import annotations

import pytest
from django.db import connection

from memoryadmin.celery import app
from tests.faults import load

pytestmark = pytest.mark.worker


def test_it_serves_concurrent_clients_without_losing_anything(transactional_db, settings, tmp_path):
    shared = settings.DATA_DIR  # this process's broker folder and locks live there
    settings.DATA_DIR = tmp_path / "data"
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    cfg = load.Config(
        clients=8,
        seconds=4.0,
        reviewers=2,
        proposals=16,
        records=5,
        bundles=3,
        bundle_chunks=60,
        refreshes=2,
        web_workers=2,
        web_threads=4,
        settle_seconds=90.0,
    )
    world = load.build_world(tmp_path, cfg)
    if connection.vendor == "sqlite":
        connection.close()  # let the server write
    env = load.process_env(
        db_name=str(connection.settings_dict["NAME"]),
        data_dir=shared,
        queue=app.conf.task_default_queue,
    )
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False  # the refresh thread's requests go to the real worker
    try:
        with load.running_stack(cfg, env, tmp_path / "logs") as base:
            summary = load.drive(world, cfg, base)
            try:
                summary["settle_s"] = load.settle(world, cfg.settle_seconds)
            except AssertionError as exc:
                worker_log = (tmp_path / "logs" / "worker.log").read_text()
                raise AssertionError(f"{exc}\n{worker_log[-4000:]}") from None
    finally:
        app.conf.task_always_eager = previous
    problems, final = load.check(world, summary)
    print(summary, final)
    assert problems == [], (problems, (tmp_path / "logs" / "web.log").read_text()[-3000:])
    assert world.approved and world.imported_bundles == {0, 1, 2}
    # every refresh asked for succeeded; how many fit in the window depends on the machine's
    # load (the refresher stops asking when the drive's time is up), at least one always does
    requested = len(world.runs)
    assert 1 <= requested <= cfg.refreshes
    assert final["refresh_runs"] == {"succeeded": requested}
    assert summary["operations"]["export_json"]["count"] > 0
