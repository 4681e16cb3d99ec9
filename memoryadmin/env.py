"""Typed readers for environment variables.

Booleans accept only ``true``/``false`` (any case) so a typo fails at start instead of
silently meaning "off". A ``NAME_FILE`` variable, when set, supplies the value of
``NAME`` from a file (Docker and Kubernetes secrets).
"""

from __future__ import annotations

import os
from pathlib import Path


class ConfigError(RuntimeError):
    """A configuration variable is missing or malformed."""


def _raw(name: str) -> str | None:
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        if os.environ.get(name):
            raise ConfigError(f"set {name} or {name}_FILE, not both")
        try:
            return Path(file_name).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{name}_FILE={file_name} cannot be read: {exc}") from exc
    return os.environ.get(name)


def env_str(name: str, default: str | None = None) -> str | None:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_required(name: str) -> str:
    value = env_str(name)
    if value is None:
        raise ConfigError(f"{name} must be set")
    return value


def env_bool(name: str, default: bool) -> bool:
    value = env_str(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ConfigError(f"{name} must be 'true' or 'false', not {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = env_str(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, not {value!r}") from exc
    if minimum is not None and number < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {number}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = env_str(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_networks(name: str) -> list[str]:
    """Comma-separated IP addresses or CIDR networks, checked at start (a typo must not mean
    "trust nobody" or "trust everybody" silently)."""
    import ipaddress

    values = env_list(name, [])
    for value in values:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError as exc:
            raise ConfigError(f"{name}: {value!r} is not an IP address or network") from exc
    return values
