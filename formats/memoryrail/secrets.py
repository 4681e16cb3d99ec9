"""Named rules for text that looks like a credential. Findings never carry the matched value."""

from __future__ import annotations

import re
from dataclasses import dataclass


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


def scan_text(text: str, *, path: str) -> list[SecretFinding]:
    """Every (rule, line) that matches, in line order; one finding per rule per line."""
    findings: list[SecretFinding] = []
    for number, line in enumerate(text.splitlines(), start=1):
        seen: set[str] = set()
        for rule, pattern in RULES:
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
