"""The MemoryRail 1 format library, without the database."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats import memoryrail
from formats.memoryrail import agentfiles
from tests.reviews.conftest import memory_text

ROOT = Path(__file__).resolve().parents[2]
PATH = ".memoryrail/memories/20261010-use-drizzle.md"


def test_it_reads_the_spec_example_and_derives_the_ref():
    text = memory_text("20261010-use-drizzle", title="Use Drizzle over Prisma", tags=["db"])
    memory, problems = memoryrail.parse_memory(text, path=PATH)
    assert problems == []
    assert memory.ref.startswith("DEC-") and len(memory.ref) == 8
    import hashlib

    assert memory.ref[4:] == hashlib.sha1(b"20261010-use-drizzle").hexdigest()[:4]  # noqa: S324


def test_it_accepts_any_yaml_scalar_or_flow_sequence():
    text = (
        "---\nid: 20261010-use-drizzle\ntype: decision\ntitle: Use Drizzle\nstatus: active\n"
        "created: 2026-10-10T17:30:00Z\nupdated: 2026-10-10\ntags: db\nlinks: [src/db, 'lib']\n"
        "pinned: true\n---\nbody\n"
    )
    memory, problems = memoryrail.parse_memory(text, path=PATH)
    assert problems == [], problems
    assert memory.tags == ("db",) and memory.links == ("src/db", "lib") and memory.pinned


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"type": "idea"}, "type-invalid"),
        ({"status": "draft"}, "status-invalid"),
        ({"id": "20261010-other"}, "id-mismatch"),
        ({"updated": "yesterday"}, "timestamp-invalid"),
        ({"links": ["src\\db"]}, "link-invalid"),
        ({"title": ["a", "b"]}, "field-type"),
    ],
)
def test_it_reports_each_problem_with_a_code_and_line(change, code):
    meta = {
        "id": "20261010-use-drizzle",
        "type": "decision",
        "title": "T",
        "status": "active",
        "created": "2026-10-10T17:30:00.000Z",
        "updated": "2026-10-10T17:30:00.000Z",
    } | change
    text = "---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in meta.items()) + "---\n"
    memory, problems = memoryrail.parse_memory(text, path=PATH)
    assert memory is None
    assert [p.code for p in problems] == [code]
    key = next(iter(change))
    assert problems[0].line == list(meta).index(key) + 2


def test_it_reports_a_missing_field_and_strict_yaml_errors():
    _, problems = memoryrail.parse_memory("---\nid: x\n---\n", path=".memoryrail/memories/x.md")
    assert {p.code for p in problems} == {"field-missing"}
    _, problems = memoryrail.parse_memory("---\na: &x 1\nb: *x\n---\n", path=PATH)
    assert [p.code for p in problems] == ["yaml-alias"]


@pytest.mark.parametrize(
    ("config", "code"),
    [
        (b'{"version": 2}', "config-version"),
        (b'{"version": 1, "review": "humans"}', "config-review"),
        (b"[1]", "config-not-object"),
        (b"{", "config-invalid-json"),
    ],
)
def test_it_refuses_a_config_that_is_not_version_1(config, code):
    with pytest.raises(memoryrail.ConfigError) as info:
        memoryrail.parse_config(config)
    assert info.value.code == code


def test_it_finds_the_nearest_project_walking_up(tmp_path):
    (tmp_path / ".memoryrail").mkdir()
    (tmp_path / ".memoryrail/config.json").write_text('{"version": 1}')
    (tmp_path / "a/b").mkdir(parents=True)
    assert memoryrail.find_root(tmp_path / "a/b") == tmp_path.resolve()
    assert memoryrail.load_config(tmp_path).review == "off"


def _mem(memory_id: str, memory_type: str = "decision", **kw) -> memoryrail.Memory:  # type: ignore[no-untyped-def]
    memory, problems = memoryrail.parse_memory(
        memory_text(memory_id, type=memory_type, **kw), path=f".memoryrail/memories/{memory_id}.md"
    )
    assert memory is not None, problems
    return memory


def test_it_resolves_refs_and_reports_ambiguity_instead_of_guessing():
    # find two ids whose refs collide
    seen: dict[str, str] = {}
    pair = None
    for n in range(100000):
        memory_id = f"20260101-m{n}"
        ref = memoryrail.short_ref(memory_id, "decision")
        if ref in seen:
            pair = (seen[ref], memory_id)
            break
        seen[ref] = memory_id
    assert pair
    a, b, c = _mem(pair[0]), _mem(pair[1]), _mem("20260101-unique", "constraint")
    index = memoryrail.RefIndex([a, b, c])
    assert index.resolve(c.ref) is c and index.resolve(a.id) is a
    with pytest.raises(memoryrail.RefError) as info:
        index.resolve(a.ref)
    assert info.value.code == "ref-ambiguous" and info.value.ids == sorted(pair)
    assert index.ambiguous() == {a.ref: sorted(pair)}


def test_it_writes_only_what_the_decision_changes():
    text = (
        "---\nid: 20261010-use-drizzle\ntype: decision\ntitle: Use it\nstatus: proposed\n"
        "created: 2026-10-10T17:30:00Z\nupdated: 2026-10-10T17:30:00Z\nx-owner: {team: db}\n"
        "supersedes: 20261001-old\n---\r\nBody with *markdown*\r\n\r\n  trailing  \n"
    )
    memory, _ = memoryrail.parse_memory(text, path=PATH)
    written = memoryrail.approve(memory, now="2026-11-01T00:00:00.000Z")
    assert written.endswith("---\n" + memory.body)
    again, problems = memoryrail.parse_memory(written, path=PATH)
    assert problems == []
    assert list(again.meta) == list(memory.meta)
    assert again.meta == memory.meta | {"status": "active", "updated": "2026-11-01T00:00:00.000Z"}
    assert again.body == memory.body
    for line in written.splitlines()[1:9]:
        _, _, value = line.partition(": ")
        json.loads(value)  # every value is JSON


def test_it_advances_updated_even_with_a_slow_clock():
    memory = _mem("20260101-x", status="proposed", updated="2030-01-01T00:00:00.000Z")
    again, _ = memoryrail.parse_memory(
        memoryrail.approve(memory, now="2026-01-01T00:00:00.000Z"), path=memory.path
    )
    assert again.updated == "2030-01-01T00:00:00.001Z"


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(
                st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=8
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)
keys = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=12
).filter(lambda k: k not in memoryrail.core.REQUIRED_FIELDS)
bodies = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=200)


@settings(max_examples=300, deadline=None)
@given(
    extra=st.dictionaries(keys, values, max_size=5),
    body=bodies,
    title=st.text(
        st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30
    ).filter(lambda t: t.strip()),
)
def test_it_reads_back_what_it_writes(extra, body, title):
    meta = {
        "id": "20261010-use-drizzle",
        "type": "decision",
        "title": title,
        "status": "proposed",
        "created": "2026-10-10T17:30:00.000Z",
        "updated": "2026-10-10T17:30:00.000Z",
        **extra,
    }
    meta.pop("links", None), meta.pop("tags", None), meta.pop("pinned", None)
    meta.pop("supersedes", None), meta.pop("superseded_by", None)
    text = memoryrail.render(meta, body)
    document = memoryrail.core.parse(text)
    assert document.meta == meta
    assert document.body == body
    assert list(document.meta) == list(meta)
    # read back as JSON lines, with what the strict reader read: the very same document
    written = memoryrail.core.read_written(text.encode("utf-8"), known_meta=document.meta)
    try:
        json.dumps(meta, allow_nan=False)
    except ValueError:  # NaN or infinities are written as YAML: the strict reader's job
        assert written is None
    else:
        assert written == document


@pytest.mark.parametrize(
    ("text", "known"),
    [
        ('---\nid: "a"\n---\nbody', {"id": "b"}),  # the index read something else
        ('---\nid: "a" # note\n---\nbody', {"id": "a"}),  # YAML, not a JSON line
        ("---\nid: a\n---\nbody", {"id": "a"}),  # a plain YAML scalar
        ('---\nid: "a"\nid: "a"\n---\nbody', {"id": "a"}),  # a repeated key
        ('---\r\nid: "a"\r\n---\r\nbody', {"id": "a"}),  # CRLF: not our writer's
        ("---\nx: NaN\n---\nbody", {"x": "NaN"}),
        ('---\nid: "a"\nbody', {"id": "a"}),  # no closing line
    ],
)
def test_it_leaves_any_file_our_writer_did_not_write_to_the_strict_reader(text, known):
    assert memoryrail.core.read_written(text.encode("utf-8"), known_meta=known) is None


def test_it_scans_named_secret_rules_without_echoing_values():
    lines = [
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "aws AKIAIOSFODNN7EXAMPLE",
        "gh ghp_" + "x1" * 18,
        "gl glpat-" + "a" * 20,
        "slack xoxb-1234567890-abcdef",
        "stripe sk_live_" + "a1" * 12,
        "openai sk-proj-" + "A" * 30,
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "clone https://bob:s3cretpw@example.com/repo.git",
        'password = "hunter2hunter2"',
        "api_key: abcdef123456",
        "password = os.environ['PW']",
        "token: ${TOKEN}",
        "plain text about tokens and passwords",
    ]
    findings = memoryrail.scan_text("\n".join(lines), path="m.md")
    got = {(f.rule, f.line) for f in findings}
    expected = {
        ("private-key", 1),
        ("aws-access-key-id", 2),
        ("github-token", 3),
        ("gitlab-token", 4),
        ("slack-token", 5),
        ("stripe-key", 6),
        ("openai-style-key", 7),
        ("jwt", 8),
        ("url-credentials", 9),
        ("credential-assignment", 10),
        ("credential-assignment", 11),
    }
    assert expected <= got
    assert not {line for _, line in got} & {12, 13, 14}
    assert "hunter2" not in repr(findings) and "AKIA" not in repr(findings)


def test_it_checks_staleness_per_spec(tmp_path):
    from datetime import UTC, datetime

    (tmp_path / "src").mkdir()
    memory, _ = memoryrail.parse_memory(
        memory_text("20260101-x", links=["src", "gone"]), path=".memoryrail/memories/20260101-x.md"
    )
    stale = memoryrail.check_staleness(
        [memory],
        root=tmp_path,
        last_commit_times=lambda links: dict.fromkeys(links, datetime(2027, 1, 1, tzinfo=UTC)),
    )
    assert [(s.code, s.link) for s in stale] == [("maybe-stale", "src"), ("stale-link", "gone")]
    (tmp_path / "escape").symlink_to("/etc")
    memory, _ = memoryrail.parse_memory(
        memory_text("20260101-x", links=["escape"]), path=".memoryrail/memories/20260101-x.md"
    )
    stale = memoryrail.check_staleness(
        [memory], root=tmp_path, last_commit_times=lambda links: dict.fromkeys(links)
    )
    assert [s.code for s in stale] == ["link-outside-repo"]


def test_it_keeps_a_memory_whose_link_escapes_and_reports_it_as_a_staleness_error(tmp_path):
    links = ["../../etc/passwd", "/etc/passwd", "C:/x", "src/../../up", "gone"]
    memories = []
    for status in ("active", "proposed", "superseded"):
        memory, problems = memoryrail.parse_memory(
            memory_text(f"20260101-{status}", status=status, links=links),
            path=f".memoryrail/memories/20260101-{status}.md",
        )
        assert problems == [] and memory is not None
        memories.append(memory)
    stale = memoryrail.check_staleness(
        memories, root=tmp_path, last_commit_times=lambda links: dict.fromkeys(links)
    )
    got = {(s.code, s.id.removeprefix("20260101-"), s.link, s.level) for s in stale}
    outside = {
        ("link-outside-repo", st, link, "error")
        for st in ("active", "proposed", "superseded")
        for link in links[:4]
    }
    assert got == outside | {("stale-link", "active", "gone", "warning")}
    stale = memoryrail.check_staleness(
        memories,
        root=tmp_path,
        last_commit_times=lambda links: dict.fromkeys(links),
        statuses=memoryrail.REVIEW_STATUSES,
    )
    assert ("stale-link", "20260101-proposed", "gone") in {(s.code, s.id, s.link) for s in stale}
    assert stale[0].as_dict()["memory"] == stale[0].id


def test_it_renders_a_deterministic_block_and_keeps_outside_text():
    memories = [
        _mem("20260101-b", title="B"),
        _mem("20260101-a", "constraint", title="A", pinned=True),
        _mem("20260101-p", title="P", status="proposed"),
    ]
    block = memoryrail.render_block(memories)
    assert block == memoryrail.render_block(list(reversed(memories)))
    assert "P" not in block.split("Active memories:")[1].split("How to use")[0].replace(
        "(pinned)", ""
    )
    assert block.index("[CON-") < block.index("[DEC-")
    original = "intro\n<!-- memoryrail:begin -->\nold\n<!-- memoryrail:end -->\noutro\n"
    updated = memoryrail.replace_block(original, block)
    assert updated.startswith("intro\n") and updated.endswith("outro\n") and "old" not in updated
    assert memoryrail.replace_block(updated, block) == updated
    assert memoryrail.replace_block("no block here\n", block) == "no block here\n"
    assert agentfiles.AGENT_FILES == ("AGENTS.md", "CLAUDE.md", ".cursor/rules/memoryrail.mdc")


def test_it_reads_a_project_back_through_what_an_index_knows(tmp_path, monkeypatch):
    (tmp_path / ".memoryrail/memories").mkdir(parents=True)
    (tmp_path / ".memoryrail/config.json").write_text('{"version": 1}')
    rel = {}
    for memory_id in ("20260101-kept", "20260101-edited"):
        rel[memory_id] = f".memoryrail/memories/{memory_id}.md"
        (tmp_path / rel[memory_id]).write_text(memory_text(memory_id), encoding="utf-8")
    strict = memoryrail.read_project(tmp_path)
    git_blob = subprocess.run(
        ["git", "hash-object", str(tmp_path / rel["20260101-kept"])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert memoryrail.core.git_blob_sha((tmp_path / rel["20260101-kept"]).read_bytes()) == git_blob
    known = {
        m.path: (memoryrail.core.git_blob_sha((tmp_path / m.path).read_bytes()), m.meta)
        for m in strict.memories
    }
    (tmp_path / rel["20260101-edited"]).write_text(
        memory_text("20260101-edited", title="Edited since"), encoding="utf-8"
    )
    parsed = []
    real_parse = memoryrail.core.parse
    monkeypatch.setattr(
        memoryrail.core, "parse", lambda data, **kw: parsed.append(data) or real_parse(data, **kw)
    )
    again = memoryrail.read_project(tmp_path, known=known)
    assert len(parsed) == 1  # only the file whose blob changed was parsed as YAML
    assert {m.id: m.title for m in again.memories} == {
        "20260101-kept": "A title",
        "20260101-edited": "Edited since",
    }
    kept = next(m for m in again.memories if m.id == "20260101-kept")
    assert kept == next(m for m in strict.memories if m.id == "20260101-kept")
