"""Helpers for team-scoped HTML views."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from memoryadmin.models import Team
from memoryadmin.permissions import Action, role_of, user_can


def team_view(
    action: Action,
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Resolve `team_slug` to `request.team`; 404 for non-members, 403 for a role too low."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def wrapper(
            request: HttpRequest, team_slug: str, *args: Any, **kwargs: Any
        ) -> HttpResponse:
            team = get_object_or_404(Team, slug=team_slug)
            if role_of(request.user, team) is None:
                raise Http404("No such team.")
            if not user_can(request.user, team, action):
                raise PermissionDenied("Your role on this team does not allow this.")
            request.team = team  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def form_add_errors(form: forms.Form, exc: ValidationError) -> None:
    """Show a service's ValidationError on the form: per field where it names one, else on top."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)
