"""A sentence of the investigations that says why either shows it or says it guesses.

Every sentence of ``docs/investigations.md`` with a causal marker ("because", "so
the", "therefore", ...) must, after the marker, point at a measurement (a field of
the template, ``{{ ... }}``, or a named output in backquotes), or be worded as a
hypothesis ("a hypothesis", "may", "if ... would", ...). A sentence whose
consequence follows from the design itself, not from the data, is listed in
:data:`REVIEWED` by its opening words, so that a new one is read before it passes.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "docs" / "investigations.md"

_MARKER = re.compile(
    r"\b(because|therefore|so the|so a|so it|so they|which means|the reason|"
    r"this is why|is due to|explains?)\b"
)
_HEDGE = re.compile(
    r"\b(hypothes\w*|may|might|possibly|perhaps|suggests?|fits|if|would|could)\b"
)
#: Sentences read and kept: their consequence is the design's, or the measurement
#: stands just before the marker in the same sentence.
REVIEWED = (
    "What the intervals cover: every draw takes its labeled",
    'CCA-LS {{ secstr_centering.cell("CCA-LS, centered"',
)


def _sentences(text: str) -> list[str]:
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out = []
    for para in text.split("\n\n"):
        if para.lstrip().startswith(("|", "#", "```")):
            continue
        out += re.split(r"(?<=[.;])\s+(?=[A-Z*(])", " ".join(para.split()))
    return out


def unsupported(text: str) -> list[str]:
    """Return the causal sentences with neither evidence after the marker nor hedge."""
    bad = []
    for s in _sentences(text):
        m = _MARKER.search(s)
        if m is None or s.startswith(REVIEWED):
            continue
        after = s[m.end() :]
        if "{{" in after or "`" in after or _HEDGE.search(s):
            continue
        bad.append(s)
    return bad


def test_every_causal_sentence_shows_or_hedges():
    assert unsupported(NOTES.read_text()) == []


def test_the_rule_flags_an_unsupported_reason():
    said = "The baselines are within 2 std, so the data and the labels agree."
    shown = "TCCA falls, because the eps grid is short (`investigations/results/x.md`)."
    hedged = "TCCA falls; a hypothesis is that the moment is noisy, so the fit is poor."
    assert unsupported(said) == [said]
    assert unsupported(shown) == []
    assert unsupported(hedged) == []
