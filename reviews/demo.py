"""Demo data: a local bare remote with a MemoryRail history, registered and synced (idempotent)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from django.conf import settings
from django.db import transaction

from formats import memoryrail
from memoryadmin.audit import Actor
from memoryadmin.models import Team
from reviews.models import Repository
from reviews.services.repositories import repository_create, repository_sync

NAME = "demo-app"
AGENT = {
    "GIT_AUTHOR_NAME": "Coding Agent",
    "GIT_AUTHOR_EMAIL": "agent@example.org",
    "GIT_COMMITTER_NAME": "Coding Agent",
    "GIT_COMMITTER_EMAIL": "agent@example.org",
    "GIT_TERMINAL_PROMPT": "0",
}


def _memory(memory_id: str, type: str, title: str, status: str, body: str, **extra: object) -> str:
    meta = {
        "id": memory_id,
        "type": type,
        "title": title,
        "status": status,
        "created": f"{memory_id[:4]}-{memory_id[4:6]}-{memory_id[6:8]}T09:00:00.000Z",
        "updated": f"{memory_id[:4]}-{memory_id[4:6]}-{memory_id[6:8]}T09:00:00.000Z",
        **extra,
    }
    return memoryrail.render(meta, body)


HISTORY: list[tuple[str, dict[str, str]]] = [
    (
        "Start MemoryRail",
        {
            ".memoryrail/config.json": json.dumps({"version": 1, "review": "agents"}) + "\n",
            "AGENTS.md": "# Working on demo-app\n\nRead the project memory below first.\n\n"
            "<!-- memoryrail:begin -->\n<!-- memoryrail:end -->\n",
            "src/db/schema.sql": "create table account (id bigint primary key);\n",
            ".memoryrail/memories/20260105-use-postgres.md": _memory(
                "20260105-use-postgres",
                "decision",
                "Use PostgreSQL for every environment",
                "active",
                "One database engine everywhere keeps migrations honest.\n",
                tags=["db"],
                links=["src/db"],
            ),
            ".memoryrail/memories/20260106-no-raw-sql-in-views.md": _memory(
                "20260106-no-raw-sql-in-views",
                "constraint",
                "Views never run raw SQL",
                "active",
                "Queries live in `selectors.py` so they can be tested and counted.\n",
                pinned=True,
            ),
            ".memoryrail/memories/20260107-timezone-gotcha.md": _memory(
                "20260107-timezone-gotcha",
                "gotcha",
                "Store times in UTC, render in the browser",
                "active",
                "We once shipped local times into the export. **Never again.**\n",
            ),
        },
    ),
    (
        "Agent proposes three memories",
        {
            ".memoryrail/memories/20260210-use-sqlite-embedded.md": _memory(
                "20260210-use-sqlite-embedded",
                "decision",
                "Use SQLite for the embedded single-user mode",
                "proposed",
                "Single-user installs should not need a database server.\n\n"
                "- PostgreSQL stays the default for teams\n- SQLite only for `make run`\n",
                supersedes="20260105-use-postgres",
                links=["src/db"],
            ),
            ".memoryrail/memories/20260211-deploy-credentials.md": _memory(
                "20260211-deploy-credentials",
                "gotcha",
                "The deploy job needs the AWS key in its environment",
                "proposed",
                "Set AKIAIOSFODNN7EXAMPLE as the access key id before deploying.\n",
            ),
            ".memoryrail/memories/20260212-cache-manifest-attempt.md": _memory(
                "20260212-cache-manifest-attempt",
                "attempt",
                "Caching the manifest in memory failed under load",
                "proposed",
                "The cache grew without bound with many sources; reverted.\n",
            ),
        },
    ),
]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **AGENT}, check=True, capture_output=True
    )


def build_remote(root: Path) -> Path:
    """Create DATA_DIR/demo/memoryrail.git with the demo history unless it exists."""
    bare = root / "memoryrail.git"
    if (bare / "HEAD").is_file():
        return bare
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = root / "seed"
    _git(root, "clone", "--quiet", bare.as_uri(), str(seed))
    _git(seed, "checkout", "--quiet", "-B", "main")
    for message, files in HISTORY:
        for name, content in files.items():
            target = seed / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
            _git(seed, "add", name)
        _git(seed, "commit", "--quiet", "-m", message)
    _git(seed, "push", "--quiet", "origin", "main")
    return bare


def seed(*, team: Team, user: object) -> str | None:
    bare = build_remote(Path(settings.DATA_DIR) / "demo")
    if Repository.objects.filter(team=team, name=NAME).exists():
        return None
    with transaction.atomic():
        repository = repository_create(
            actor=Actor.system(), team=team, name=NAME, remote_url=bare.as_uri(), allow_local=True
        )
    repository = repository_sync(repository_id=repository.pk)
    return f"Reviews: registered {NAME} ({bare.as_uri()}), {repository.memories.count()} memories."
