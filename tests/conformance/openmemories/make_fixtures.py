"""Regenerate the conformance fixtures: python tests/conformance/openmemories/make_fixtures.py"""

import json
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent
shutil.rmtree(ROOT / "records", ignore_errors=True)
shutil.rmtree(ROOT / "sources", ignore_errors=True)
shutil.rmtree(ROOT / "outside", ignore_errors=True)
BASE = {
    "openmemories": "'0.1'",
    "id": "'r'",
    "title": "'A record'",
    "kind": "'fact'",
    "scope": "'user'",
    "created": "'2026-11-12T12:00:00Z'",
    "updated": "'2026-11-12T12:00:00Z'",
}


def rec(overrides=None, drop=(), extra="", body="Some text.\n", raw_front=None):
    fields = dict(BASE)
    fields.update(overrides or {})
    for k in drop:
        fields.pop(k)
    front = (
        raw_front
        if raw_front is not None
        else "".join(f"{k}: {v}\n" for k, v in fields.items()) + extra
    )
    return f"---\n{front}---\n\n{body}"


valid = {
    "minimal": rec(),
    "full": rec(
        extra=(
            "tags: ['a', 'b']\nprovenance:\n  source: 'https://example.org/readme'\n"
            "  author: 'Ann'\nexpires: '2999-01-01T00:00:00Z'\nsupersedes: ['old']\n"
            "x-team: {nested: [1, 2]}\n"
        )
    ),
    "unquoted-timestamps": rec(
        {"created": "2026-11-12T12:00:00Z", "updated": "2026-11-13T12:00:00Z"}
    ),
    "fractional-seconds": rec(
        {"created": "'2026-11-12T12:00:00.5Z'", "updated": "'2026-11-12T12:00:00.750Z'"}
    ),
    "scope-urn": rec({"scope": "'urn:example:project'"}),
    "scope-https": rec({"scope": "'https://example.org/team/project'"}),
    "kind-preference": rec({"kind": "preference"}),
    "kind-project": rec({"kind": "project"}),
    "kind-procedure": rec({"kind": "procedure"}),
    "extension-keys-kept": rec(extra="x-anything: 'kept'\nx-other: 3\n"),
    "crlf-line-endings": rec().replace("\n", "\r\n"),
    "document-end-marker": rec().replace("---\n\nSome", "...\n\nSome"),
}
invalid = {
    "unsupported-version--0.2": rec({"openmemories": "'0.2'"}),
    "unsupported-version--unquoted-float": rec({"openmemories": "0.1"}),
    "unsupported-version--1.0": rec({"openmemories": "'1.0'"}),
    **{
        f"missing-field--{k}": rec(drop=(k,))
        for k in ["openmemories", "id", "title", "kind", "scope", "created", "updated"]
    },
    "empty-field--id": rec({"id": "''"}),
    "empty-field--title": rec({"title": "'   '"}),
    "bad-type--id-number": rec({"id": "42"}),
    "bad-title--multiline": rec({"title": '"line one\\nline two"'}),
    "bad-kind--unknown": rec({"kind": "'opinion'"}),
    "bad-kind--case": rec({"kind": "'Fact'"}),
    "bad-scope--relative": rec({"scope": "'team/project'"}),
    "bad-scope--fragment": rec({"scope": "'https://example.org/p#x'"}),
    "bad-scope--space": rec({"scope": "'https://example.org/a b'"}),
    "bad-timestamp--offset": rec({"created": "'2026-11-12T12:00:00+00:00'"}),
    "bad-timestamp--no-zone": rec({"created": "'2026-11-12T12:00:00'"}),
    "bad-timestamp--date-only": rec({"created": "'2026-11-12'"}),
    "bad-timestamp--impossible-date": rec({"created": "'2026-02-30T12:00:00Z'"}),
    "bad-timestamp--lowercase-z": rec({"updated": "'2026-11-12T12:00:00z'"}),
    "bad-timestamp--expires": rec(extra="expires: 'next week'\n"),
    "updated-before-created": rec({"updated": "'2026-11-11T12:00:00Z'"}),
    "empty-body--blank": rec(body="   \n\n"),
    "empty-body--none": rec(body=""),
    "yaml-duplicate-key": rec(extra="title: 'again'\n"),
    "yaml-duplicate-key--nested": rec(extra="provenance:\n  author: 'a'\n  author: 'b'\n"),
    "yaml-alias": rec(extra="tags: &t ['a']\nx-copy: *t\n"),
    "yaml-tag--custom": rec(extra="x-thing: !custom 'value'\n"),
    "yaml-tag--python": rec(extra="x-thing: !!python/object:os.system 'ls'\n"),
    "yaml-merge-key": rec(extra="x-a: {b: 1}\nx-c:\n  <<: {b: 2}\n"),
    "frontmatter-not-mapping": rec(raw_front="- a\n- b\n"),
    "frontmatter-missing": "No front matter here.\n",
    "frontmatter-unterminated": "---\nopenmemories: '0.1'\n",
    "unknown-key--not-extension": rec(extra="priority: 'high'\n"),
    "bad-tags--string": rec(extra="tags: 'a, b'\n"),
    "bad-tags--number-item": rec(extra="tags: ['a', 3]\n"),
    "bad-supersedes--string": rec(extra="supersedes: 'old'\n"),
    "bad-provenance--string": rec(extra="provenance: 'somewhere'\n"),
    "bad-provenance--relative-source": rec(extra="provenance:\n  source: 'README.md'\n"),
    "yaml-syntax": rec(extra="x-bad: [unclosed\n"),
}
(ROOT / "records" / "valid").mkdir(parents=True)
(ROOT / "records" / "invalid").mkdir(parents=True)
for name, text in valid.items():
    (ROOT / "records" / "valid" / f"{name}.md").write_bytes(text.encode())
for name, text in invalid.items():
    (ROOT / "records" / "invalid" / f"{name}.md").write_bytes(text.encode())
(ROOT / "records" / "invalid" / "not-utf8.md").write_bytes(
    rec({"title": "'caf\xe9'"}).encode("latin-1")
)
(ROOT / "records" / "invalid" / "nul-byte.md").write_bytes(rec(body="a\x00b\n").encode())

# ---- sources
S = ROOT / "sources"


def source(name, manifest, files=None, expected=None, raw_manifest=None):
    d = S / name
    d.mkdir(parents=True)
    if raw_manifest is not None:
        (d / "memories.json").write_bytes(
            raw_manifest.encode() if isinstance(raw_manifest, str) else raw_manifest
        )
    elif manifest is not None:
        (d / "memories.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for path, text in (files or {}).items():
        p = d / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (d / "expected.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")
    return d


def m(*entries, name="Fixture"):
    return {
        "openmemories": "0.1",
        "name": name,
        "memories": [{"id": i, "path": p} for i, p in entries],
    }


def r(i, extra=""):
    return rec({"id": repr(i)}, extra=extra)


def ok(active=(), inactive=None, rejected=None, problems=()):
    return {
        "error": None,
        "active": sorted(active),
        "inactive": inactive or {},
        "rejected": rejected or {},
        "problems": [list(p) for p in problems],
    }


def err(code):
    return {"error": code}


source(
    "valid-basic",
    m(("a", "records/a.md"), ("b", "b.md")),
    {"records/a.md": r("a"), "b.md": r("b")},
    ok(["a", "b"]),
)
source("empty-memories", m(), {}, ok())
source(
    "extension-keys-in-manifest",
    {**m(("a", "a.md")), "x-generator": "test"},
    {"a.md": r("a")},
    ok(["a"]),
)
source("manifest-missing", None, {"a.md": r("a")}, err("not-found"))
source("manifest-bad-json", None, {}, err("json-syntax"), raw_manifest='{"openmemories": "0.1",')
source(
    "manifest-duplicate-key",
    None,
    {},
    err("json-duplicate-key"),
    raw_manifest='{"openmemories": "0.1", "name": "a", "name": "b", "memories": []}',
)
source(
    "manifest-nan",
    None,
    {},
    err("json-constant"),
    raw_manifest='{"openmemories": "0.1", "name": "a", "memories": [], "x-n": NaN}',
)
source("manifest-not-object", None, {}, err("manifest-not-object"), raw_manifest="[]")
source(
    "manifest-not-utf8",
    None,
    {},
    err("not-utf8"),
    raw_manifest=b'{"openmemories": "0.1", "name": "caf\xe9", "memories": []}',
)
source(
    "manifest-unsupported-version", {**m(), "openmemories": "0.2"}, {}, err("unsupported-version")
)
source("manifest-missing-version", {"name": "x", "memories": []}, {}, err("missing-field"))
source("manifest-empty-name", m(name=""), {}, err("bad-name"))
source(
    "manifest-memories-not-array",
    {"openmemories": "0.1", "name": "x", "memories": {}},
    {},
    err("bad-memories"),
)
source("manifest-unknown-key", {**m(), "records": []}, {}, err("unknown-key"))
bad_paths = {
    "scheme": "https://example.org/a.md",
    "scheme-relative-colon": "c:a.md",
    "authority": "//host/a.md",
    "leading-slash": "/etc/a.md",
    "backslash": "records\\a.md",
    "empty-segment": "records//a.md",
    "dot": "./a.md",
    "dotdot": "records/../a.md",
    "percent": "records/%2e%2e/a.md",
    "query": "a.md?x=1",
    "fragment": "a.md#top",
    "not-md": "a.txt",
    "trailing-slash": "records/",
}
source(
    "bad-paths",
    m(("good", "good.md"), *[(k, v) for k, v in bad_paths.items()]),
    {"good.md": r("good"), "a.md": r("a")},
    ok(["good"], rejected={k: "bad-path" for k in bad_paths}),
)
source(
    "bad-entries",
    {
        "openmemories": "0.1",
        "name": "x",
        "memories": [
            "a.md",
            {"id": "", "path": "a.md"},
            {"id": "b"},
            {"id": "c", "path": "c.md", "title": "x"},
        ],
    },
    {},
    {
        "error": None,
        "active": [],
        "inactive": {},
        "rejected_codes": ["bad-entry", "bad-entry", "bad-entry", "unknown-key"],
        "problems": [],
    },
)
source(
    "duplicate-ids",
    m(("a", "a.md"), ("a", "a2.md"), ("b", "b.md")),
    {"a.md": r("a"), "a2.md": r("a"), "b.md": r("b")},
    {
        "error": None,
        "active": ["b"],
        "inactive": {},
        "rejected_codes": ["duplicate-id", "duplicate-id"],
        "problems": [],
    },
)
source(
    "duplicate-paths",
    m(("a", "a.md"), ("b", "a.md"), ("c", "c.md")),
    {"a.md": r("a"), "c.md": r("c")},
    {
        "error": None,
        "active": ["c"],
        "inactive": {},
        "rejected_codes": ["duplicate-path", "duplicate-path"],
        "problems": [],
    },
)
source("id-mismatch", m(("a", "a.md")), {"a.md": r("other")}, ok([], rejected={"a": "id-mismatch"}))
source(
    "record-file-missing",
    m(("a", "a.md"), ("b", "b.md")),
    {"a.md": r("a")},
    ok(["a"], rejected={"b": "not-found"}),
)
source(
    "record-invalid-among-valid",
    m(("a", "a.md"), ("b", "b.md")),
    {"a.md": r("a"), "b.md": r("b", extra="title: 'dup'\n")},
    ok(["a"], rejected={"b": "yaml-duplicate-key"}),
)
# symlinks escaping the root (targets live in ../../outside, outside each source root)
(ROOT / "outside").mkdir()
(ROOT / "outside" / "secret.md").write_text(r("secret"))
(ROOT / "outside" / "nested").mkdir()
(ROOT / "outside" / "nested" / "secret.md").write_text(r("nested"))
d = source(
    "symlink-file-escape",
    m(("secret", "records/secret.md"), ("a", "a.md")),
    {"a.md": r("a")},
    ok(["a"], rejected={"secret": "outside-source"}),
)
(d / "records").mkdir()
os.symlink("../../../outside/secret.md", d / "records" / "secret.md")
d = source(
    "symlink-dir-escape",
    m(
        ("nested", "linked/secret.md"),
    ),
    {},
    ok([], rejected={"nested": "outside-source"}),
)
os.symlink("../../outside/nested", d / "linked")
d = source(
    "symlink-absolute-escape",
    m(
        ("passwd", "passwd.md"),
    ),
    {},
    ok([], rejected={"passwd": "outside-source"}),
)
os.symlink("/etc/hostname", d / "passwd.md")
d = source(
    "symlink-inside-is-fine",
    m(("real", "real.md"), ("alias", "alias.md")),
    {"real.md": r("real"), "target.md": r("alias")},
    ok(["real", "alias"]),
)
os.symlink("target.md", d / "alias.md")
d = source("symlink-manifest-escape", None, {}, err("outside-source"))
os.symlink("../../outside/memories.json", d / "memories.json")
(ROOT / "outside" / "memories.json").write_text(json.dumps(m()))
# selection
source(
    "supersedes",
    m(("new", "new.md"), ("old", "old.md")),
    {"new.md": r("new", "supersedes: ['old']\n"), "old.md": r("old")},
    ok(["new"], inactive={"old": "superseded"}),
)
source(
    "supersedes-chain",
    m(("c", "c.md"), ("b", "b.md"), ("a", "a.md")),
    {"c.md": r("c", "supersedes: ['b']\n"), "b.md": r("b", "supersedes: ['a']\n"), "a.md": r("a")},
    ok(["c"], inactive={"b": "superseded", "a": "superseded"}),
)
source(
    "supersedes-missing-target",
    m(
        ("new", "new.md"),
    ),
    {"new.md": r("new", "supersedes: ['gone']\n")},
    ok(["new"], problems=[("supersedes-missing", ["new", "gone"])]),
)
source(
    "supersedes-rejected-target",
    m(("new", "new.md"), ("bad", "bad.md")),
    {"new.md": r("new", "supersedes: ['bad']\n"), "bad.md": r("bad", "kind: 'x'\n")},
    ok(
        ["new"],
        rejected={"bad": "yaml-duplicate-key"},
        problems=[("supersedes-missing", ["new", "bad"])],
    ),
)
source(
    "supersedes-cycle",
    m(("a", "a.md"), ("b", "b.md")),
    {"a.md": r("a", "supersedes: ['b']\n"), "b.md": r("b", "supersedes: ['a']\n")},
    ok(["a", "b"], problems=[("supersedes-cycle", ["a", "b"])]),
)
source(
    "supersedes-self",
    m(
        ("a", "a.md"),
    ),
    {"a.md": r("a", "supersedes: ['a']\n")},
    ok(["a"], problems=[("supersedes-cycle", ["a"])]),
)
source(
    "expired",
    m(("gone", "gone.md"), ("live", "live.md")),
    {
        "gone.md": r("gone", "expires: '2020-01-01T00:00:00Z'\n"),
        "live.md": r("live", "expires: '2999-01-01T00:00:00Z'\n"),
    },
    ok(["live"], inactive={"gone": "expired"}),
)
print("ok")
