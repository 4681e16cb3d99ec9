"""Review steps: a repository, its index (sync), batch approval, and the git baselines."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

from bench.steps.helpers import _team, _user, kept_scratch
from bench.steps.measure import Probe
from bench.steps.sources import embedding_deferred

# -- reviews --------------------------------------------------------------------------------


def review_setup(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from reviews.models import Repository

    team = _team(args["team"])
    Repository.objects.filter(team=team).delete()
    repository = Repository.objects.create(
        team=team, name="bench", remote_url=args["remote_url"], branch="main"
    )
    return {"repository_id": repository.pk}


def review_index(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from reviews.models import Memory
    from reviews.services.repositories import repository_sync

    with embedding_deferred(), probe():
        repository = repository_sync(repository_id=args["repository_id"])
    if not repository.last_sync_ok:
        raise RuntimeError(f"sync failed: {repository.last_error}")
    return {
        "memories": Memory.objects.filter(repository=repository).count(),
        "proposed": Memory.objects.filter(repository=repository, status="proposed").count(),
    }


def index_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """git clone of the remote, then read and parse every memory with the strict reader."""
    from formats import frontmatter

    target = kept_scratch("clone-strict-") / "copy"
    with probe():
        subprocess.run(["git", "clone", "--quiet", args["remote_url"], str(target)], check=True)
        count = 0
        for path in sorted((target / ".memoryrail" / "memories").glob("*.md")):
            frontmatter.parse(path.read_bytes())
            count += 1
    return {"memories": count}


def review_approve(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Approve every proposal in one batch; the push task runs eagerly when the batch commits."""
    from memoryadmin.audit import Actor
    from reviews.models import Decision, Memory
    from reviews.services.decisions import proposals_review

    repository_id = args["repository_id"]
    team_slug = args["team"]
    user = _user("bench-reviewer", [team_slug], role="reviewer")
    ids = list(
        Memory.objects.filter(repository_id=repository_id, status="proposed").values_list(
            "pk", flat=True
        )
    )
    # A batch approval comes through a page or the API, in a process whose URLconf is loaded;
    # the step's fresh process would import every app's views (~3 s) at the first reverse().
    # It has reversed URLs too (each page links to others): the first reverse() of a process
    # builds the resolver's reverse table (~37 ms here), which the decision's webhook event
    # would otherwise pay inside the timed section.
    from django.urls import get_resolver, reverse

    get_resolver().url_patterns  # noqa: B018
    reverse("healthz")
    # Likewise the Celery app: a web or worker process has finalized it (imported every
    # app's tasks) before it queues or runs its first task; this fresh process would do it
    # at the batch's on-commit send, inside the timed section (2.45 s here, loaded).
    from celery import current_app

    current_app.loader.import_default_modules()
    current_app.finalize()
    # and a worker has run a task before (Celery builds a task's tracer at its first run):
    # with nothing pending yet, the push task returns at once
    from reviews.tasks import repository_push_pending

    repository_push_pending.apply(args=[repository_id])
    start = time.time()
    with embedding_deferred(), probe():
        decisions = proposals_review(
            actor=Actor(user=user), team=_team(team_slug), memory_ids=ids, kind="approve"
        ).decisions
    decision = Decision.objects.get(pk=decisions[0].pk)
    if decision.state != "pushed":
        raise RuntimeError(f"decision {decision.state}: {decision.state_detail}")
    pushed = decision.finished_at.timestamp() - start
    return {"proposals": len(ids), "pushed_seconds": pushed, "commit": decision.commit_sha}


BASELINE_SCRIPT = r"""set -eu
xargs -a "$1" sed -i -e 's/^status: "proposed"/status: "active"/' \
  -e 's/^updated: .*/updated: "2026-06-01T00:00:00.000Z"/'
git add -A
git commit --quiet --no-verify -m "Approve $(wc -l < "$1") proposals"
git push --quiet origin HEAD:refs/heads/main
"""


def review_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The same edits made by a shell script, then git add -A && git commit && git push."""
    from bench.data import GIT_ENV

    scratch = kept_scratch("git-")
    bare = scratch / "remote.git"
    shutil.copytree(args["bare"], bare)
    clone = scratch / "clone"
    subprocess.run(["git", "clone", "--quiet", bare.as_uri(), str(clone)], check=True)
    paths = scratch / "paths.txt"
    paths.write_text("\n".join(args["paths"]) + "\n", encoding="utf-8")
    script = scratch / "approve.sh"
    script.write_text(BASELINE_SCRIPT, encoding="utf-8")
    with probe():
        subprocess.run(
            ["bash", str(script), str(paths)],
            cwd=clone,
            env={**os.environ, **GIT_ENV},
            check=True,
        )
    return {"proposals": len(args["paths"])}
