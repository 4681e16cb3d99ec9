"""`Authorization: Bearer <token>` for the REST API."""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django_ratelimit.core import get_usage
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from redis.exceptions import RedisError
from rest_framework import authentication, exceptions

from memoryadmin.models import ApiToken, token_hash
from memoryadmin.permissions import token_owner_problem

LAST_USED_RESOLUTION = timedelta(minutes=1)
TOKEN_PREFIX_RE = re.compile(r"ma_([0-9a-f]{8})_")
logger = logging.getLogger(__name__)
BEARER_FAILURES = "memoryadmin.token-failures"  # the rate-limit group of failed tokens

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@functools.lru_cache(maxsize=8)
def _networks(values: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(value, strict=False) for value in values)


def _ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(value.strip().split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def client_ip(request) -> str | None:  # type: ignore[no-untyped-def]
    """The client's address, for rate limits and the audit log alike.

    The direct peer (REMOTE_ADDR) unless it is one of MEMORYADMIN_TRUSTED_PROXIES; then
    X-Forwarded-For is read from the right, skipping trusted proxies, and the first address not
    among them is the client (what a proxy appended, not what a client claimed on the left).
    An unreadable hop stops the walk at the last proxy that is known to be ours.
    """
    meta = getattr(request, "META", {})
    peer = _ip(meta.get("REMOTE_ADDR") or "")
    if peer is None:
        return None
    trusted = _networks(tuple(settings.MEMORYADMIN_TRUSTED_PROXIES))
    if not any(peer in network for network in trusted):
        return str(peer)
    client = peer
    for hop in reversed((meta.get("HTTP_X_FORWARDED_FOR") or "").split(",")):
        address = _ip(hop)
        if address is None:
            break
        client = address
        if not any(address in network for network in trusted):
            break
    return str(client)


def address_key(request) -> str:  # type: ignore[no-untyped-def]
    """The rate-limit key of an address: IPv6 clients by /64 (one host easily has a /64)."""
    address = _ip(client_ip(request) or "")
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def failure_count(
    request, *, group: str, rate: str, value: str, increment: bool
) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(failures counted in the window, the rate's limit) for one key of a group.

    Only failures are ever counted. A cache (Redis) outage counts nothing and refuses nothing,
    with a warning: sign-in must not 500 and must not lock everyone out."""
    try:
        usage = get_usage(
            getattr(request, "_request", request),
            group=group,
            key=lambda _group, _request: value,
            rate=rate,
            increment=increment,
        )
    except (RedisError, OSError) as exc:
        logger.warning("rate limit %s not checked, the cache is unavailable: %s", group, exc)
        return 0, 1
    if usage is None or usage["count"] is None:
        return 0, 1
    return int(usage["count"]), int(usage["limit"])


def address_failures(request, *, group: str, rate: str, increment: bool) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    return failure_count(
        request, group=group, rate=rate, value=address_key(request), increment=increment
    )


def rate_limited(request, *, group: str, rate: str, increment: bool) -> bool:  # type: ignore[no-untyped-def]
    """Over the rate per client address (see client_ip); fails open when the cache is down."""
    count, limit = address_failures(request, group=group, rate=rate, increment=increment)
    return count > limit


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
        # The credential is checked first: a valid token is never refused because of failures
        # counted against its address (a shared proxy, another client) or its prefix.
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
            if _count_failure(request, parts[1]):
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


def _count_failure(request, secret: str) -> bool:  # type: ignore[no-untyped-def]
    """Count a failed token per client address and per token prefix; True when either is
    over MEMORYADMIN_TOKEN_FAILURE_RATE (the failure is then answered 429, not 401)."""
    rate = settings.MEMORYADMIN_TOKEN_FAILURE_RATE
    counts = [address_failures(request, group=BEARER_FAILURES, rate=rate, increment=True)]
    prefix = TOKEN_PREFIX_RE.match(secret)
    if prefix is not None:
        counts.append(
            failure_count(
                request,
                group=f"{BEARER_FAILURES}.prefix",
                rate=rate,
                value=prefix.group(1),
                increment=True,
            )
        )
    return any(count > limit for count, limit in counts)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Describe the API token in the OpenAPI schema (also keeps `check --deploy` clean)."""

    target_class = BearerTokenAuthentication
    name = "apiToken"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix=BearerTokenAuthentication.keyword
        )
