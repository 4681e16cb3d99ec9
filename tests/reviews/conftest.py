"""Real git for the reviews tests: bare remotes over file://, clones that push from elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from memoryadmin.audit import Actor
from reviews.services.repositories import repository_create, repository_sync

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Agent Smith",
    "GIT_AUTHOR_EMAIL": "agent@example.org",
    "GIT_COMMITTER_NAME": "Agent Smith",
    "GIT_COMMITTER_EMAIL": "agent@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def memory_text(
    memory_id: str,
    *,
    type: str = "decision",
    title: str = "A title",
    status: str = "active",
    body: str = "Why it matters.\n",
    updated: str = "2026-01-01T00:00:00.000Z",
    **extra: object,
) -> str:
    meta = {
        "id": memory_id,
        "type": type,
        "title": title,
        "status": status,
        "created": "2026-01-01T00:00:00.000Z",
        "updated": updated,
        **extra,
    }
    lines = "".join(f"{key}: {json.dumps(value)}\n" for key, value in meta.items())
    return f"---\n{lines}---\n{body}"


AGENTS_MD = (
    "# Agents\n\nHand-written intro.\n\n"
    "<!-- memoryrail:begin -->\nold\n<!-- memoryrail:end -->\n\nFooter.\n"
)


@dataclass
class Remote:
    bare: Path
    root: Path

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def clone(self, name: str) -> Path:
        path = self.root / name
        if not path.exists():
            git(self.root, "clone", "--quiet", "--branch", "main", self.url, str(path))
        else:
            git(path, "pull", "--quiet", "--ff-only")
        return path

    def commit(
        self, files: dict[str, str | None], message: str, *, clone: str = "elsewhere"
    ) -> str:
        """Commit files (None deletes) from a second clone and push: the remote moves."""
        path = self.clone(clone)
        git(path, "pull", "--quiet", "--ff-only")
        for name, content in files.items():
            target = path / name
            if content is None:
                git(path, "rm", "--quiet", name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
            git(path, "add", name)
        git(path, "commit", "--quiet", "-m", message)
        git(path, "push", "--quiet", "origin", "main")
        return git(path, "rev-parse", "HEAD").strip()

    def show(self, path: str, rev: str = "main") -> str:
        return git(self.bare, "show", f"{rev}:{path}")

    def log(self, fmt: str = "%an|%ae|%cn|%s", rev: str = "main") -> list[str]:
        return git(self.bare, "log", f"--format={fmt}", rev).splitlines()

    def exists(self, path: str, rev: str = "main") -> bool:
        return bool(git(self.bare, "ls-tree", "--name-only", rev, "--", path).strip())


M = ".memoryrail/memories"


def seed_files() -> dict[str, str | None]:
    return {
        ".memoryrail/config.json": json.dumps({"version": 1, "review": "agents"}) + "\n",
        f"{M}/20260101-use-postgres.md": memory_text(
            "20260101-use-postgres", title="Use PostgreSQL", links=["src/db"]
        ),
        f"{M}/20260102-no-orm-magic.md": memory_text(
            "20260102-no-orm-magic", type="constraint", title="Keep SQL explicit"
        ),
        f"{M}/20260201-use-sqlite.md": memory_text(
            "20260201-use-sqlite",
            title="Use SQLite for the embedded mode",
            status="proposed",
            supersedes="20260101-use-postgres",
            body="Small installs need no server.\n\n<script>alert(1)</script>\n"
            "[click](javascript:alert(1))\n",
            custom_field={"keep": ["me", 1]},
        ),
        f"{M}/20260202-deploy-key.md": memory_text(
            "20260202-deploy-key",
            type="gotcha",
            title="The deploy needs the token",
            status="proposed",
            body="Use token=ghp_" + "a1B2c3D4" * 5 + " when deploying.\n",
        ),
        f"{M}/20260203-cache-attempt.md": memory_text(
            "20260203-cache-attempt",
            type="attempt",
            title="Caching the manifest failed",
            status="proposed",
        ),
        "src/db/schema.sql": "create table t (id int);\n",
        "AGENTS.md": AGENTS_MD,
    }


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    settings.DATA_DIR = tmp_path / "data"
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


def make_remote(root: Path) -> Remote:
    root.mkdir(parents=True, exist_ok=True)
    bare = root / "remote.git"
    git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = root / "seed"
    git(root, "init", "--quiet", "--initial-branch=main", str(seed))
    remote = Remote(bare=bare, root=root)
    for name, content in seed_files().items():
        target = seed / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content or "", encoding="utf-8")
    git(seed, "add", "-A")
    git(seed, "commit", "--quiet", "-m", "Seed memories")
    git(seed, "remote", "add", "origin", remote.url)
    git(seed, "push", "--quiet", "origin", "main")
    return remote


@pytest.fixture
def remote(tmp_path) -> Remote:
    return make_remote(tmp_path / "git")


@pytest.fixture
def repository(db, team, remote, data_dir):  # type: ignore[no-untyped-def]
    """A Repository on the seeded remote, synced (tasks run eagerly)."""
    from django.db import transaction

    with transaction.atomic():
        repo = repository_create(actor=Actor.system(), team=team, name="app", remote_url=remote.url)
    repository_sync(repository_id=repo.pk)
    repo.refresh_from_db()
    return repo


@pytest.fixture
def blobs_read(monkeypatch) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """The blobs each `WorkingCopy.contents` call (one `cat-file --batch`) asked for."""
    from reviews.git import WorkingCopy

    batches: list[list[str]] = []
    contents = WorkingCopy.contents

    def counted(copy, shas):  # type: ignore[no-untyped-def]
        shas = list(shas)
        batches.append(shas)
        return contents(copy, shas)

    monkeypatch.setattr(WorkingCopy, "contents", counted)
    return batches
