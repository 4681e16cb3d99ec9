"""Settings for benchmark processes: the real settings, production-like (DEBUG off), eager tasks."""

from __future__ import annotations

import os

os.environ.setdefault("MEMORYADMIN_SECRET_KEY", "bench-secret-key-" + "b" * 40)
os.environ.setdefault("MEMORYADMIN_SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("MEMORYADMIN_SECURE_COOKIES", "false")
os.environ.setdefault("MEMORYADMIN_CELERY_EAGER", "true")
os.environ.setdefault("MEMORYADMIN_LOGIN_RATE", "100000/m")
os.environ.setdefault("MEMORYADMIN_TOKEN_FAILURE_RATE", "100000/m")
os.environ.setdefault("MEMORYADMIN_REPOSITORY_ALLOW_LOCAL_REMOTES", "true")
os.environ.setdefault("MEMORYADMIN_CELERY_QUEUE", f"memoryadmin-bench-{os.getpid()}")
# The bench's largest sources (100k records in a full run, more with --records) are over the
# defaults a server refuses a manifest past (20,000 entries, 4 MiB): an administrator who
# approves such a source raises them the same way.
os.environ.setdefault("MEMORYADMIN_SOURCE_MAX_ENTRIES", "2000000")
os.environ.setdefault("MEMORYADMIN_SOURCE_MAX_MANIFEST_BYTES", str(1 << 30))

from memoryadmin.settings import *  # noqa: F403

DEBUG = False  # DEBUG keeps every SQL statement in memory: it would distort peak memory
# Production runs collectstatic for the manifest; the plain storage needs no build step.
STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"  # noqa: F405
WHITENOISE_USE_FINDERS = True  # serve app.css without a collectstatic step
if DATABASES["default"]["ENGINE"].endswith("postgresql"):  # noqa: F405
    # every connection of this process, in any thread, names it: the probe finds its
    # backends by this name to count their CPU (bench/steps/measure.py)
    DATABASES["default"].setdefault("OPTIONS", {})["application_name"] = f"bench-{os.getpid()}"  # noqa: F405
