"""Badge and header colours meet WCAG 2.x AA (4.5:1 for normal text), read from app.css.

The stylesheet is parsed (tinycss2), `var(--name)` resolved from `:root`, and the contrast
ratio of each `.badge…` rule's text colour on its background computed with WCAG's relative
luminance formula.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tinycss2

CSS = Path(__file__).resolve().parents[2] / "static" / "memoryadmin" / "app.css"
AA_NORMAL_TEXT = 4.5


def _declarations(rule) -> dict[str, str]:  # type: ignore[no-untyped-def]
    found = {}
    for item in tinycss2.parse_blocks_contents(rule.content, skip_whitespace=True):
        if item.type == "declaration":
            found[item.lower_name] = tinycss2.serialize(item.value).strip()
    return found


def _rules() -> list[tuple[str, dict[str, str]]]:
    sheet = tinycss2.parse_stylesheet(CSS.read_text(), skip_comments=True, skip_whitespace=True)
    return [
        (tinycss2.serialize(rule.prelude).strip(), _declarations(rule))
        for rule in sheet
        if rule.type == "qualified-rule"
    ]


def _variables() -> dict[str, str]:
    variables: dict[str, str] = {}
    for selector, declarations in _rules():
        if selector == ":root":
            variables.update({k: v for k, v in declarations.items() if k.startswith("--")})
    return variables


def _resolve(value: str, variables: dict[str, str]) -> str:
    value = value.strip()
    if value.startswith("var(") and value.endswith(")"):
        return _resolve(variables[value[4:-1].strip()], variables)
    return value


def _luminance(colour: str) -> float:
    hex_digits = colour.lstrip("#")
    if len(hex_digits) == 3:
        hex_digits = "".join(c * 2 for c in hex_digits)
    assert len(hex_digits) == 6, f"expected a #rrggbb colour, not {colour!r}"
    channels = [int(hex_digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(foreground: str, background: str) -> float:
    lighter, darker = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def _badge_pairs() -> dict[str, tuple[str, str]]:
    variables = _variables()
    merged: dict[str, dict[str, str]] = {}
    for selector, declarations in _rules():
        for part in selector.split(","):
            part = part.strip()
            if part.startswith(".badge"):
                merged.setdefault(part, {}).update(declarations)
    base = merged[".badge"]
    pairs = {}
    for selector, declarations in merged.items():
        fg = declarations.get("color", base["color"])
        bg = declarations.get("background", base["background"])
        pairs[selector] = (_resolve(fg, variables), _resolve(bg, variables))
    return pairs


def test_the_formula_gives_wcag_reference_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_every_badge_kind_is_checked():
    assert {".badge", ".badge.ok", ".badge.warn", ".badge.bad"} <= set(_badge_pairs())


@pytest.mark.parametrize("selector", sorted(_badge_pairs()))
def test_badge_text_meets_aa(selector):
    foreground, background = _badge_pairs()[selector]
    ratio = contrast(foreground, background)
    assert ratio >= AA_NORMAL_TEXT, f"{selector}: {foreground} on {background} is {ratio:.2f}:1"


@pytest.mark.parametrize(
    ("foreground", "background"),
    [
        ("--fg", "--bg"),
        ("--muted", "--bg"),
        ("--muted", "--card"),
        ("--accent", "--card"),
        ("--bad", "--card"),
        ("--header-fg", "--header-bg"),
        ("--header-muted", "--header-bg"),
    ],
)
def test_text_colours_meet_aa(foreground, background):
    variables = _variables()
    ratio = contrast(variables[foreground], variables[background])
    assert ratio >= AA_NORMAL_TEXT, f"{foreground} on {background} is {ratio:.2f}:1"
