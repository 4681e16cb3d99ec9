"""Check a MemoryRail working copy: config, memory files, secrets, staleness, ambiguous refs."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from formats import memoryrail
from reviews.git import GitError, WorkingCopy
from reviews.gitenv import Credential
from reviews.githistory import History


def _copy(root: Path) -> WorkingCopy:
    return WorkingCopy(
        path=root, remote_url="", branch="", credential=Credential(), lock_name="memoryrail-check"
    )


def _read(root: Path) -> tuple[memoryrail.Project, dict[str, bytes], dict[str, str] | None]:
    """The project, the bytes of each regular memory file (for the secret scan) and, for a
    review working copy (read from HEAD's objects), the memories folder's entries."""
    copy = _copy(root)
    if copy.sparse_written():  # a review working copy: its memory files are in git's objects
        try:
            project, entries, blobs = copy.project("HEAD")
        except GitError:
            pass  # no commit yet: what is on disk
        else:  # the blobs the project was read from (one over the size limit is never read)
            return project, dict(sorted(blobs.items())), {p: e.mode for p, e in entries.items()}
    project = memoryrail.read_project(root)
    files = {}
    directory = root / memoryrail.MEMORIES_DIR
    for file in sorted(directory.glob("*.md")) if directory.is_dir() else []:
        if file.is_file() and not file.is_symlink():
            files[f"{memoryrail.MEMORIES_DIR}/{file.name}"] = file.read_bytes()
    return project, files, None


def _last_commit_times(root: Path):  # type: ignore[no-untyped-def]
    """Every link's time in one walk of the history when `root` is the top of a git working
    copy (git's paths are then the links' paths); else one `git log` per link (None where
    git has no answer: no repository, no commit yet)."""
    copy = _copy(root)

    def last(link: str) -> datetime | None:
        try:
            return copy.last_commit_time(link)
        except GitError:
            return None

    def times(links: list[str]) -> dict[str, datetime | None]:
        if (root / ".git").exists():
            try:
                head = copy.rev_parse("HEAD")
                return History(copy, head, folder=memoryrail.MEMORIES_DIR).link_times(links)
            except GitError:
                pass  # no commit yet, or not what it seemed: ask per link
        return {link: last(link) for link in links}

    return times


def check(path: Path) -> dict:
    root = memoryrail.find_root(path) or path.resolve()
    project, files, entries = _read(root)
    secrets = []
    for rel, data in files.items():
        # a file name that is not UTF-8 is a problem of read_project, never read
        if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in rel):
            text = data.decode("utf-8", errors="replace")
            secrets += memoryrail.scan_text(text, path=rel)
    stale = memoryrail.check_staleness(
        project.memories,
        root=root,
        last_commit_times=_last_commit_times(root),
        memory_entries=entries,
    )
    ambiguous = memoryrail.RefIndex(project.memories).ambiguous()
    problems = list(project.problems)
    ok = project.ok and not any(s.level == memoryrail.ERROR for s in stale)
    return {
        "ok": ok,
        "config": (
            {"version": project.config.version, "review": project.config.review}
            if project.config
            else None
        ),
        "memories": [
            {"id": m.id, "ref": m.ref, "type": m.type, "status": m.status, "path": m.path}
            for m in project.memories
        ],
        "problems": [p.as_dict() for p in problems],
        "secrets": [s.as_dict() for s in secrets],
        "stale": [s.as_dict() for s in stale],
        "ambiguous_refs": [{"ref": ref, "ids": ids} for ref, ids in ambiguous.items()],
    }


class Command(BaseCommand):
    help = "Validate a MemoryRail working copy; exit 1 on any error-level problem."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("path")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        path = Path(options["path"])
        if not path.is_dir():
            raise CommandError(f"{path} is not a directory")
        report = check(path)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, sort_keys=False))
        else:
            self.stdout.write(f"{len(report['memories'])} memories")
            for p in report["problems"]:
                self.stdout.write(f"{p['path']}:{p['line'] or ''} {p['code']} {p['message']}")
            for s in report["secrets"]:
                self.stdout.write(f"{s['path']}:{s['line']} secret ({s['rule']})")
            for s in report["stale"]:
                self.stdout.write(f"{s['id']} {s['code']} {s['link']}")
            for a in report["ambiguous_refs"]:
                self.stdout.write(f"ambiguous {a['ref']}: {', '.join(a['ids'])}")
        if not report["ok"]:
            raise SystemExit(1)
