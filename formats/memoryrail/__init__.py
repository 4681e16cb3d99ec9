"""MemoryRail 1 format library: no Django import (a test checks)."""

from __future__ import annotations

from formats.memoryrail.agentfiles import AGENT_FILES, has_block, render_block, replace_block
from formats.memoryrail.config import (
    ConfigError,
    config_from_entry,
    find_root,
    load_config,
    parse_config,
)
from formats.memoryrail.core import parse_memory, read_project
from formats.memoryrail.entries import read_entries
from formats.memoryrail.fields import format_timestamp, parse_timestamp
from formats.memoryrail.model import (
    CONFIG_PATH,
    DURABLE_TYPES,
    ERROR,
    MAX_MEMORY_BYTES,
    MEMORIES_DIR,
    REGULAR_MODES,
    STATUSES,
    SYMLINK_MODE,
    TYPE_PREFIXES,
    WARNING,
    Config,
    Memory,
    Problem,
    Project,
    RefError,
    RefIndex,
    is_ref,
    short_ref,
)
from formats.memoryrail.secrets import RULES, SecretFinding, scan_text
from formats.memoryrail.staleness import (
    LINK_OUTSIDE_REPO,
    REVIEW_STATUSES,
    Stale,
    check_staleness,
    link_escapes,
)
from formats.memoryrail.writer import WriteError, approve, encode_value, render, supersede

__all__ = [
    "AGENT_FILES",
    "CONFIG_PATH",
    "DURABLE_TYPES",
    "ERROR",
    "LINK_OUTSIDE_REPO",
    "MAX_MEMORY_BYTES",
    "MEMORIES_DIR",
    "REGULAR_MODES",
    "REVIEW_STATUSES",
    "RULES",
    "STATUSES",
    "SYMLINK_MODE",
    "TYPE_PREFIXES",
    "WARNING",
    "Config",
    "ConfigError",
    "Memory",
    "Problem",
    "Project",
    "RefError",
    "RefIndex",
    "SecretFinding",
    "Stale",
    "WriteError",
    "approve",
    "check_staleness",
    "config_from_entry",
    "encode_value",
    "find_root",
    "format_timestamp",
    "has_block",
    "is_ref",
    "link_escapes",
    "load_config",
    "parse_config",
    "parse_memory",
    "parse_timestamp",
    "read_entries",
    "read_project",
    "render",
    "render_block",
    "replace_block",
    "scan_text",
    "short_ref",
    "supersede",
]
