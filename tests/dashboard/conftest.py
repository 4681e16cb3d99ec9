"""Reuse the reviews tests' real-git fixtures (bare remotes over file://)."""

from __future__ import annotations

from tests.reviews.conftest import data_dir, remote, repository  # noqa: F401
