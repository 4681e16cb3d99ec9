"""Fixtures borrowed from the app suites (real git remotes, TLS servers, webhook receivers)."""

from __future__ import annotations

from tests.reviews.conftest import data_dir, remote, repository  # noqa: F401
