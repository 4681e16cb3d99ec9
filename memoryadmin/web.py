"""Helpers for team-scoped HTML views."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from memoryadmin.models import Team
from memoryadmin.permissions import Action, RoleRequired, role_needed, role_of, user_can


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
            role = role_of(request.user, team)
            if role is None:
                raise Http404("No such team.")
            if not user_can(request.user, team, action):
                request.team = team  # type: ignore[attr-defined]  # the error page's navigation
                raise RoleRequired(team, role_needed(action), role)
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


# --- widgets for credentials: a form that fails validation never renders one back -----------


class SecretInput(forms.PasswordInput):
    """A one-line secret (a token, a password): typed, sent, never rendered back."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"autocomplete": "new-password", **(attrs or {})}, render_value=False)


class SecretTextarea(forms.Textarea):
    """A multi-line secret (an SSH private key): the textarea is always empty when shown."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"autocomplete": "off", "spellcheck": "false", **(attrs or {})})

    def format_value(self, value: Any) -> None:
        return None


# `scheme://userinfo@`: the userinfo is a user name and maybe a password or token.
_URL_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<userinfo>[^/?#]*)@")


def url_without_credentials(url: str) -> str:
    """The URL with any userinfo dropped; an SSH user name alone (ssh://git@host) stays."""
    match = _URL_USERINFO.match(url)
    if match is None:
        return url  # no userinfo, or scp-like `git@host:path`, whose part before @ is a user
    if match["scheme"].lower() == "ssh" and ":" not in match["userinfo"]:
        return url
    return f"{match['scheme']}://" + url[match.end() :]


class CredentialFreeMixin:
    """Renders a URL field's value without the credentials a user may have typed into it."""

    def format_value(self, value: Any) -> Any:
        value = super().format_value(value)  # type: ignore[misc]
        return url_without_credentials(value) if isinstance(value, str) else value


class CredentialFreeTextInput(CredentialFreeMixin, forms.TextInput):
    pass


class CredentialFreeURLInput(CredentialFreeMixin, forms.URLInput):
    pass
