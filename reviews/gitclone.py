"""How a working copy is made, and how an existing one is recognised as a clone of its remote's
branch: one `git clone` whose template holds the sparse-checkout file before its checkout.

No git command runs here (that is `reviews.git.WorkingCopy`, which runs the clone through the
address guard): this module builds the clone's arguments and reads a copy's settings.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from formats import memoryrail

# Git's own sparse checkout (non-cone patterns, git >= 2.25): the memory files stay in the
# objects; everything reads them from there (`WorkingCopy.project`), and writing 5,000 files
# was most of a sync's git time.
SPARSE_PATTERNS = f"/*\n!/{memoryrail.MEMORIES_DIR}/\n"
# its settings, given to a clone and set on a copy made before it
SPARSE_CONFIG = {"core.sparseCheckoutCone": "false", "core.sparseCheckout": "true"}
# The settings `ensure_clone` reads of an existing copy (`git config --get-regexp`).
SETTINGS = r"^(remote\.origin\.(url|fetch)|core\.sparsecheckout)$"
ALL_BRANCHES = "+refs/heads/*:refs/remotes/origin/*"  # a copy made by init + `remote add`


@contextmanager
def clone_arguments(remote_url: str, branch: str) -> Iterator[list[str]]:
    """`git clone` of the branch alone into ".", where init, remote add, two config writes,
    fetch, checkout and clean ran before: its template's sparse-checkout file and the
    `--config` settings are in place before its checkout (valid while inside)."""
    with tempfile.TemporaryDirectory(prefix="memoryadmin-template-") as template:
        (Path(template) / "info").mkdir()
        (Path(template) / "info" / "sparse-checkout").write_text(SPARSE_PATTERNS, "utf-8")
        yield [
            "clone",
            "--quiet",
            "--no-tags",
            "--single-branch",
            "--origin=origin",  # whatever clone.defaultRemoteName says
            f"--branch={branch}",
            f"--template={template}",
            *(f"--config={key}={value}" for key, value in SPARSE_CONFIG.items()),
            "--",
            remote_url,
            ".",
        ]


def clone_state(settings: str, *, remote_url: str, branch: str) -> tuple[bool, bool]:
    """(a clone of this remote whose pushes update the branch's remote-tracking ref, its
    sparse checkout set) from the `SETTINGS` lines of an existing copy."""
    current: dict[str, list[str]] = {}
    for line in settings.splitlines():
        key, _, value = line.partition(" ")
        current.setdefault(key, []).append(value)
    tracked = {ALL_BRANCHES, f"+refs/heads/{branch}:refs/remotes/origin/{branch}"}
    ours = current.get("remote.origin.url") == [remote_url] and bool(
        tracked & set(current.get("remote.origin.fetch", []))
    )
    return ours, current.get("core.sparsecheckout") == ["true"]
