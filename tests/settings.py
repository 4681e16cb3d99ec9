"""Test settings: the real settings with test-friendly environment defaults."""

from __future__ import annotations

import os
import tempfile
from urllib.parse import urlsplit, urlunsplit

os.environ.setdefault("MEMORYADMIN_SECRET_KEY", "test-secret-key-" + "t" * 40)
os.environ.setdefault("MEMORYADMIN_SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("MEMORYADMIN_SECURE_COOKIES", "false")
os.environ.setdefault("MEMORYADMIN_CELERY_EAGER", "true")
# Suites log in and fail tokens far more often than people; the rate-limit tests lower these.
os.environ.setdefault("MEMORYADMIN_LOGIN_RATE", "10000/m")
os.environ.setdefault("MEMORYADMIN_TOKEN_FAILURE_RATE", "10000/m")
os.environ.setdefault("MEMORYADMIN_LOGIN_USER_RATE", "10000/m")
os.environ.setdefault("MEMORYADMIN_SOURCE_ALLOW_PRIVATE_ADDRESSES", "true")
# Tests build local sources under pytest's temporary folders: that is the allowed root.
os.environ.setdefault("MEMORYADMIN_SOURCE_LOCAL_ROOTS", os.path.realpath(tempfile.gettempdir()))
# Embedding every mirrored chunk would load the model in every test that mirrors: the
# semantic tests (tests/semantic) switch it on where they mean it.
os.environ.setdefault("MEMORYADMIN_SEMANTIC_ENABLED", "false")
# One queue per test session, so parallel runs on one broker never take each other's tasks.
os.environ.setdefault("MEMORYADMIN_CELERY_QUEUE", f"memoryadmin-test-{os.getpid()}")


def _isolate_xdist_worker(worker: str) -> None:
    """Give one pytest-xdist worker its own data folder and Redis database.

    Locks, cache entries and rate limits are keyed by ids, and every worker's test database
    hands out the same ids: two workers sharing a Redis database or a lock folder would wait on
    (or clear) each other's keys. The worker's test database gets its own name from
    pytest-django (a `_gwN` suffix). A Celery worker process started by the suite inherits the
    environment set here, so the shift is made once (the marker below).
    """
    if os.environ.get("MEMORYADMIN_TEST_XDIST_ISOLATED") == worker:
        return
    index = int(worker.removeprefix("gw") or 0)
    base = os.environ.get("MEMORYADMIN_DATA_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "var"
    )
    os.environ["MEMORYADMIN_DATA_DIR"] = os.path.join(base, "xdist", worker)
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:
        parts = urlsplit(redis_url)
        database = int(parts.path.strip("/") or 0) + 1 + index
        os.environ["REDIS_URL"] = urlunsplit(parts._replace(path=f"/{database}"))
    os.environ["MEMORYADMIN_TEST_XDIST_ISOLATED"] = worker


if os.environ.get("PYTEST_XDIST_WORKER"):
    _isolate_xdist_worker(os.environ["PYTEST_XDIST_WORKER"])

from memoryadmin.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast; tests only
STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"  # noqa: F405

# A worker process started by the test suite opens the test database by this name.
if os.environ.get("MEMORYADMIN_WORKER_DB_NAME"):
    DATABASES["default"]["NAME"] = os.environ["MEMORYADMIN_WORKER_DB_NAME"]  # noqa: F405
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

# Django's test flush truncates the append-only audit table; tests/pgflush allows that only.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.pgflush"  # noqa: F405
