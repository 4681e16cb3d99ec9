"""Screening untrusted bundle content: a policy of this server, not part of the MemoryAI
protocol. No Django here."""

from __future__ import annotations

import re

# --- untrusted content ----------------------------------------------------------------------

_INJECTION_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(ignore|disregard|forget)\b.{0,40}\b(previous|prior|above|earlier|all)\b.{0,40}"
        r"\b(instructions?|prompts?|rules|directions)\b",
        r"\byou are now\b.{0,60}\b(unrestricted|jailbroken|dan|developer mode|evil)\b",
        r"\b(reveal|print|show|output|leak)\b.{0,40}\bsystem prompt\b",
        r"<\|(im_start|im_end|system|endoftext)\|>",
        r"\[/?INST\]|<<SYS>>",
        r"\bdo anything now\b",
        r"^\s*(system|assistant)\s*:",
        r"\bnew instructions?\s*:",
    )
]


# Every pattern above needs one of these words (lower case): ASCII text without any of them
# cannot match, and most content is dismissed by a few substring tests instead of 8 regexes.
_INJECTION_WORDS = (
    "ignore",
    "disregard",
    "forget",
    "you are now",
    "system",
    "assistant",
    "<|",
    "inst]",
    "<<sys>>",
    "do anything now",
    "new instruction",
)


def prompt_injection_hint(content: str) -> str | None:
    """A short reason when content looks like an attempt to steer an LLM, else None."""
    sample = content[:20_000]
    if sample.isascii():  # non-ASCII case folding (the long s matches 's') is the regexes' job
        lowered = sample.lower()
        if not any(word in lowered for word in _INJECTION_WORDS):
            return None
    for pattern in _INJECTION_PATTERNS:
        match = pattern.search(sample)
        if match:
            return f"matches {match.group(0)[:60]!r}"
    return None
