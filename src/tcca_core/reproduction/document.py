"""REPRODUCTION.md: our numbers beside the paper's, built from ``results/summary.json``.

The pipeline's ``reproduction`` rule calls :func:`build` with the summary, the
written investigations (``docs/investigations.md``, with the outputs of the
investigation scripts inlined by :func:`~.investigations.include_files`) and the list
of tables that did not run. Nothing here is typed in by hand: every number comes from
the summary (or an investigation's data), and each of the paper's qualitative claims
is checked by a function of the summary (:mod:`.claims`) with its rule stated next to
the verdict. The prose is in Jinja2 templates (``templates/*.md.j2``); this module
computes what they show.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping, Sequence

from ..paper import PAPER_TABLES
from ..registry import METHODS, methods_where
from ..reporting import READINGS, format_pm, method_label
from ..reporting.escape import markdown as _md
from . import record, verdicts
from .claims import REPORT_CLAIMS, _fmt
from .investigations import (
    RECORD_STEM,
    _log,
    _Problems,
    environment,
    included_data,
)
from .sentences import prose_context, render_fields
from .significance import ALPHA, MARGIN, PAPER_TEST_HEADER, cell_tests, paper_tests
from .summary import (
    _CCA_FAMILY,
    N_STD,
    TABLE_ORDER,
    _cell,
    _columns,
    _post_hoc,
    _records,
    outside_paper,
)

# ------------------------------------------------------------ post hoc, not run


def _post_hoc_title(method: str) -> str:
    """Return the title of a post hoc method's section (its registry description)."""
    return f"Post hoc: {METHODS[method].description}"


def _post_hoc_link(methods: Sequence[str]) -> str:
    """Markdown links to the sections of ``methods`` (post hoc)."""
    return ", ".join(
        f"[{_post_hoc_title(m)}](#{_anchor(_post_hoc_title(m))})"
        for m in dict.fromkeys(methods)
    )


def _anchor(title: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _family_range(recs: Sequence[Mapping]) -> tuple[float, float, str, str]:
    lo = min(recs, key=lambda r: r["mean"])
    hi = max(recs, key=lambda r: r["mean"])
    return (
        lo["mean"],
        hi["mean"],
        method_label(lo["method"]),
        method_label(hi["method"]),
    )


def _post_hoc_methods(summary: Mapping, tables: Sequence[str]) -> list[str]:
    """List the post hoc methods with a result in ``tables`` (registry order)."""
    seen = {
        rec["method"]
        for table in tables
        for rec in _records(summary, table)
        if _post_hoc(rec["method"]) and rec["mean"] is not None
    }
    return [m for m in METHODS if m in seen]


def _post_hoc_sections(summary: Mapping, tables: Sequence[str]) -> list[dict]:
    """One section per post hoc method (e.g. TCCA (uncentered)), each on its own."""
    return [
        s
        for m in _post_hoc_methods(summary, tables)
        if (s := _post_hoc_section(summary, tables, m)) is not None
    ]


def _post_hoc_section(
    summary: Mapping, tables: Sequence[str], method: str
) -> dict | None:
    """Judge one post hoc method against its group's method of the paper.

    ``templates/post_hoc.md.j2`` shows it; None when it has no result.
    """
    lines, level, labels = [], [], []
    for table in tables:
        for col in _columns(summary, table):
            for rec in _records(summary, table):
                m = rec["method"]
                if rec["column"] != col or m != method or rec["mean"] is None:
                    continue
                spec = METHODS[m]
                labels.append(spec.label)
                base = methods_where(role="paper", family=spec.family, group=spec.group)
                ref = _cell(summary, table, col, base[0]) if base else None
                fam = [
                    c
                    for f in methods_where(
                        role="paper", family=spec.family, group="cca"
                    )
                    if (c := _cell(summary, table, col, f)) is not None
                ]
                text = (
                    f"{table}, {col}: {spec.label} {_fmt(rec)} "
                    f"(r per split {rec.get('r')})"
                )
                if ref is not None:
                    text += f"; {method_label(ref['method'])} (centered) {_fmt(ref)}"
                if ref is not None and ref.get("paper_mean") is not None:
                    pm, ps = ref["paper_mean"], ref.get("paper_std") or 0.0
                    lo_b, hi_b = pm - N_STD * ps, pm + N_STD * ps
                    where = (
                        f"above the paper's +{N_STD:g} std bound ({hi_b:.2f})"
                        if rec["mean"] > hi_b
                        else f"below the paper's -{N_STD:g} std bound ({lo_b:.2f})"
                        if rec["mean"] < lo_b
                        else f"within the paper's {N_STD:g} std"
                    )
                    text += (
                        f"; against the paper's {method_label(ref['method'])} "
                        f"{format_pm(pm, ps)}: {where}"
                    )
                if fam:
                    lo, hi, lo_m, hi_m = _family_range(fam)
                    s = rec["std"] or 0.0
                    rel = (
                        "above"
                        if rec["mean"] > hi + s
                        else "below"
                        if rec["mean"] < lo - s
                        else "level with"
                    )
                    if rel == "level with":
                        level.append(f"{table}, {col}")
                    text += (
                        f"; {rel} the CCA family ({lo:.2f} to {hi:.2f}, "
                        f"{lo_m} to {hi_m})"
                    )
                lines.append(text)
    if not lines:
        return None
    spec = METHODS[method]
    base = methods_where(role="paper", family=spec.family, group=spec.group)
    return {
        "title": _post_hoc_title(method),
        "label": spec.label,
        "note": spec.post_hoc_note,
        "chosen": " and ".join(["r", *(k for k, v in spec.grid.items() if len(v) > 1)]),
        "base": method_label(base[0]) if base else "method",
        "family": ", ".join(method_label(m) for m in _CCA_FAMILY),
        "lines": lines,
        "level": "; ".join(level) if spec.group == "tensor" else "",
    }


def _missing_tables(summary: Mapping, missing: Mapping[str, str]) -> list[dict]:
    """List what the paper's tables that did not run decide, and how to run them.

    One section per data set (``templates/missing_tables.md.j2``).
    """
    cfg = (summary.get("provenance") or {}).get("config") or {}
    cfg_tables = cfg.get("tables") or {}
    absent = [
        t
        for t in missing
        if t not in summary.get("tables", {})
        and (cfg_tables.get(t) or {}).get("paper") in PAPER_TABLES
    ]
    out: list[dict] = []
    for dataset in dict.fromkeys(cfg_tables[t]["dataset"] for t in absent):
        mine = [t for t in absent if cfg_tables[t]["dataset"] == dataset]
        lines, leads = [], 0
        for t in mine:
            paper = PAPER_TABLES[cfg_tables[t]["paper"]]
            label = {
                c.get("paper"): c.get("label") for c in cfg_tables[t].get("columns", [])
            }
            for col, cells in paper.items():
                nums = {m: v for m, v in cells.items() if isinstance(v, tuple)}
                ours = [m for m in ("tcca", "ktcca") if m in nums]
                if not ours or len(nums) < 2:
                    continue
                mean, std = nums[ours[0]]
                best = max((m for m in nums if m != ours[0]), key=lambda m: nums[m][0])
                bm, bs = nums[best]
                leads += mean > bm
                lines.append(
                    f"{t}, {label.get(col) or col} (the paper): "
                    f"{method_label(ours[0])} {format_pm(mean, std)}, the best other "
                    f"method {method_label(best)} {format_pm(bm, bs)} (difference "
                    f"{mean - bm:+.2f}, {(mean - bm) / max(std, bs):+.1f} times the "
                    "larger std)."
                )
        kernel_tables = [
            name for name, cols in PAPER_TABLES.items()
            if any("ktcca" in cells for cells in cols.values())
        ]  # fmt: skip
        settings = (cfg.get("datasets") or {}).get(dataset, {}).get("settings") or {}
        subsets = sorted(
            {s["subset"] for s in settings.values() if s.get("subset") is not None}
        )
        out.append(
            {
                "dataset": dataset,
                "tables": ", ".join(mine),
                "leads": leads,
                "lines": lines,
                "kernel_tables": ", ".join(kernel_tables)
                if kernel_tables and all(k in mine for k in kernel_tables)
                else "",
                "cost": f"{dataset}_cost",  # its cost investigation's data
                "n_splits": cfg.get("n_splits"),
                "subsets": ", ".join(f"{n:,}" for n in subsets),
            }
        )
    return out


# ----------------------------------------------------------------------- layout


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [
        "| " + " | ".join(map(_md, header)) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(map(_md, row)) + " |" for row in rows]
    return "\n".join(lines)


def _link(path: str) -> str:
    """Return a folder as a Markdown link destination (percent-encoded)."""
    return urllib.parse.quote(str(path), safe="/._-~")


def _flag(rec) -> str:
    out = outside_paper(rec)
    if out is None:
        return ""
    return "**outside 2 std**" if out else "within 2 std"


def _table_section(summary: Mapping, table: str, figures: str) -> str:
    t = summary["tables"][table]
    parts = [f"### {_md(t['title'])}", ""]
    has_paper = bool(t.get("paper_table"))
    tests = cell_tests(summary)
    post_hoc = []
    for col in _columns(summary, table):
        a = [r for r in _records(summary, table, "val") if r["column"] == col]
        post_hoc += [r["method"] for r in a if _post_hoc(r["method"])]
        a = [r for r in a if not _post_hoc(r["method"])]
        b = {
            r["method"]: r
            for r in _records(summary, table, "best_r")
            if r["column"] == col
        }
        header = ["Method", "ours (A)", "r (A, per split)", "ours (B)", "r (B)"]
        if has_paper:
            header += ["paper", "(A) - paper", "(A) vs paper", "Welch p (Holm)", "g"]
        rows = []
        for rec in a:
            rb = b.get(rec["method"], {})
            if rec.get("mean") is None:
                ours_a = rec.get("paper_note") or "not run"
            else:
                ours_a = format_pm(rec["mean"], rec["std"])
            ours_b = (
                format_pm(rb["mean"], rb["std"]) if rb.get("mean") is not None else ""
            )
            row = [
                method_label(rec["method"]),
                ours_a,
                rec.get("r") or "",
                ours_b,
                rb.get("r") or "",
            ]
            if has_paper:
                paper = (
                    format_pm(rec["paper_mean"], rec["paper_std"])
                    if rec.get("paper_mean") is not None
                    else (rec.get("paper_note") or "")
                )
                diff = f"{rec['diff']:+.2f}" if rec.get("diff") is not None else ""
                welch_p, g = tests.get((table, col, rec["method"]), ("", ""))
                row += [paper, diff, _flag(rec), welch_p, g]
            rows.append(row)
        n = max((r.get("n_splits") or 0 for r in a), default=0)
        parts += [f"**{_md(col)}** ({n} splits)", "", _md_table(header, rows), ""]
    if post_hoc:
        labels = ", ".join(method_label(m) for m in dict.fromkeys(post_hoc))
        parts += [
            f"*{labels}, a variant added after the test results were seen, is not one "
            f"of the paper's methods: see {_post_hoc_link(post_hoc)}.*",
            "",
        ]
    parts += [
        f"![Accuracy against r: {table}]({_link(figures)}/{table}_accuracy.png)",
        "",
        f"![Fit time and memory against r: {table}]({_link(figures)}/{table}_cost.png)",
        "",
    ]
    return "\n".join(parts)


def _provenance(summary: Mapping) -> str:
    prov = summary.get("provenance", {})
    git = prov.get("git", {}) or {}
    machine = prov.get("machine", {}) or {}
    versions = prov.get("versions", {}) or {}
    cfg = prov.get("config", {}) or {}
    lines = [
        f"- Commit: `{git.get('commit', 'unknown')}`"
        + (" (with uncommitted changes)" if git.get("dirty") else ""),
        f"- Seed: {cfg.get('seed')}, splits: {cfg.get('n_splits')}, r grid: "
        f"{cfg.get('r_grid')}, validation share: {cfg.get('val_fraction')}",
        "- Machine: "
        + ", ".join(
            f"{_md(k)} {_md(v)}" for k, v in sorted(machine.items()) if v is not None
        )
        + (
            " (where the fits ran, as the configuration gives it: they were written "
            "back from committed rows and aggregated on another machine; "
            'results/README.md, "A run across machines")'
            if cfg.get("machine")
            else ""
        ),
        *_own_grids(cfg),
        f"- Threads per job: {prov.get('threads')}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
    ]
    return "\n".join(lines)


def _own_grids(cfg: Mapping) -> list[str]:
    """Provenance lines for the settings that override the r grid."""
    out = []
    for dataset, spec in sorted((cfg.get("datasets") or {}).items()):
        for setting, opts in (spec.get("settings") or {}).items():
            grid = (opts or {}).get("r_grid")
            if grid is not None and grid != cfg.get("r_grid"):
                shown = (
                    f"{grid[0]}, ..., {grid[-1]} ({len(grid)} values)"
                    if isinstance(grid, list) and len(grid) > 4
                    else grid
                )
                out.append(f"- {dataset}/{setting} uses its own r grid: {shown}")
    return out


def _reduced_run(summary: Mapping) -> dict | None:
    """Return what the banner of a reduced run says (None: the paper's grid)."""
    prov = summary.get("provenance") or {}
    cfg = prov.get("config") or {}
    run = prov.get("run") or {}
    n_splits, r_grid = cfg.get("n_splits"), cfg.get("r_grid")
    if n_splits == 5 and r_grid == "paper" and not run.get("reduced"):
        return None
    label = f" ({_md(run['label'])})" if run.get("reduced") else ""
    return {"label": label, "n_splits": n_splits, "r_grid": r_grid}


def _paper_tests(summary: Mapping) -> dict:
    """Return what *Cells against the paper* shows: counts, lists, its table."""
    tests = paper_tests(summary)
    rows = tests.pop("rows")
    tests["table"] = _md_table(PAPER_TEST_HEADER, rows) if rows else ""
    return tests


#: Where the record's index goes; filled in once the document's headings exist.
_RECORD_INDEX = "<!-- the record's index -->"


def _record_section(data: Mapping) -> dict | None:
    """Return the record of deviations' entries (None: the notes name none)."""
    inv = data.get(RECORD_STEM)
    if inv is None:
        return None
    entries = inv.data.get("entries") or []

    def count(word: str) -> int:
        return sum(any(word in k for k in e["kinds"]) for e in entries)

    return {
        "n_deviation": count("deviation"),
        "n_open": count("open"),
        "source": inv.data.get("source", ""),
        "entries": entries,
        "n": len(entries),
        "first": entries[0]["id"] if entries else "",
        "last": entries[-1]["id"] if entries else "",
        "index": _RECORD_INDEX,
    }


def _fill_record(text: str, section: dict | None) -> str:
    """Put the record's index in, its links resolved against the text's headings."""
    if section is None:
        return text
    headings = re.findall(r"^#{2,4} (.+)$", text, re.MULTILINE)
    table, counts = record.index(section["entries"], headings, section["source"])
    shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    return text.replace(_RECORD_INDEX, f"Effects: {shown}.\n\n{table}")


def build(
    summary: Mapping,
    *,
    investigations: str = "",
    missing: Mapping[str, str] | None = None,
    figures: str = "results/figures",
    release: str = "",
    release_banner: str = "",
) -> str:
    """Return the text of REPRODUCTION.md.

    Parameters
    ----------
    summary : mapping
        ``results/summary.json``.
    investigations : str
        The written investigations (``docs/investigations.md``, a template, with
        the outputs of :func:`~.investigations.include_files`), placed after the
        automatic list of deviations.
    missing : mapping, optional
        table -> why it has no results (e.g. data that cannot be downloaded).
    figures : str
        Folder of the figures, relative to REPRODUCTION.md.
    release : str
        The release section (:func:`~.release.release_section`): which release
        owns these numbers and where the library stands against it.
    release_banner : str
        Its one line under the title (:func:`~.release.release_banner`).
    """
    missing = dict(missing or {})
    notes, data = included_data(investigations)
    protocol_record = _record_section(data)
    data.pop(RECORD_STEM, None)
    equal_tuning = data.get("equal_tuning")
    # equal tuning's data are the published run's: a reduced run is not judged by them
    tuned = equal_tuning.data if equal_tuning and not _reduced_run(summary) else None
    verdict = verdicts.context(summary, tuned)
    notes, _ = render_fields(notes.strip(), summary, data)
    problems = _Problems()  # the missing tables' cost facts
    tables = [t for t in TABLE_ORDER if t in summary.get("tables", {})]
    tables += sorted(set(summary.get("tables", {})) - set(TABLE_ORDER))
    text = (
        environment()
        .get_template("reproduction.md.j2")
        .render(
            readings=READINGS,
            n_std=f"{N_STD:g}",
            reduced=_reduced_run(summary),
            provenance=_provenance(summary),
            release=release,
            release_banner=release_banner,
            tables=[_table_section(summary, t, figures) for t in tables],
            figures=_link(figures),
            not_run=[
                (t, _md(why))
                for t, why in missing.items()
                if t not in summary.get("tables", {})
            ],
            missing_tables=_missing_tables(summary, missing),
            post_hoc=_post_hoc_sections(summary, tables),
            post_hoc_link=_post_hoc_link(_post_hoc_methods(summary, tables)),
            claims=[
                {"claim": claim, "rule": rule, **vars(check(summary))}
                for claim, rule, check in REPORT_CLAIMS
            ],
            paper_tests=_paper_tests(summary),
            verdict=verdict,
            alpha=f"{ALPHA:g}",
            margin=f"{MARGIN:g}",
            protocol_record=protocol_record,
            investigations=notes,
            **prose_context(summary, data, problems),
        )
    )
    _log(problems)
    return _fill_record(text, protocol_record).rstrip() + "\n"
