"""Where outbound traffic may go (no Django import): webhook URL shape rules, git remote shape
rules, and the SSRF address guard shared by webhook deliveries, HTTPS sources
(`sources.fetchers`) and git remotes (`reviews.git`, `reviews.services.repositories`)."""

from __future__ import annotations

import ipaddress
import re
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
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        else:
            # 6to4 and Teredo addresses carry an IPv4 address a relay may deliver to.
            embedded = [ip.sixtofour, *(ip.teredo or ())]
            if any(inner is not None and not _is_public(str(inner)) for inner in embedded):
                return False
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


# --- git remotes -------------------------------------------------------------------------------

_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_\-]{0,62})(?:\.[A-Za-z0-9_\-]{1,63})*$"
)
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)
_SCP_LIKE = re.compile(r"^(?P<user>[A-Za-z0-9._\-]+)@(?P<host>[^\s/:@\[\]]+):(?!//)(?P<path>\S+)$")
_USER = re.compile(r"^[A-Za-z0-9._\-]+$")


@dataclass(frozen=True)
class GitRemote:
    """Where a git remote connects: `host` and `port` (empty and 0 for file://)."""

    scheme: str  # https | http | ssh | file
    host: str  # without brackets
    port: int


def _host_check(host: str, *, bracketed: bool) -> str:
    """The host as git, curl and ssh will see it, or UrlRefused. Every numeric spelling other
    than the canonical one (127.1, 2130706433, 0x7f000001, 0177.0.0.1, a trailing dot) is
    refused before any lookup: resolvers and clients disagree about them."""
    if bracketed:
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise UrlRefused("remote-invalid", "The remote's IPv6 address is not valid.") from None
    labels = host.rstrip(".").split(".") if host else [""]
    if _NUMERIC_LABEL.match(labels[-1]):
        try:
            canonical = str(ipaddress.IPv4Address(host))
        except ValueError:
            canonical = ""
        if canonical != host:
            raise UrlRefused(
                "remote-invalid",
                "Write the remote's IP address in its usual dotted form (like 192.0.2.10).",
            )
        return host
    if not _NAME.match(host) or host.startswith("-"):
        raise UrlRefused("remote-invalid", "The remote's host name is not valid.")
    return host


def git_remote_parse(url: str, *, allow_local: bool) -> GitRemote:
    """The shape rules for a git remote: https://, ssh:// or user@host:path without a password;
    http:// to a loopback name and file:// only when local remotes are allowed (`allow_local`).

    Raises UrlRefused; the address rule is `git_remote_addresses`.
    """
    if not url or url != url.strip() or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise UrlRefused("remote-invalid", "Enter a remote URL without spaces.")
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused("remote-invalid", f"The URL is longer than {MAX_URL_LENGTH} characters.")
    if url.startswith("-") or "\\" in url:
        raise UrlRefused("remote-invalid", "This kind of remote is not allowed.")
    if "://" not in url:
        scp = _SCP_LIKE.match(url)
        if scp is None:
            raise UrlRefused("remote-scheme", "Use an https://, ssh:// or user@host:path remote.")
        return GitRemote("ssh", _host_check(scp["host"], bracketed=False), 22)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused("remote-invalid", "The remote URL cannot be parsed.") from exc
    scheme = parts.scheme.lower()
    if scheme == "file":
        if allow_local and parts.path and not parts.netloc:
            return GitRemote("file", "", 0)
        raise UrlRefused("remote-scheme", "Use an https://, ssh:// or user@host:path remote.")
    if scheme not in {"https", "ssh", "http"}:
        raise UrlRefused("remote-scheme", "Use an https://, ssh:// or user@host:path remote.")
    if parts.password is not None or (scheme != "ssh" and parts.username is not None):
        raise UrlRefused(
            "remote-credentials", "Do not put credentials in the URL; use the credential field."
        )
    if parts.username is not None and not _USER.match(parts.username):
        raise UrlRefused("remote-invalid", "The remote's user name is not valid.")
    netloc = parts.netloc.rpartition("@")[2]
    bracketed = netloc.startswith("[")
    host = _host_check(parts.hostname or "", bracketed=bracketed)
    if scheme == "http" and not (allow_local and _is_loopback_name(host)):
        raise UrlRefused("remote-scheme", "Use an https://, ssh:// or user@host:path remote.")
    default_port = {"https": 443, "http": 80, "ssh": 22}[scheme]
    return GitRemote(scheme, host, port or default_port)


def git_remote_addresses(remote: GitRemote, *, allow_private: bool) -> list[str]:
    """Resolve the remote's host now and refuse it unless every address is public (or private
    addresses are allowed); [] for a file:// remote. The messages name no resolved address:
    they are shown to the team, and an internal name's address is not theirs to learn."""
    if remote.scheme == "file":
        return []
    try:
        return addresses_resolve(remote.host, remote.port, allow_private=allow_private)
    except UrlRefused as exc:
        if exc.code == "address-not-public":
            raise UrlRefused(
                exc.code,
                f"The host {remote.host} resolves to a private, loopback, link-local or reserved"
                " address; connections there are refused.",
            ) from None
        raise
