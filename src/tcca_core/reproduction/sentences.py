"""Sentences of the investigations whose words follow from the data.

A sentence that carries a verdict ("near the majority rate", "a stronger ridge", "on
the paper's grid") must not be typed by hand: it is a function of the summary or of
an investigation's data, and changes when they do. Each function here returns such a
sentence (without its final full stop) or raises :class:`FieldError` when the data do
not hold what it reads; :class:`Said` gives them to the template of
``docs/investigations.md`` as ``said.NAME(...)``, marking what cannot be filled in.
``tests/test_sentences.py`` builds small data where each verdict flips.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..registry import METHODS, R_GRID_PAPER
from .investigations import (
    Cells,
    FieldError,
    Investigation,
    _log,
    _Missing,
    _names_read,
    _Problems,
    environment,
)
from .summary import _curve

#: "Near the majority-class rate": within this many accuracy points of it.
NEAR_MAJORITY = 2.0
#: The start of the heading of equal_tuning.py's table over 30 draws.
TUNED_DRAWS = "Equal tuning over 30 draws"
#: The heading (start) of equal_tuning.py's first table, and its eps column.
EQUAL_TUNING = "Equal tuning: eps"
EPS_COLUMN = "eps chosen per split"


def _labels(methods: Sequence[str]) -> list[str]:
    return [METHODS[m].label if m in METHODS else m for m in methods]


def _join(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _number(text: str, what: str) -> float:
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        raise FieldError(f"{what} is not a number: {text!r}") from None


# ------------------------------------------------------------ small r on Ads


def near_majority(
    summary: Mapping,
    table: str,
    setting: str,
    methods: Sequence[str],
    majority: str,
    near: float = NEAR_MAJORITY,
) -> str:
    """Which methods lie within ``near`` points of the majority rate at the first r.

    Reads each method's mean test-accuracy curve (the summary's ``curves``) at its
    smallest r; ``majority`` is the rate in % as an investigation states it.
    """
    rate = _number(majority, "the majority-class rate")
    first = {}
    for m in methods:
        curve = _curve(summary, table, setting, m)
        if not curve:
            raise FieldError(f"no curve for {m!r} in {table}/{setting}")
        first[m] = curve[0]
    rs = sorted({r for r, _ in first.values()})
    at = f"r = {rs[0]}" if len(rs) == 1 else "r = " + ", ".join(map(str, rs))
    close = [m for m in methods if abs(first[m][1] - rate) <= near]
    far = [m for m in methods if m not in close]

    def values(ms):
        return ", ".join(f"{_labels([m])[0]} {first[m][1]:.2f}" for m in ms)

    where = (
        f"within {near:g} points of the majority-class rate ({majority} %) at the "
        f"smallest r of the grid ({at})"
    )
    if not far:
        return f"Every one of them lies {where}: {values(close)}"
    if not close:
        return f"None of them lies {where}: {values(far)}"
    verb = ("lies", "does") if len(close) == 1 else ("lie", "do")
    verb_far = "does" if len(far) == 1 else "do"
    return (
        f"{_join(_labels(close))} {verb[0]} {where} ({values(close)}); "
        f"{_join(_labels(far))} {verb_far} not ({values(far)})"
    )


# ------------------------------------------------------------ the other r grid


def expand_grid(text: str) -> list[int]:
    """Return the ranks of a grid written as '10, 20, ..., 100, 120, ..., 300'.

    'a, b, ..., c' is the run from a to c in steps of b - a; anything else is a
    list of ranks.
    """
    tokens = [t.strip() for t in text.strip().strip("[]{}").split(",") if t.strip()]
    out: list[int] = []
    for i, tok in enumerate(tokens):
        if tok in ("...", "…"):
            if len(out) < 2 or i + 1 >= len(tokens):
                raise FieldError(f"'...' without a run around it in {text!r}")
            step, end = out[-1] - out[-2], int(_number(tokens[i + 1], "a rank"))
            if step <= 0 or (end - out[-1]) % step:
                raise FieldError(f"no run of constant step in {text!r}")
            out += range(out[-1] + step, end, step)
        else:
            out.append(int(_number(tok, "a rank")))
    if not out:
        raise FieldError(f"no ranks in {text!r}")
    return out


_SHARED = re.compile(r"(\d+) of (\d+) shared ranks")


def recorded_grid(inv: Investigation, column: str, prefix: str = "r grid") -> str:
    """Return the other r grid as the output records it (ranks, runs allowed).

    In order: the output's fact ``other_grid``, a top-level ``other_grid`` list of
    its data, or the heading of the column (``"r grid 10, 20, ..., 300"``).
    """
    facts = inv.data.get("facts") or {}
    if facts.get("other_grid"):
        return str(facts["other_grid"])
    if isinstance(inv.data.get("other_grid"), list):
        return ", ".join(str(int(r)) for r in inv.data["other_grid"])
    if column.startswith(prefix + " "):
        return column[len(prefix) :].strip()
    raise FieldError(f"the output records no other r grid (column {column!r})")


def other_grid(inv: Investigation, words: str = "r grid") -> str:
    """Say what the optimizer-robustness column of another r grid tests.

    The grid is what the output records (:func:`recorded_grid`); the rows of the
    column headed with ``words`` say how many ranks each cell shares with the
    published (paper's) grid. Where the two agree, the sentence names the ranks off
    the paper's grid (if any); where they do not, it says that the recorded grid is
    not the one the rows compare.
    """
    column = inv.column(words)
    if column.startswith("**[?"):
        raise FieldError(f"no one column headed with {words!r}")
    text = recorded_grid(inv, column)
    grid = expand_grid(text)
    off = [r for r in grid if r not in set(R_GRID_PAPER)]
    on = len(grid) - len(off)
    shared = {
        int(m.group(2))
        for t in inv.tables()
        if column in t.get("columns", [])
        for row in t["rows"]
        if len(row) == len(t["columns"])
        and (m := _SHARED.search(row[t["columns"].index(column)]))
    }
    if not shared:
        raise FieldError(f"no 'N of M shared ranks' under {column!r}")
    tests = (
        "the column checks whether a rank's fit depends on the other ranks "
        "fitted beside it"
    )
    if shared != {on}:
        counts = ", ".join(map(str, sorted(shared)))
        return (
            f"The grid the output records ({text}) is not the one its rows compare: "
            f"read literally it names {len(grid)} ranks, {on} of them on "
            f"the paper's grid, while its rows compare {counts} ranks per cell with "
            "the published fits. The output records only those shared ranks, so "
            f"{tests}; it does not show what a rank off the paper's grid would give"
        )
    if not off:
        return (
            f"The other grid, r in {{{text}}} ({len(grid)} ranks), holds only ranks "
            f"of the paper's grid: {tests}, not what a rank the paper's grid lacks "
            "would give"
        )
    return (
        f"The other grid, r in {{{text}}} ({len(grid)} ranks), holds {on} ranks of "
        f"the paper's grid, where {tests}, and {len(off)} off it "
        f"({', '.join(map(str, off))}), where its selected cells say what ranks the "
        "paper's grid lacks would give"
    )


# ------------------------------------------------------------ the ridge on Ads


def _eps_rows(inv: Investigation, cell: str, methods: Sequence[str]) -> dict:
    labels = dict(zip(_labels(methods), methods, strict=True))
    out = {}
    for t in inv.tables(EQUAL_TUNING):
        if EPS_COLUMN not in t.get("columns", []):
            continue
        i = t["columns"].index(EPS_COLUMN)
        for row in t["rows"]:
            if len(row) > i and row[0] == cell and row[1] in labels:
                out[labels[row[1]]] = [
                    _number(e, "an eps") for e in row[i].split(",") if e.strip()
                ]
    missing = [m for m in methods if m not in out]
    if missing:
        raise FieldError(f"no eps per split for {missing} in {cell!r}")
    return out


def ridge(
    inv: Investigation, cell: str, methods: Sequence[str], reference: float = 1e-2
) -> str:
    """Which way validation moves eps from the paper's value, and what follows.

    Counts the splits (equal tuning: eps chosen on validation with r) whose eps is
    above, below or at ``reference``; a stronger ridge preferred means that a
    scaling which made the authors' eps weaker (sums instead of means) cannot
    explain higher numbers in the paper.
    """
    eps = _eps_rows(inv, cell, methods)
    values = [e for m in methods for e in eps[m]]
    above = sum(e > reference * (1 + 1e-9) for e in values)
    below = sum(e < reference * (1 - 1e-9) for e in values)
    same = len(values) - above - below
    counts = (
        f"validation chose eps above the paper's {reference:g} in {above} of the "
        f"{len(values)} splits of {_join(_labels(methods))} ({below} below, {same} "
        "at it)"
    )
    if above > below:
        return (
            f"{counts}: it prefers a stronger ridge. A scaling that made the authors' "
            "eps weaker still (sums instead of means) would move away from what "
            "validation prefers, so it does not explain why the paper's numbers are "
            f"higher; what our runs say is that eps = {reference:g} is too weak a "
            "ridge for these views, not too strong"
        )
    if below > above:
        return (
            f"{counts}: it prefers a weaker ridge. A scaling that made the authors' "
            "eps weaker (sums instead of means) would move toward what validation "
            "prefers, and could explain part of the gap"
        )
    return (
        f"{counts}: it prefers neither side, so it does not say which way a "
        "different scaling in the authors' code would move the numbers"
    )


# ------------------------------------------------- a family of intervals


def holm_changes(inv: Investigation, base: str = "TCCA") -> str:
    """Say what Holm's adjustment changes in a table of paired comparisons.

    Reads the table with the columns "the interval says" (raw) and "after Holm":
    how many raw verdicts it leaves unresolved (named), and whether every verdict
    that puts ``base`` below another method survives.
    """
    t = next(
        (
            t
            for t in inv.tables()
            if {"A - B", "the interval says", "after Holm"} <= set(t["columns"])
        ),
        None,
    )
    if t is None:
        raise FieldError("no table of paired comparisons with Holm's column")
    rows = [dict(zip(t["columns"], r, strict=True)) for r in t["rows"]]
    raw = [r for r in rows if not r["the interval says"].startswith("not resolved")]
    lost = [r for r in raw if r["after Holm"].startswith("not resolved")]
    below = [
        r
        for r in raw
        if r["A - B"].startswith(f"{base} - ") and r["the interval says"] == "A below B"
    ]
    kept = [r for r in below if r["after Holm"] == "A below B"]
    named = "; ".join(f"{r['cell']}: {r['A - B']}" for r in lost)
    out = (
        f"of the {len(raw)} comparisons whose raw 95 % interval excludes 0 (of "
        f"{len(rows)}), Holm's adjustment over the family leaves {len(lost)} "
        "unresolved" + (f" ({named})" if lost else "")
    )
    if not below:
        return out
    if len(kept) == len(below):
        return (
            out + f"; every one of the {len(below)} that put {base} below another "
            "method survives it"
        )
    return (
        out + f"; {len(kept)} of the {len(below)} that put {base} below another "
        "method survive it"
    )


# ------------------------------------------------- equal tuning, over draws


def tuned_draws_verdict(
    inv: Investigation, cell: str, reading: str = "after Holm", base: str = "tcca"
) -> str:
    """TCCA outperforms the CCA methods under equal tuning over the draws: the verdict.

    Read from equal_tuning.py's table over 30 draws, per cell: "confirmed" when
    every paired difference TCCA - CCA method lies above 0, "refuted" when every one
    lies below, otherwise "not resolved" with the count of each; ``reading`` is the
    column read ("the interval says": the raw 95 % intervals; "after Holm").
    """
    label = _labels([base])[0]
    if not inv.has(TUNED_DRAWS):
        raise FieldError("no equal-tuning table over the draws")
    t = inv.tables(TUNED_DRAWS)[0]
    rows = [dict(zip(t["columns"], r, strict=True)) for r in t["rows"]]
    says = [
        r[reading]
        for r in rows
        if r["cell"] == cell and r["A - B"].startswith(f"{label} - ")
    ]
    if not says:
        raise FieldError(f"no {label} rows for {cell!r} over the draws")
    above = sum(v == "A above B" for v in says)
    below = sum(v == "A below B" for v in says)
    if above == len(says):
        return "confirmed"
    if below == len(says):
        return "refuted"
    return f"not resolved ({above} above, {below} below, of {len(says)})"


def tuned_draws(inv: Investigation, cells: Sequence[str], base: str = "tcca") -> str:
    """TCCA against each CCA method under equal tuning: resolved or not.

    With equal_tuning.py's table over 30 draws: per cell, each paired difference,
    its 95 % interval and what is left after Holm. Without it: per cell the splits'
    difference to the best of the CCA family, which no interval resolves yet.
    """
    label = _labels([base])[0]
    if inv.has(TUNED_DRAWS):
        t = inv.tables(TUNED_DRAWS)[0]
        cols = t["columns"]
        rows = [dict(zip(cols, r, strict=True)) for r in t["rows"]]
        rows = [
            r
            for r in rows
            if r["cell"] in cells and r["A - B"].startswith(f"{label} - ")
        ]
        missing = [c for c in cells if c not in {r["cell"] for r in rows}]
        if missing:
            raise FieldError(f"no {label} rows for {missing} over the draws")
        resolved = [r for r in rows if r["after Holm"] != "not resolved"]
        # cells whose draws are not all fitted yet (a checkpoint) say their counts
        draws = {c: "/".join(sorted({r["draws"] for r in rows if r["cell"] == c}))
                 for c in cells}  # fmt: skip
        one = len(set(draws.values())) == 1
        lead = f"Over {draws[cells[0]]} draws" if one else "Over the draws"
        parts = "; ".join(
            f"{c}{'' if one else f' ({draws[c]} draws)'}: "
            + ", ".join(
                f"{r['A - B']} {r['difference']} {r['95 % CI']} ({r['after Holm']} "
                "after Holm)"
                for r in rows
                if r["cell"] == c
            )
            for c in cells
        )
        return (
            f"{lead}, {parts}; {len(resolved)} of the "
            f"{len(rows)} comparisons resolved after Holm's adjustment"
        )
    cca = ("cca_bst", "cca_avg", "cca_ls")
    tab = next(
        (t for t in inv.tables(EQUAL_TUNING) if "equal tuning" in t["columns"]), None
    )
    if tab is None:
        raise FieldError("no equal-tuning table")
    i = tab["columns"].index("equal tuning")
    lines: list[str] = []
    splits: set[int] = set()
    for cell in cells:
        means = {
            r[1]: _number(r[i].split()[0], "a mean")
            for r in tab["rows"]
            if r[0] == cell and r[1] in _labels([base, *cca])
        }
        fam = {m: v for m, v in means.items() if m in _labels(cca)}
        if label not in means or not fam:
            raise FieldError(f"no equal-tuning cells of {label} and the CCA family")
        best = max(fam, key=fam.__getitem__)
        splits.add(len(_eps_rows(inv, cell, [base])[base]))
        lines.append(f"{cell}: {label} - {best} {means[label] - fam[best]:+.2f} points")
    n = "/".join(map(str, sorted(splits)))
    return (
        f"Not yet: the {n} splits give no interval ({'; '.join(lines)}), and the "
        "draws that would give one (the overlay "
        "`investigations/configs/equal_tuning_draws30.yaml`, hours of CPU) have not "
        "run yet, so neither way is resolved here"
    )


# ----------------------------------------------------------- for the template


class Said:
    """The sentences above, as the template of the investigations calls them.

    ``said.near_majority(TABLE, SETTING, "m1,m2", RATE)``,
    ``said.other_grid(STEM)``, ``said.ridge(STEM, CELL, "m1,m2")``,
    ``said.holm_changes(STEM)``, ``said.tuned_draws(STEM, "CELL1;CELL2")``: STEM
    names an included output.
    """

    def __init__(
        self,
        summary: Mapping,
        investigation: Callable[[str], object],
        problems: _Problems,
    ):
        self._summary, self._inv, self._problems = summary, investigation, problems

    def _say(self, what: str, fn: Callable[..., str], *args) -> str:
        try:
            return fn(*args)
        except (FieldError, KeyError, ValueError, IndexError) as exc:
            return self._problems.mark(f"said.{what}", exc)

    def _output(self, stem: str) -> Investigation:
        inv = self._inv(stem)
        if not isinstance(inv, Investigation):
            raise FieldError(f"no included output named {stem!r}")
        return inv

    def near_majority(self, table, setting, methods, majority) -> str:
        """See :func:`near_majority`."""
        return self._say(
            "near_majority", near_majority, self._summary, table, setting,
            methods.split(","), majority,
        )  # fmt: skip

    def other_grid(self, stem: str, prefix: str = "r grid") -> str:
        """See :func:`other_grid`."""
        return self._say("other_grid", lambda: other_grid(self._output(stem), prefix))

    def ridge(self, stem: str, cell: str, methods: str) -> str:
        """See :func:`ridge`."""
        return self._say(
            "ridge", lambda: ridge(self._output(stem), cell, methods.split(","))
        )

    def holm_changes(self, stem: str) -> str:
        """See :func:`holm_changes`."""
        return self._say("holm_changes", lambda: holm_changes(self._output(stem)))

    def tuned_draws_verdict(
        self, stem: str, cell: str, reading: str = "after Holm"
    ) -> str:
        """See :func:`tuned_draws_verdict`."""
        return self._say(
            "tuned_draws_verdict",
            lambda: tuned_draws_verdict(self._output(stem), cell, reading),
        )

    def tuned_draws(self, stem: str, cells: str) -> str:
        """See :func:`tuned_draws` (``cells``: separated by ';')."""
        return self._say(
            "tuned_draws",
            lambda: tuned_draws(self._output(stem), cells.split(";")),
        )


def prose_context(
    summary: Mapping, data: Mapping[str, Investigation], problems: _Problems
) -> dict[str, Any]:
    """Return the templates' variables: the summary's cells, the investigations.

    An investigation that a template reads but whose output is not included gets
    a stand-in that marks each of its fields.
    """

    def cells(table: str, settings: str, methods: str) -> Cells:
        return Cells(summary, table, settings, methods, problems)

    bound = {stem: inv.bind(problems) for stem, inv in data.items()}

    def investigation(stem: str) -> Investigation | _Missing:
        return bound.get(stem) or _Missing(stem, problems)

    def curve(table: str, setting: str, method: str, r: int) -> str:
        t = (summary.get("tables") or {}).get(table) or {}
        for c in t.get("curves", []):
            hit = (c["setting"], c["method"], int(c["r"])) == (setting, method, r)
            if hit and c.get("mean") is not None:
                return f"{c['mean']:.2f}"
        return problems.mark(
            f"curve({table}, {setting}, {method}, {r})", KeyError("no such point")
        )

    return {
        **bound,
        "investigation": investigation,
        "cell": cells,
        "cells": cells,
        "curve": curve,
        "said": Said(summary, investigation, problems),
        "_problems": problems,
    }


def render_fields(
    text: str, summary: Mapping, data: Mapping[str, Investigation] | None = None
) -> tuple[str, list[str]]:
    """Render the template ``text`` (the investigations' notes) with their data.

    Parameters
    ----------
    text : str
        A Jinja2 template (:data:`FIELD_HELP`), e.g. the notes of
        :func:`include_files` without their data (:func:`included_data`).
    summary : mapping
        ``results/summary.json``.
    data : mapping, optional
        stem -> the data of each included investigation.

    Returns
    -------
    text : str
        The rendered text; a field that cannot be filled in is shown as
        ``**[?: field]**``.
    problems : list of str
        One line per field that could not be filled in.
    """
    problems = _Problems()
    variables = prose_context(summary, data or {}, problems)
    template = environment().from_string(text)
    names = _names_read(text) - set(variables)
    variables.update({n: _Missing(n, problems) for n in names})
    out = template.render(variables)
    _log(problems)
    return out, list(problems)
