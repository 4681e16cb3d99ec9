"""What this process serves: "web" once memoryadmin/wsgi.py loaded the application, else ""
(a Celery worker, a management command, a test). Lower floors mark it, upper floors read it
(bundles/embeddings/model.py tunes torch for query encoding in web processes)."""

from __future__ import annotations

import gc

_role = ""


def process_mark(role: str) -> None:
    global _role
    _role = role


def process_role() -> str:
    return _role


def freeze_startup_objects(**_: object) -> None:
    """After start-up (settings, apps, URLconf, task modules): collect once, then move every
    object alive into the collector's permanent generation (`gc.freeze`). They live as long as
    the process anyway; a full collection in a large piece of work then walks only what the
    work made (two of them were 0.07-0.1 s of a 10k-record cold refresh), and children forked
    later keep sharing their pages. Takes a signal's keyword arguments (Celery's)."""
    gc.collect()
    gc.freeze()
