"""The investigations' prose: a Jinja2 template filled in from data, never by hand.

``docs/investigations.md`` is a Jinja2 template. Its ``<!-- include: path -->`` lines
name the Markdown outputs of the investigation scripts, shown as written;
:func:`include_files` inlines them, with the data each script handed over beside its
output (``investigations/results/<stem>.json``: its tables and named facts). Every
number of the prose is an expression of the template (:data:`FIELD_HELP` lists what
it can read): a cell of ``results/summary.json`` or a value of an investigation's
data, so that a sentence cannot go stale when the results change;
:func:`hand_typed_numbers` lists any number typed by hand outside an expression
(``tests/test_reproduction.py`` requires none beyond the protocol's settings).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from ..reporting import format_pm, method_label
from .summary import N_STD, _cell, outside_paper

logger = logging.getLogger(__name__)

#: What an expression of the investigations' template can read.
FIELD_HELP = """\
cell(TABLE, SETTING, METHOD).FIELD   a cell of the summary (reading (A)): TABLE a
    table key, SETTING a setting key of its columns, METHOD a registry key; FIELD one
    of mean, std, pm (mean ± std), diff ((A) - paper), paper_mean, paper_std,
    paper_pm, paper_stds (diff in paper stds), upper / lower (the paper's mean +- 2
    std), r (per split), job_min (the fit job's minutes), flag ("within", "outside"
    or "partly outside" the paper's mean +- 2 std).
curve(TABLE, SETTING, METHOD, R)   the mean test accuracy of the published curve at
    r = R (two decimals).
cells(TABLE, "S1,S2", "M1,M2").min(FIELD), .max(FIELD)   the extreme value over the
    cells; .argmin(FIELD), .argmax(FIELD): the method's label; .flag as above.
STEM.cell(ROW, COLUMN, section=WORDS)   a cell of a table of the investigation STEM's
    data (investigations/results/STEM.json): the row whose first cells are ROW (a
    string, or a list of strings), under the header COLUMN; section: only the tables
    under the '#### ' heading that contains WORDS. Filters take a piece of the cell:
    | pm (the first 'a ± b'), | nth(K) (its K-th number, from 0).
STEM.facts.NAME   a number the investigation states in its text (its facts).
STEM.column(WORDS, section=WORDS)   the one column header that contains WORDS (its
    full text); STEM.has(WORDS): whether a table's heading contains WORDS.
said.NAME(...)   a sentence whose words follow from the data (a verdict): see
    tcca_core.reproduction.sentences.Said.
"""

_INCLUDE = re.compile(r"^<!-- include: (\S+) -->$", re.MULTILINE)
#: The record of deviations (docs/deviations.md): framed as data, shown as an index.
_RECORD = re.compile(r"^<!-- record: (\S+) -->$", re.MULTILINE)
RECORD_STEM = "protocol_record"
#: The data of an included output travel beside it in the text (:func:`include_files`)
#: because the pipeline hands :func:`~tcca_core.reproduction.build` the notes as text.
_DATA = re.compile(r"^<!-- data: (\S+) -->\n(.*?)\n<!-- end data -->\n", re.M | re.S)
_NUMBER = r"[-+]?\d[\d,./]*\d|[-+]?\d"
_PM = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)? ± \d[\d,]*(?:\.\d+)?")


def include_files(text: str, root: Path) -> str:
    """Replace each ``<!-- include: path -->`` line by that file (relative to root).

    The file's text is shown as written (a raw block of the template); its data,
    ``<stem>.json`` beside it, are framed before it for :func:`included_data`. A
    file not written yet is named, with the command that writes it. A line
    ``<!-- record: path -->`` frames the entries of that record of deviations
    (:func:`.record.parse`) as the data named :data:`RECORD_STEM`, shown nowhere
    as text (REPRODUCTION.md lays them out as an index).
    """
    from . import record

    def frame(m):
        path = Path(root) / m.group(1)
        if not path.is_file():
            return f"*(the record `{m.group(1)}` is missing)*"
        data = {"source": m.group(1), "entries": record.parse(path.read_text())}
        return f"<!-- data: {RECORD_STEM} -->\n{json.dumps(data)}\n<!-- end data -->\n"

    text = _RECORD.sub(frame, text)

    def sub(m):
        path = Path(root) / m.group(1)
        if not path.is_file():
            script = Path(m.group(1)).stem
            return (
                f"*(not run yet: `python investigations/{script}.py` writes "
                f"`{m.group(1)}`)*"
            )
        data = path.with_suffix(".json")
        framed = ""
        if data.is_file():
            framed = f"<!-- data: {path.stem} -->\n{data.read_text().strip()}\n"
            framed += "<!-- end data -->\n"
        return f"{framed}{{% raw %}}{path.read_text().strip()}{{% endraw +%}}"

    return _INCLUDE.sub(sub, text)


def included_data(text: str) -> tuple[str, dict[str, Investigation]]:
    """Split the notes into the template and the data of its included outputs."""
    data = {
        m.group(1): Investigation(m.group(1), json.loads(m.group(2)))
        for m in _DATA.finditer(text)
    }
    return _DATA.sub("", text), data


class FieldError(ValueError):
    """A field of the prose that names nothing, or something ambiguous."""


class _Problems(list):
    """The fields that could not be filled in; each is shown as ``**[?: ...]**``."""

    def mark(self, what: str, exc: Exception) -> str:
        self.append(f"{what}: {exc}")
        return f"**[?: {what}]**"


# ----------------------------------------------------------------- the summary

_FORMATS = {
    "mean": ".2f",
    "std": ".2f",
    "diff": "+.2f",
    "paper_mean": ".2f",
    "paper_std": ".2f",
    "paper_stds": "+.1f",
    "upper": ".2f",
    "lower": ".2f",
    "job_min": ".0f",
}
_TEXT_FIELDS = ("pm", "paper_pm", "r")


def _summary_value(summary: Mapping, table: str, setting: str, method: str, field):
    """One field of one cell: a number, a string, or None (no result)."""
    col = next(
        (
            c["label"]
            for c in (summary.get("tables", {}).get(table) or {}).get("columns", [])
            if c["setting"] == setting
        ),
        None,
    )
    if col is None:
        raise FieldError(f"no column with setting {setting!r} in table {table!r}")
    rec = _cell(summary, table, col, method)
    if rec is None:
        raise FieldError(f"no result for {method!r} in {table}/{setting}")
    if field == "pm":
        return format_pm(rec["mean"], rec["std"])
    if field == "paper_pm":
        if rec.get("paper_mean") is None:
            raise FieldError(f"no paper number for {method!r} in {table}/{setting}")
        return format_pm(rec["paper_mean"], rec["paper_std"])
    if field == "r":
        return rec.get("r") or ""
    if field == "job_min":
        cost = (summary["tables"][table] or {}).get("cost_at_selected_r") or []
        row = next(
            (
                c
                for c in cost
                if c.get("Setting") == col and c.get("Method") == method_label(method)
            ),
            None,
        )
        if row is None or not row.get("job time (s)"):
            raise FieldError(f"no job time for {method!r} in {table}/{setting}")
        return float(row["job time (s)"]) / 60
    if field in ("upper", "lower"):
        if rec.get("paper_mean") is None:
            raise FieldError(f"no paper number for {method!r} in {table}/{setting}")
        sign = 1 if field == "upper" else -1
        return rec["paper_mean"] + sign * N_STD * (rec.get("paper_std") or 0.0)
    if field == "paper_stds":
        if rec.get("diff") is None or not rec.get("paper_std"):
            raise FieldError(f"no paper std for {method!r} in {table}/{setting}")
        return rec["diff"] / rec["paper_std"]
    if field not in _FORMATS:
        raise FieldError(f"unknown field {field!r}")
    if rec.get(field) is None:
        raise FieldError(f"no {field} for {method!r} in {table}/{setting}")
    return rec[field]


def _shown(field: str, value) -> str:
    return value if isinstance(value, str) else format(value, _FORMATS[field])


class Cells:
    """Cells of the summary (one table; settings x methods), as the prose reads them.

    ``cells.FIELD`` is the field of the one cell (:data:`FIELD_HELP`), formatted;
    ``min``, ``max``, ``argmin`` and ``argmax`` pick over several cells.
    """

    def __init__(self, summary, table, settings, methods, problems: _Problems):
        self._summary, self._table, self._problems = summary, table, problems
        self._settings, self._methods = settings.split(","), methods.split(",")

    def _name(self, field: str = "") -> str:
        path = f"{self._table}/{','.join(self._settings)}/{','.join(self._methods)}"
        return f"{path}.{field}" if field else path

    def _values(self, field: str) -> list[tuple[str, Any]]:
        return [
            (m, _summary_value(self._summary, self._table, s, m, field))
            for s in self._settings
            for m in self._methods
        ]

    def __getattr__(self, field: str) -> str:
        """Return ``field`` of the one cell, formatted (or marked when missing)."""
        if field.startswith("_") or field not in (*_FORMATS, *_TEXT_FIELDS):
            raise AttributeError(field)
        try:
            values = self._values(field)
            if len(values) != 1:
                raise FieldError("several cells need one of min, max, argmin, argmax")
            return _shown(field, values[0][1])
        except (FieldError, KeyError, TypeError) as exc:
            return self._problems.mark(self._name(field), exc)

    def _pick(self, op: str, field: str) -> str:
        try:
            values = self._values(field)
            best = (min if op.endswith("min") else max)(values, key=lambda v: v[1])
            if op.startswith("arg"):
                return method_label(best[0])
            return _shown(field, best[1])
        except (FieldError, KeyError, TypeError) as exc:
            return self._problems.mark(f"{op} {self._name(field)}", exc)

    def min(self, field: str) -> str:
        """Return the smallest value of ``field`` over the cells."""
        return self._pick("min", field)

    def max(self, field: str) -> str:
        """Return the largest value of ``field`` over the cells."""
        return self._pick("max", field)

    def argmin(self, field: str) -> str:
        """Return the label of the method with the smallest ``field``."""
        return self._pick("argmin", field)

    def argmax(self, field: str) -> str:
        """Return the label of the method with the largest ``field``."""
        return self._pick("argmax", field)

    @property
    def flag(self) -> str:
        """Whether the cells lie within, outside or partly outside the paper's 2 std."""
        try:
            self._values("mean")  # a result must exist
            flags = [
                outside_paper(
                    _cell(self._summary, self._table, self._column(s), m) or {}
                )
                for s in self._settings
                for m in self._methods
            ]
            if any(f is None for f in flags):
                raise FieldError("no paper number to compare with")
        except (FieldError, KeyError, TypeError) as exc:
            return self._problems.mark(f"flag {self._name()}", exc)
        return (
            "outside"
            if all(flags)
            else "within"
            if not any(flags)
            else ("partly outside")
        )

    def _column(self, setting: str) -> str:
        cols = self._summary["tables"][self._table]["columns"]
        return next(c["label"] for c in cols if c["setting"] == setting)


# -------------------------------------------------------------- the investigations


class Investigation:
    """The data an investigation script handed over: its tables and its facts.

    ``data`` is ``investigations/results/<stem>.json``: ``tables``, a list of
    ``{"heading", "columns", "rows"}`` (the cells as the script shows them), and
    ``facts``, the numbers its text states, by name.
    """

    def __init__(self, stem: str, data: Mapping, problems: _Problems | None = None):
        self.stem, self._data = stem, data
        self._problems = problems if problems is not None else _Problems()
        self.facts = _Facts(stem, data.get("facts") or {}, self._problems)

    def bind(self, problems: _Problems) -> Investigation:
        """Return the same data, reporting its missing cells to ``problems``."""
        return Investigation(self.stem, self._data, problems)

    @property
    def data(self) -> Mapping:
        """The data as handed over (``<stem>.json``)."""
        return self._data

    def tables(self, section: str = "") -> list[Mapping]:
        """Return the tables under a '#### ' heading that contains ``section``."""
        return [
            t
            for t in self._data.get("tables", [])
            if section in (t.get("heading") or "")
        ]

    def has(self, section: str) -> bool:
        """Whether a table's heading contains ``section``."""
        return bool(section) and bool(self.tables(section))

    def column(self, words: str, section: str = "") -> str:
        """Return the one column header that contains ``words``."""
        hits = {
            c for t in self.tables(section) for c in t.get("columns", []) if words in c
        }
        if len(hits) != 1:
            return self._problems.mark(
                f"{self.stem} | column {words!r}",
                FieldError(f"{len(hits)} columns match (expected one)"),
            )
        return hits.pop()

    def cell(self, row: str | Sequence[str], column: str, section: str = "") -> str:
        """Return the cell under ``column`` of the one row that starts with ``row``."""
        keys = [row] if isinstance(row, str) else list(row)
        tables = self.tables(section)
        hits = [
            r[t["columns"].index(column)]
            for t in tables
            if column in t["columns"]
            for r in t["rows"]
            if r[: len(keys)] == keys and len(r) == len(t["columns"])
        ]
        if len(hits) != 1:
            where = f" > {section}" if section else ""
            return self._problems.mark(
                f"{self.stem}{where} | {' & '.join(keys)} | {column}",
                FieldError(f"{len(hits)} cells match (expected one)"),
            )
        return hits[0]


class _Facts:
    def __init__(self, stem: str, facts: Mapping, problems: _Problems):
        self._stem, self._facts, self._problems = stem, facts, problems

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._facts:
            return self._problems.mark(f"{self._stem}.facts.{name}", KeyError(name))
        return str(self._facts[name])


class _Missing:
    """An investigation whose output is not included: each of its fields is marked."""

    def __init__(self, stem: str, problems: _Problems):
        self._stem, self._problems = stem, problems

    def has(self, section: str) -> bool:
        """No output, no table."""
        return False

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name == "facts":
            return _Facts(self._stem, {}, self._problems)
        return lambda *a, **k: self._problems.mark(
            f"{self._stem}.{name}",
            FieldError(f"no included output named {self._stem!r}"),
        )


@jinja2.pass_context
def _pm(context, value: str) -> str:
    """Return the first 'a ± b' of a cell."""
    m = _PM.search(value)
    if m is None:
        return context["_problems"].mark(f"{value} | pm", FieldError("no 'a ± b'"))
    return m.group(0)


@jinja2.pass_context
def _nth(context, value: str, k: int) -> str:
    """Return the k-th number (from 0) of a cell."""
    numbers = re.findall(_NUMBER, value)
    if k >= len(numbers):
        return context["_problems"].mark(
            f"{value} | nth({k})", FieldError(f"{len(numbers)} numbers")
        )
    return numbers[k]


# ------------------------------------------------------------------ rendering


@cache
def environment() -> jinja2.Environment:
    """Return the Jinja2 environment of REPRODUCTION.md's templates (package data)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tcca_core.reproduction", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Markdown, not HTML
    )
    env.filters.update(pm=_pm, nth=_nth)
    return env


def _log(problems: Sequence[str]) -> None:
    for p in problems:
        logger.warning("REPRODUCTION.md field not filled in: %s", p)


def _names_read(text: str) -> set[str]:
    """Return the variables a template reads (those not given: missing outputs)."""
    from jinja2 import meta

    return set(meta.find_undeclared_variables(environment().parse(text)))


_BARE = re.compile(r"(?<![\w.\-/])[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")


def _prose(text: str) -> Iterable[str]:
    """Yield the text of a template outside its expressions.

    An expression that is a bare literal is yielded too: a number typed into an
    expression is typed by hand as well.
    """
    tokens = list(environment().lex(text))
    i = 0
    while i < len(tokens):
        _, kind, value = tokens[i]
        if kind == "data":
            yield value
        elif kind == "variable_begin":
            j = next(k for k in range(i, len(tokens)) if tokens[k][1] == "variable_end")
            inner = [t for t in tokens[i + 1 : j] if t[1] != "whitespace"]
            if len(inner) == 1 and inner[0][1] in ("integer", "float", "string"):
                yield f" {inner[0][2]} "
            else:
                yield " FIELD "
            i = j
        i += 1


def hand_typed_numbers(text: str, allowed: Sequence[str] = ()) -> list[str]:
    """Numbers typed by hand in a template: outside expressions, comments and code.

    ``allowed`` are regular expressions of phrases that may hold a number (the
    protocol's settings, such as ``eps = 1e-2``); each is removed before looking.
    Returns each remaining number with the words around it.
    """
    text = "".join(_prose(text))
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", " CODE ", text)
    for phrase in allowed:
        text = re.sub(phrase, " SETTING ", text)
    out = []
    for m in _BARE.finditer(text):
        around = " ".join(text[max(0, m.start() - 30) : m.end() + 30].split())
        out.append(f"{m.group(0)!r} in '...{around}...'")
    return out
