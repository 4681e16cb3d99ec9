"""`make test` runs the suite on two pytest-xdist workers: each must own its Redis db and data."""

from __future__ import annotations

import os

from tests import settings as test_settings


def test_a_worker_gets_its_own_redis_database_and_data_folder_once(monkeypatch, tmp_path):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/3")
    monkeypatch.setenv("MEMORYADMIN_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MEMORYADMIN_TEST_XDIST_ISOLATED", raising=False)

    test_settings._isolate_xdist_worker("gw1")

    assert os.environ["REDIS_URL"] == "redis://127.0.0.1:6379/5"
    assert os.environ["MEMORYADMIN_DATA_DIR"] == str(tmp_path / "xdist" / "gw1")
    # A Celery worker process the suite starts inherits this environment and loads the same
    # settings: it must land on the same database and folder, not shift again.
    test_settings._isolate_xdist_worker("gw1")
    assert os.environ["REDIS_URL"] == "redis://127.0.0.1:6379/5"
    assert os.environ["MEMORYADMIN_DATA_DIR"] == str(tmp_path / "xdist" / "gw1")


def test_workers_never_share_a_redis_database_or_a_data_folder(monkeypatch, tmp_path):
    seen = set()
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("REDIS_URL", "redis://:secret@127.0.0.1:6379/0")
        monkeypatch.setenv("MEMORYADMIN_DATA_DIR", str(tmp_path))
        monkeypatch.delenv("MEMORYADMIN_TEST_XDIST_ISOLATED", raising=False)
        test_settings._isolate_xdist_worker(worker)
        seen.add((os.environ["REDIS_URL"], os.environ["MEMORYADMIN_DATA_DIR"]))
    assert {url for url, _ in seen} == {
        "redis://:secret@127.0.0.1:6379/1",
        "redis://:secret@127.0.0.1:6379/2",
        "redis://:secret@127.0.0.1:6379/3",
    }
    assert len({folder for _, folder in seen}) == 3
