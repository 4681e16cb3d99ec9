"""The format libraries stand on their own: importing any of them loads no Django and no app."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in (ROOT / "formats").rglob("*.py")
)
APPS = (
    "django",
    "rest_framework",
    "celery",
    "memoryadmin",
    "sources",
    "reviews",
    "bundles",
    "webhooks",
)


def test_it_finds_the_format_libraries():
    assert {"formats.frontmatter", "formats.openmemories", "formats.memoryrail"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_it_imports_no_django_and_no_app(module):
    code = (
        f"import sys, {module}\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {APPS!r})\n"
        "print(bad)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "[]", result.stdout
