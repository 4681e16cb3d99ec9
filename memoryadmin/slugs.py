"""The one rule for a team's slug (its address, `/t/<slug>/`): the form, the model, the service
and `manage.py team_create` all use it."""

from __future__ import annotations

import re

from django.core.validators import RegexValidator

SLUG_MAX_LENGTH = 64
SLUG_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SLUG_RULE = "Use lowercase letters, digits and hyphens (one hyphen between words, like team-42)."

validate_team_slug = RegexValidator(
    regex=rf"\A{SLUG_PATTERN.pattern}\Z", message=SLUG_RULE, code="invalid-slug"
)


def slug_problem(slug: str) -> str | None:
    """Why `slug` is not a team slug, or None."""
    if len(slug) > SLUG_MAX_LENGTH:
        return f"Use at most {SLUG_MAX_LENGTH} characters."
    if not SLUG_PATTERN.fullmatch(slug):
        return SLUG_RULE
    return None
