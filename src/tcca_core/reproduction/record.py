"""docs/deviations.md, the record of departures from the paper, as an index.

``docs/deviations.md`` is the repository's one record of every departure from the
paper's protocol and every decision the paper leaves open (entries **D-1**, **D-2**,
...; each with the paper's words, ours, why, *Where* it is implemented and its
*Effect*). REPRODUCTION.md does not repeat it: it shows an index generated from it,
one row per entry with its kind, its title, where it is
implemented and whether its effect was measured, linked to the measurement. The
numbers stay in the record; the index has none of its own.

The investigations' notes name the record with a line ``<!-- record: PATH -->``;
:func:`~.investigations.include_files` frames :func:`parse`'s entries there as data,
and :func:`index` lays them out once the document's headings are known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["index", "parse"]

_ENTRY = re.compile(r"^\*\*(D-\d+)\.\s+(.+?)\*\*\s*(.*)$", re.S)
_BULLET = re.compile(r"^\*([A-Z][\w ]*)\*:\s*(.*)$", re.S)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _anchor(title: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def parse(text: str) -> list[dict]:
    """Return the entries of the record: id, title, kinds, section, bullets.

    An entry starts at a line ``**D-N. Title.** [kind] [kind]`` and runs to the
    next entry or heading; its bullets are the lines ``- *Name*: text`` (with
    their continuation lines and sub-bullets), by name (``Paper``, ``Ours``,
    ``Why``, ``Where``, ``Effect``), each on one line.
    """
    entries: list[dict] = []
    section = ""
    block: list[str] = []

    def close():
        if not block:
            return
        parts = re.split(r"\n(?=- )", "\n".join(block).strip())
        m = _ENTRY.match(_one_line(parts[0]))
        if m is None:
            raise ValueError(f"not an entry: {_one_line(parts[0])[:60]!r}")
        bullets = {}
        for part in parts[1:]:
            b = _BULLET.match(part[2:].strip())
            if b is not None:
                bullets[b.group(1)] = _one_line(b.group(2))
        entries.append(
            {
                "id": m.group(1),
                "title": m.group(2).strip(),
                "kinds": re.findall(r"\[([^\]]+)\]", m.group(3)),
                "section": section,
                "bullets": bullets,
            }
        )
        block.clear()

    for line in text.splitlines():
        if line.startswith("#"):
            close()
            section = line.lstrip("#").strip()
        elif line.startswith("**D-"):
            close()
            block.append(line)
        elif block:
            block.append(line)
    close()
    return entries


_REPRO = re.compile(r"REPRODUCTION\.md,?\s+(\*[^*]+\*(?:(?:,\s*|\s+and\s+)\*[^*]+\*)*)")
_FILE = re.compile(r"`((?:investigations/results|benchmarks)/[\w./-]+\.md)`")
_BENCH = re.compile(r"BENCHMARKS\.md\s+\*([^*]+)\*")


def _links(effect: str, headings: Sequence[str]) -> list[str]:
    """Links to the measurements an *Effect* names: sections, outputs, files."""
    out = []
    for m in _REPRO.finditer(effect):
        for name in re.findall(r"\*([^*]+)\*", m.group(1)):
            hit = next((h for h in headings if h == name), None) or next(
                (h for h in headings if h.startswith(name)), None
            )
            out.append(f"[{name}](#{_anchor(hit)})" if hit else f"*{name}*")
    for m in _BENCH.finditer(effect):
        out.append(f"[BENCHMARKS.md, {m.group(1)}](BENCHMARKS.md)")
    for m in _FILE.finditer(effect):
        out.append(f"[{m.group(1).rsplit('/', 1)[-1]}]({m.group(1)})")
    if "results/summary.json" in effect:
        out.append("[the committed run](results/summary.json)")
    return list(dict.fromkeys(out))


def effect_status(entry: Mapping) -> str:
    """Say whether the entry's effect was measured (its *Effect* bullet's words).

    "measured" (it names where), "partly measured" (also says "not measured"),
    "not measured", "none" (it says there is none), "not run", "no effect to
    measure" (no *Effect* bullet: a fact, not a choice), or "see the entry".
    """
    effect = entry["bullets"].get("Effect")
    if effect is None:
        return "no effect to measure"
    low = effect.lower()
    if "not run" in low:
        return "not run"
    missing = "not measured" in low or "cannot be measured" in low
    none = low.startswith("none")
    measured = bool(
        _REPRO.search(effect) or _FILE.search(effect) or "BENCHMARKS" in effect
    )
    if missing:
        return "partly measured" if measured or none else "not measured"
    if none:
        return "none"
    return "measured" if measured else "see the entry"


def index(
    entries: Sequence[Mapping], headings: Sequence[str], source: str
) -> tuple[str, dict[str, int]]:
    """Return the index table of the record, and its entries per effect status.

    ``headings``: the document's headings (to link the sections an *Effect*
    names); ``source``: the record's path, relative to the document.
    """
    rows = []
    counts: dict[str, int] = {}
    for e in entries:
        status = effect_status(e)
        counts[status] = counts.get(status, 0) + 1
        effect = e["bullets"].get("Effect", "")
        links = _links(effect, headings)
        where = e["bullets"].get("Where", "")
        rows.append(
            [
                f"[{e['id']}]({source}#{_anchor(e['section'])})",
                "; ".join(e["kinds"]),
                e["title"],
                where,
                status + (": " + ", ".join(links) if links else ""),
            ]
        )
    header = ["entry", "kind", "what", "where implemented", "effect"]

    def esc(x):
        return str(x).replace("|", "\\|")

    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(map(esc, r)) + " |" for r in rows]
    return "\n".join(lines), counts
