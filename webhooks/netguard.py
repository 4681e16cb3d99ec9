"""Where outbound HTTP may go (no Django import): webhook URL shape rules and the SSRF address
guard shared by webhook deliveries and HTTPS sources (`sources.fetchers`)."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2000


class UrlRefused(ValueError):
    """The URL may not be used; `code` is stable, `message` is safe to show."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as written in the URL, without brackets
    port: int
    path_and_query: str


def _is_loopback_name(host: str) -> bool:
    if host.lower() in {"localhost", "localhost."}:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_parse(url: str, *, allow_http_loopback: bool) -> Target:
    """HTTPS only; plain HTTP only to a loopback host and only when the setting allows it."""
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused("url-too-long", f"The URL is longer than {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UrlRefused("url-invalid", "The URL cannot be parsed.") from exc
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if scheme not in {"https", "http"} or not host:
        raise UrlRefused("url-invalid", "Enter an absolute https:// URL.")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused(
            "url-credentials",
            "Credentials in the URL are not allowed; the signature authenticates.",
        )
    if scheme == "http" and not (allow_http_loopback and _is_loopback_name(host)):
        raise UrlRefused("url-not-https", "Webhook URLs must use https://.")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(
        scheme=scheme,
        host=host,
        port=port or (443 if scheme == "https" else 80),
        path_and_query=path,
    )


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_unspecified or ip.is_reserved)


def addresses_resolve(host: str, port: int, *, allow_private: bool) -> list[str]:
    """Resolve `host` and return every address to try, in resolver order; refuse non-public ones.

    Every resolved address must be public (a name that also resolves privately is refused),
    and the caller connects only to the returned addresses so a second lookup cannot rebind it.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UrlRefused("dns-failed", f"The host {host} could not be resolved.") from exc
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise UrlRefused("dns-failed", f"The host {host} could not be resolved.")
    if not allow_private:
        refused = [a for a in addresses if not _is_public(a)]
        if refused:
            raise UrlRefused(
                "address-not-public",
                f"The host {host} resolves to a private, loopback, link-local or reserved "
                f"address ({refused[0]}); connections there are refused.",
            )
    return addresses


def address_resolve(host: str, port: int, *, allow_private: bool) -> str:
    """The first address of `addresses_resolve`: connect to it, not to the name."""
    return addresses_resolve(host, port, allow_private=allow_private)[0]
