"""Production serves static files from `collectstatic`'s output (WhiteNoise, hashed names).

Without it every page would be a 500 (`{% static %}` finds no manifest entry). So a production
process refuses to start instead, saying what to run: `memoryadmin/wsgi.py` calls
`require_collected_static()`, and `manage.py check --deploy` reports the same problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import storages

PROBE = "memoryadmin/app.css"  # a file every page links


def static_problem() -> str | None:
    """Why the pages' static files can not be served, or None (always None under DEBUG)."""
    storage = storages["staticfiles"]
    if not isinstance(storage, ManifestFilesMixin):
        return None
    manifest = Path(settings.STATIC_ROOT) / storage.manifest_name
    how = (
        "Run `python manage.py collectstatic --noinput` with the same settings, or set "
        "MEMORYADMIN_STATIC_ROOT to the folder they were collected into."
    )
    if not manifest.is_file():
        return f"Static files are not collected: {manifest} does not exist. {how}"
    try:
        storage.stored_name(PROBE)
    except ValueError:
        return f"Static files in {settings.STATIC_ROOT} are out of date (no {PROBE}). {how}"
    return None


def check_static_collected(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    problem = static_problem()
    if problem is None:
        return []
    return [checks.Error(problem, id="memoryadmin.E001")]


def require_collected_static() -> None:
    problem = static_problem()
    if problem is not None:
        raise ImproperlyConfigured(problem)
