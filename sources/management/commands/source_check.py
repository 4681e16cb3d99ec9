"""Validate a source directory or HTTPS URL without saving anything."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from sources import fetchers
from sources.fetchers.factory import make_fetcher
from sources.fetchers.read import normalize_location, read_source


def check(location: str, credential: fetchers.Credential | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {
        "source": location,
        "ok": False,
        "error": None,
        "manifest": None,
        "records": [],
        "rejected": [],
        "problems": [],
    }
    try:
        kind, identity = normalize_location(location)
    except fetchers.LocationError as exc:
        report["error"] = {"code": "bad-location", "message": str(exc)}
        return report
    report["source"] = identity
    fetcher = make_fetcher(
        kind, identity, policy=fetchers.policy_from_settings(), credential=credential
    )
    try:
        result = read_source(fetcher, now=timezone.now())
    except fetchers.SourceError as exc:
        report["error"] = {"code": exc.code, "message": exc.message}
        return report
    finally:
        fetcher.close()
    selection = result.selection
    report["ok"] = True
    report["manifest"] = {
        "name": result.manifest.name,
        "entries": len(result.manifest.entries) + len(result.manifest.rejected),
    }
    report["records"] = [
        {
            "id": item.record.id,
            "path": item.entry.path,
            "kind": item.record.kind,
            "scope": item.record.scope,
            "active": item.record.id in selection.active,
            "inactive_reason": selection.inactive.get(item.record.id),
        }
        for item in result.records
    ]
    report["rejected"] = [
        {"id": r.id, "path": r.path, "code": r.code, "message": r.message, "line": r.line}
        for r in result.rejections
    ]
    report["problems"] = [
        {"code": p.code, "ids": list(p.ids), "message": p.message} for p in selection.problems
    ]
    return report


class Command(BaseCommand):
    help = (
        "Validate an OpenMemories source (a directory or an HTTPS base URL) without saving "
        "anything. Exit status 0 when the source could be read, 1 otherwise."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", help="absolute directory path or https:// base URL")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--token-env",
            metavar="VAR",
            help="send a bearer token read from this environment variable (never an argument)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        credential = None
        if options["token_env"]:
            credential = fetchers.Credential(
                kind="bearer", token=os.environ.get(options["token_env"], "")
            )
        report = check(options["source"], credential)
        if options["json"]:
            self.stdout.write(json.dumps(report, ensure_ascii=False))
        else:
            self._print(report)
        if not report["ok"]:
            sys.exit(1)

    def _print(self, report: dict[str, Any]) -> None:
        write = self.stdout.write
        write(f"Source: {report['source']}")
        if report["error"]:
            write(
                self.style.ERROR(f"FAILED {report['error']['code']}: {report['error']['message']}")
            )
            return
        manifest = report["manifest"]
        write(f"Manifest: {manifest['name']!r}, {manifest['entries']} entries")
        active = sum(1 for r in report["records"] if r["active"])
        write(
            f"{len(report['records'])} valid records ({active} active), "
            f"{len(report['rejected'])} rejected, {len(report['problems'])} problems"
        )
        for record in report["records"]:
            state = "active" if record["active"] else record["inactive_reason"]
            write(f"  ok       {record['id']}  {record['path']}  [{record['kind']}, {state}]")
        for rejection in report["rejected"]:
            line = f":{rejection['line']}" if rejection.get("line") else ""
            write(
                self.style.WARNING(
                    f"  rejected {rejection['path'] or '-'}{line}  {rejection['code']}: "
                    f"{rejection['message']}"
                )
            )
        for problem in report["problems"]:
            write(self.style.WARNING(f"  problem  {problem['code']}: {problem['message']}"))
