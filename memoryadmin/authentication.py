"""`Authorization: Bearer <token>` for the REST API."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django_ratelimit.core import is_ratelimited
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from redis.exceptions import RedisError
from rest_framework import authentication, exceptions

from memoryadmin.models import ApiToken, token_hash
from memoryadmin.permissions import token_owner_problem

LAST_USED_RESOLUTION = timedelta(minutes=1)
logger = logging.getLogger(__name__)


def rate_limited(request, *, group: str, rate: str, increment: bool) -> bool:  # type: ignore[no-untyped-def]
    """is_ratelimited, failing open when the cache (Redis) is down: sign-in must not 500."""
    try:
        return is_ratelimited(
            request=request, group=group, key="ip", rate=rate, increment=increment
        )
    except (RedisError, OSError) as exc:
        logger.warning("rate limit %s not checked, the cache is unavailable: %s", group, exc)
        return False


class TokenPrincipal:
    """The request.user of a token-authenticated request: authenticated, never a superuser."""

    is_authenticated = True
    is_anonymous = False
    is_superuser = False
    is_staff = False
    is_active = True
    pk = None
    id = None

    def __init__(self, token: ApiToken) -> None:
        self.token = token

    def get_username(self) -> str:
        return f"token:{self.token.name}"

    def __str__(self) -> str:
        return self.get_username()


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):  # type: ignore[no-untyped-def]
        parts = authentication.get_authorization_header(request).decode("latin-1").split()
        if not parts or parts[0].lower() != self.keyword.lower():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Authorization header must be 'Bearer <token>'.", code="token-malformed"
            )
        # Guessing tokens is throttled per client address: refuse early once over the limit.
        if _failures_limited(request, increment=False):
            raise exceptions.Throttled(wait=60, detail="Too many failed token attempts.")
        token = (
            ApiToken.objects.select_related("team", "created_by")
            .filter(secret_hash=token_hash(parts[1]))
            .first()
        )
        failure = None
        if token is None:
            failure = exceptions.AuthenticationFailed("Unknown API token.", code="token-unknown")
        elif token.revoked_at is not None:
            failure = exceptions.AuthenticationFailed(
                "This API token was revoked.", code="token-revoked"
            )
        elif token.is_expired:
            failure = exceptions.AuthenticationFailed(
                "This API token expired.", code="token-expired"
            )
        else:
            problem = token_owner_problem(token)
            if problem is not None:
                failure = exceptions.AuthenticationFailed(problem, code="token-owner-gone")
        if failure is not None:
            if _failures_limited(request, increment=True):
                raise exceptions.Throttled(wait=60, detail="Too many failed token attempts.")
            raise failure
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            # A bounded write: at most one per token per minute, not one per request.
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return TokenPrincipal(token), token

    def authenticate_header(self, request) -> str:  # type: ignore[no-untyped-def]
        return self.keyword


def _failures_limited(request, *, increment: bool) -> bool:  # type: ignore[no-untyped-def]
    return rate_limited(
        getattr(request, "_request", request),
        group="memoryadmin.token-failures",
        rate=settings.MEMORYADMIN_TOKEN_FAILURE_RATE,
        increment=increment,
    )


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Describe the API token in the OpenAPI schema (also keeps `check --deploy` clean)."""

    target_class = BearerTokenAuthentication
    name = "apiToken"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix=BearerTokenAuthentication.keyword
        )
