"""Writes to a team's brain (keyword-only, atomic, audited); import from the defining module."""
