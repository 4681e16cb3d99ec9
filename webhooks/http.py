"""One signed POST to a webhook endpoint: the request, the address guard, the wall-clock deadline.

The transport knows nothing of retries: it builds a delivery's signed request, makes one POST
and answers an `AttemptResult`; `webhooks.delivery` decides what the result means.
"""

from __future__ import annotations

import json
import os
import ssl
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import certifi
import httpx
from django.conf import settings

from webhooks import netguard, signing
from webhooks.deadline import DeadlineClock, DeadlinePassed, deadline_client

if TYPE_CHECKING:
    from webhooks.models import WebhookDelivery

EXCERPT_BYTES = 200
USER_AGENT = "memoryadmin-webhooks/1"


@dataclass(frozen=True)
class AttemptResult:
    status: int | None
    error: str
    duration_ms: int
    retryable: bool
    retry_after: int | None = None
    # Stable and machine-readable (the test-send answer; `attempt_words` says it to a person).
    code: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def _ssl_context() -> ssl.SSLContext:
    # trust_env is off (no proxy variables may route around the address guard), so the
    # standard SSL_CERT_FILE override is honoured here explicitly.
    return ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE") or certifi.where())


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("retry-after", "")
    return int(value) if value.isdigit() else None


def _host_header(target: netguard.Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


def _post(
    *, url: str, body: bytes, headers: dict[str, str], timeout: float, deadline: float
) -> AttemptResult:
    """One POST. `timeout` bounds each socket operation, `deadline` the whole attempt (connect,
    send, response headers and excerpt) on the wall clock, however slowly the bytes come."""
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        # The scheme rule is enforced when the URL is saved; the address rule on every attempt,
        # after resolution, and the request goes to the checked address so DNS cannot rebind it.
        target = netguard.url_parse(url, allow_http_loopback=True)
        address = netguard.address_resolve(
            target.host, target.port, allow_private=settings.SOURCE_ALLOW_PRIVATE_ADDRESSES
        )
    except netguard.UrlRefused as exc:
        return AttemptResult(
            None, exc.message, elapsed(), retryable=exc.code == "dns-failed", code=exc.code
        )
    pinned_host = f"[{address}]" if ":" in address else address
    pinned = f"{target.scheme}://{pinned_host}:{target.port}{target.path_and_query}"
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    clock = DeadlineClock()
    try:
        with (
            clock.until(started + deadline),
            deadline_client(
                clock, timeout=timeout, follow_redirects=False, verify=_ssl_context()
            ) as client,
            client.stream(
                "POST",
                pinned,
                content=body,
                headers={**headers, "Host": _host_header(target)},
                extensions=extensions,
            ) as response,
        ):
            excerpt = b""
            for chunk in response.iter_bytes():
                excerpt += chunk
                if len(excerpt) >= EXCERPT_BYTES:
                    break
    except DeadlinePassed:
        message = (
            f"No complete answer within {deadline:g}s (MEMORYADMIN_WEBHOOK_DELIVERY_DEADLINE)."
        )
        return AttemptResult(None, message, elapsed(), retryable=True, code="deadline-passed")
    except httpx.TimeoutException:
        message = f"Timed out after {timeout:g}s."
        return AttemptResult(None, message, elapsed(), retryable=True, code="timeout")
    except httpx.HTTPError as exc:
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return AttemptResult(None, message, elapsed(), retryable=True, code=_error_code(exc))
    status = response.status_code
    if 200 <= status < 300:
        return AttemptResult(status, "", elapsed(), retryable=False, code="delivered")
    text = excerpt[:EXCERPT_BYTES].decode("utf-8", "replace").strip()
    error = f"HTTP {status} {response.reason_phrase}" + (f": {text}" if text else "")
    code = "http-status"
    if 300 <= status < 400:
        error = f"HTTP {status}: redirects are not followed; use the final URL."
        code = "redirect-refused"
    retryable = status == 429 or status >= 500
    return AttemptResult(status, error, elapsed(), retryable, _retry_after(response), code)


def _error_code(exc: httpx.HTTPError) -> str:
    """What kind of transport failure: TLS, a refused or failed connection, or the exchange."""
    cause: BaseException | None = exc
    while cause is not None:  # httpx wraps httpcore's error, which wraps the ssl module's
        if isinstance(cause, ssl.SSLError):
            return "tls-failed"
        cause = cause.__cause__ or cause.__context__
    return "connect-failed" if isinstance(exc, httpx.ConnectError) else "transport-failed"


def request_build(
    *, delivery: WebhookDelivery, secret: str, timestamp: int, previous_secret: str = ""
) -> tuple[bytes, dict[str, str]]:
    """The body and headers; during a rotation's overlap the old secret's signature goes in
    X-Memoryadmin-Signature-Previous (the same scheme), so a receiver still holding it accepts."""
    body = json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Memoryadmin-Event": delivery.event,
        "X-Memoryadmin-Delivery": str(delivery.uid),
        "X-Memoryadmin-Timestamp": str(timestamp),
        "X-Memoryadmin-Signature": signing.sign(secret, timestamp, body),
    }
    if previous_secret:
        headers["X-Memoryadmin-Signature-Previous"] = signing.sign(previous_secret, timestamp, body)
    return body, headers
