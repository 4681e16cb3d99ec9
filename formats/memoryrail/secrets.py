"""Named rules for text that looks like a credential. Findings never carry the matched value."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SecretFinding:
    rule: str
    path: str
    line: int

    def as_dict(self) -> dict[str, object]:
        return {"rule": self.rule, "path": self.path, "line": self.line}


_ASSIGNMENT_NAMES = (
    r"password|passwd|pwd|passphrase|secret|client_secret|secret_key|token|access_token|"
    r"auth_token|api_key|apikey|access_key|private_key"
)

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----")),
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    (
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    (
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+"),
    ),
    ("stripe-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("openai-style-key", re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{20,}")),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ),
    ("url-credentials", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@'\"]+:[^\s@/'\"]+@")),
    (
        "credential-assignment",
        re.compile(
            rf"(?i)(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_\-])*(?:{_ASSIGNMENT_NAMES})[\"']?\s*[:=]\s*"
            r"(?P<quote>[\"']?)(?P<value>[^\s\"'`,;)\]}]{6,})"
        ),
    ),
)

# Assignment values that are references or placeholders, not literal credentials.
_NOT_LITERAL = re.compile(
    r"(?i)^(?:\$|%|<|\{|\[|\*|x{4,}|\.{3}|os\.|process\.env|env\(|getenv|settings\.|"
    r"none$|null$|true$|false$|redacted|changeme$|placeholder|example|your[_-])"
)
_URL_PLACEHOLDER = re.compile(r"://(?:user|username)?:(?:pass|password|\*+|<[^>]*>|\$\{?\w+\}?)@")


def _assignment_is_literal(match: re.Match[str]) -> bool:
    value = match.group("value")
    return _NOT_LITERAL.match(value) is None and not re.fullmatch(r"[A-Za-z_]+\(?", value)


# Per rule, texts one of which every match of it contains. The case-insensitive rule is
# checked on the lower-cased text, and only when that is ASCII: (?i) also lets `s` match the long s,
# `k` the Kelvin sign, `i` a dotted capital I, which lower() does not turn into ASCII.
_NEEDLES: dict[str, tuple[str, ...]] = {
    "private-key": ("PRIVATE KEY",),
    "aws-access-key-id": ("AKIA", "ASIA", "ABIA", "ACCA"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-",),
    "slack-token": ("xox",),
    "slack-webhook": ("https://hooks.slack.com/services/T",),
    "stripe-key": ("_live_", "_test_"),
    "openai-style-key": ("sk-",),
    "jwt": ("eyJ",),
    "url-credentials": ("://",),
}
_FOLDED_NEEDLES: dict[str, tuple[str, ...]] = {
    # password, passwd, passphrase; pwd; secret, client_secret, secret_key; token,
    # access_token, auth_token; api_key, apikey, access_key, private_key
    "credential-assignment": (
        "pass",
        "pwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "access_key",
        "private_key",
    ),
}


def _may_match(rule: str, text: str, folded: str | None) -> bool:
    needles = _NEEDLES.get(rule)
    if needles is not None:
        return any(needle in text for needle in needles)
    needles = _FOLDED_NEEDLES.get(rule)
    if needles is not None and folded is not None:
        return any(needle in folded for needle in needles)
    return True  # a rule without needles, or a text that is not ASCII: the regex decides


def _needle_search(needles: dict[str, tuple[str, ...]]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(n) for found in needles.values() for n in found))


# Every needle in one search: a text holding none of them (nearly every memory) needs no
# per-rule look at all. Only valid while every rule has needles (a rule without would have
# to run on every text).
_ANY_NEEDLE = _needle_search(_NEEDLES)
_ANY_FOLDED_NEEDLE = _needle_search(_FOLDED_NEEDLES)
_EVERY_RULE_HAS_NEEDLES = {rule for rule, _ in RULES} <= {*_NEEDLES, *_FOLDED_NEEDLES}


def scan_text(text: str, *, path: str) -> list[SecretFinding]:
    """Every (rule, line) that matches, in line order; one finding per rule per line."""
    # First each rule once over the whole text, and only if a text its every match contains is
    # in it (`_NEEDLES`: a substring search, far cheaper than a regex scan): no rule has an
    # anchor, and what a line ends at in the text (a line break) is neither a word nor an
    # alphanumeric character, just as the end of the line alone is not, so a rule matching in
    # some line matches in the text too. Only the rules found there (nearly always none) are
    # tried line by line.
    folded = text.lower() if text.isascii() else None
    if (
        _EVERY_RULE_HAS_NEEDLES
        and folded is not None
        and _ANY_NEEDLE.search(text) is None
        and _ANY_FOLDED_NEEDLE.search(folded) is None
    ):
        return []
    rules = [
        (rule, pattern)
        for rule, pattern in RULES
        if _may_match(rule, text, folded) and pattern.search(text)
    ]
    if not rules:
        return []
    findings: list[SecretFinding] = []
    for number, line in enumerate(text.splitlines(), start=1):
        seen: set[str] = set()
        for rule, pattern in rules:
            for match in pattern.finditer(line):
                if rule == "credential-assignment" and not _assignment_is_literal(match):
                    continue
                if rule == "url-credentials" and _URL_PLACEHOLDER.search(match.group()):
                    continue
                if rule not in seen:
                    seen.add(rule)
                    findings.append(SecretFinding(rule, path, number))
                break
    return findings


# --- masking: the same rules, with the matched span replaced --------------------------------

# A marker the rules do not match again (`[secret: RULE masked]` would: "secret: aws-…" reads as
# a credential assignment), so masked text scans clean and masking twice changes nothing.
MASK = "[secret masked: {rule}]"
_RULE_ORDER = {rule: index for index, (rule, _) in enumerate(RULES)}
_PEM_END = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z0-9-]*: .*")
_KEY_MAX_LINES = 200  # a 16384-bit RSA key in PEM is about 190 lines
_LINE_BREAKS = "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines() splits on


def mask_marker(rule: str) -> str:
    return MASK.format(rule=rule)


def _line_spans(line: str) -> tuple[list[tuple[int, int, str]], list[str]]:
    """(spans to mask as (start, end, rule), rules that matched) for one line, as scan_text."""
    spans: list[tuple[int, int, str]] = []
    rules: list[str] = []
    for rule, pattern in RULES:
        for match in pattern.finditer(line):
            if rule == "credential-assignment" and not _assignment_is_literal(match):
                continue
            if rule == "url-credentials" and _URL_PLACEHOLDER.search(match.group()):
                continue
            if rule not in rules:
                rules.append(rule)
            start, end = match.span()
            if rule == "credential-assignment":
                start, end = match.span("value")  # keep the name: `password=[secret masked: …]`
            elif rule == "url-credentials":
                start, end = match.start() + match.group().index("://") + 3, end - 1  # user:pass
            elif rule == "private-key":
                closing = _PEM_END.search(line, end)  # a key written on one line
                end = closing.end() if closing else len(line)
            spans.append((start, end, rule))
    return spans, rules


def _apply(line: str, spans: list[tuple[int, int, str]]) -> str:
    """Replace each group of overlapping spans by one marker, named after its most specific rule
    (the earliest in RULES: `token=ghp_…` is a github-token, not just an assignment)."""
    merged: list[tuple[int, int, str]] = []
    for start, end, rule in sorted(spans):
        if merged and start < merged[-1][1]:
            first, last, named = merged[-1]
            named = rule if _RULE_ORDER[rule] < _RULE_ORDER[named] else named
            merged[-1] = (first, max(last, end), named)
        else:
            merged.append((start, end, rule))
    out, position = [], 0
    for start, end, rule in merged:
        out += [line[position:start], mask_marker(rule)]
        position = end
    out.append(line[position:])
    return "".join(out)


def secrets_mask(text: str, *, path: str = "") -> tuple[str, list[SecretFinding]]:
    """`text` with every span the rules match replaced by `[secret masked: RULE]`, and the
    findings scan_text reports for it (same rules, same lines).

    Line breaks are kept, so line numbers stay those of the findings. A private key is masked
    from its BEGIN line through its END line (the rule matches only the header; the key is the
    lines below it); without an END line, through the lines that look like a PEM body."""
    lines = text.splitlines(keepends=True)  # the same line breaks as scan_text's splitlines()
    contents = [line.rstrip(_LINE_BREAKS) for line in lines]
    findings: list[SecretFinding] = []
    key_lines: dict[int, int] = {}  # index of a line inside a private key -> where to mask to
    for index, content in enumerate(contents):
        spans, rules = _line_spans(content)
        findings += [SecretFinding(rule, path, index + 1) for rule in rules]
        headers = [start for start, _, rule in spans if rule == "private-key"]
        if headers and _PEM_END.search(content, max(headers)) is None:
            key_lines.update(_key_body(contents, index + 1))  # the key is on the next lines
        if index in key_lines:
            spans.append((0, key_lines[index], "private-key"))
        if spans:
            lines[index] = _apply(content, spans) + lines[index][len(content) :]
    return "".join(lines), findings


def _key_body(contents: list[str], first: int) -> dict[int, int]:
    """The lines after a private key header that are the key: through its END line when there
    is one near, else while they look like a PEM body."""
    window = contents[first : first + _KEY_MAX_LINES]
    for offset, content in enumerate(window):
        closing = _PEM_END.search(content)
        if closing is not None:
            body = {first + n: len(contents[first + n]) for n in range(offset)}
            return body | {first + offset: closing.end()}
    body: dict[int, int] = {}
    for offset, content in enumerate(window):
        if not _PEM_BODY.fullmatch(content.strip()):
            break
        body[first + offset] = len(content)
    return body


def secrets_masked(text: str) -> str:
    """Just the masked text (titles, summaries, commit messages)."""
    return secrets_mask(text)[0] if text else text


def secrets_mask_field(key: str, value: Any) -> Any:
    """A front matter value with its secrets masked, read as the file line `key: value` the
    scanner saw (so `token: abcdef123456` is masked although `abcdef123456` alone is not).

    Mappings and lists are masked item by item (keys too); a number or other scalar the line
    rule matches becomes the masked string; anything else is returned as it is."""
    if isinstance(value, dict):
        return {secrets_masked(str(k)): secrets_mask_field(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [secrets_mask_field(key, v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if not isinstance(value, str | int | float):
        return value
    text = str(value)
    prefix = f"{key}: "
    line = secrets_masked(prefix + text)
    masked = line[len(prefix) :] if line.startswith(prefix) else secrets_masked(text)
    masked = secrets_masked(masked)
    if masked == text:
        return value
    return masked


def secrets_mask_front_matter(front_matter: Any) -> Any:
    """Every key and value of a front matter mapping masked (see secrets_mask_field)."""
    if not isinstance(front_matter, dict):
        return front_matter
    return {secrets_masked(str(k)): secrets_mask_field(str(k), v) for k, v in front_matter.items()}
