"""The [Re] article: a ReScience C style replication report, built from the outputs.

``article/article.typ`` (a Typst document, with its template ``article/rescience.typ``)
holds the article's layout and prose and no number: everything it quotes is read from
``article/data.json``, which :func:`article_data` writes from the committed outputs
(``results/summary.json``, the equal-tuning investigation's data, the record of
deviations ``docs/deviations.md`` and the verdicts of :mod:`.verdicts`). Each number
of the data is registered with its source (``numbers``: the text shown, the file and
the key it comes from), so that a test can read every one back from its source and
find every number of the PDF's text among them. :func:`build` writes the data,
``article/metadata.yaml`` (the ReScience C metadata) and compiles ``article.pdf``
with the ``typst`` wheel (the ``article`` extra): no TeX, no system fonts, a fixed
timestamp, so the same outputs give the same bytes.

``python -m tcca_core.reproduction.article`` (rule ``article``) builds it;
``--check`` builds into a temporary folder and fails if a committed file differs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .._io import atomic_write, atomic_write_text
from ..paper import PAPER_TABLES
from ..registry import METHODS
from ..reporting import READINGS, format_pm, method_label
from . import record, verdicts
from .summary import N_STD, TABLE_ORDER, _of_paper, outside_paper

#: The article's folder, relative to the repository.
ARTICLE = "article"
#: What :func:`build` writes there (the Typst sources are committed by hand).
OUTPUTS = ("data.json", "metadata.yaml", "article.pdf")
SOURCE, TEMPLATE = "article.typ", "rescience.typ"
#: The PDF's date (Typst's clock): fixed, so that a rebuild gives the same bytes.
TIMESTAMP = 0
#: The works the article cites (bibliographic strings, not results).
_REFERENCES = (
    "N. P. Rougier et al., Sustainable computational science: the ReScience "
    "initiative, PeerJ Computer Science 3:e142, 2017.",
    "D. P. Foster, R. Johnson, S. M. Kakade and T. Zhang, Multi-view dimensionality "
    "reduction via canonical correlation analysis, Technical report TTI-TR-2008-4, "
    "Toyota Technological Institute at Chicago, 2008.",
)
_TABLE_TITLES = {
    "secstr": "SecStr, 100 labeled (RLS)",
    "ads": "Ads, 100 labeled (RLS)",
    "mfeat_linear": "mfeat, linear methods (kNN)",
    "mfeat_kernel": "mfeat, kernel methods (kNN)",
}


def original(root: str | os.PathLike) -> tuple[str, str]:
    """Return the replicated article as a citation, and its DOI (``CITATION.cff``)."""
    cff = yaml.safe_load((Path(root) / "CITATION.cff").read_text())
    ref = cff["preferred-citation"]
    names = [f"{a['given-names'][0]}. {a['family-names']}" for a in ref["authors"]]
    who = ", ".join(names[:-1]) + " and " + names[-1]
    text = (
        f"{who}, {ref['title']}, {ref['journal']} {ref['volume']}({ref['issue']}), "
        f"{ref['start']}-{ref['end']}, {ref['year']}"
    )
    return text, ref["doi"]


class Numbers:
    """The numbers the article quotes, each with the source it is read from."""

    def __init__(self) -> None:
        self.entries: list[dict] = []

    def add(self, text: str, source: Mapping) -> str:
        """Register ``text`` (as shown) with its source; return the text."""
        self.entries.append({"text": text, "source": dict(source)})
        return text


def _load(root: Path, rel: str) -> Any:
    return json.loads((root / rel).read_text())


def _cell(summary, table, setting, method) -> dict | None:
    for rec in summary["tables"][table]["accuracy"]["val"]:
        if rec["setting"] == setting and rec["method"] == method:
            return rec if rec.get("mean") is not None else None
    return None


def _pm(nums: Numbers, summary, table, setting, method, which="") -> str:
    rec = _cell(summary, table, setting, method)
    if rec is None:
        return "—"
    mean, std = rec[f"{which}mean"], rec[f"{which}std"]
    if mean is None:
        return "—"
    src = {
        "file": "results/summary.json",
        "table": table,
        "setting": setting,
        "method": method,
        "fields": [f"{which}mean", f"{which}std"],
    }
    return nums.add(format_pm(mean, std), src)


def _accuracy_tables(nums: Numbers, summary: Mapping) -> list[dict]:
    out = []
    for table in TABLE_ORDER:
        t = summary["tables"].get(table)
        if t is None:
            continue
        cols = t["columns"]
        paper = bool(PAPER_TABLES.get(t.get("paper_table") or table))
        methods = sorted(
            {r["method"] for r in t["accuracy"]["val"] if _of_paper(r["method"])},
            key=lambda m: list(METHODS).index(m),
        )
        header = ["method"]
        for c in cols:
            header += [f"ours, {c['label']}"] + (
                [f"paper, {c['label']}"] if paper else []
            )
        rows = []
        for m in methods:
            row = [method_label(m)]
            for c in cols:
                ours = _pm(nums, summary, table, c["setting"], m)
                rec = _cell(summary, table, c["setting"], m)
                flag = bool(rec and outside_paper(rec))
                row.append(ours + (" †" if flag else ""))
                if paper:
                    row.append(_pm(nums, summary, table, c["setting"], m, "paper_"))
            rows.append(row)
        out.append(
            {
                "key": table,
                "title": _TABLE_TITLES.get(table, table),
                "header": header,
                "rows": rows,
                "paper": paper,
            }
        )
    return out


def _equal_tuning(nums: Numbers, data: Mapping | None) -> list[list[str]]:
    if not data:
        return []
    table = data["tables"][0]
    cols = table["columns"]
    keep = ("paper protocol (eps = 1e-2)", "equal tuning", "change")
    rows = []
    for row in table["rows"]:
        rec = dict(zip(cols, row, strict=True))
        if rec["method"] not in ("CCA (BST)", "CCA (AVG)", "CCA-LS", "TCCA"):
            continue
        shown = [rec["cell"], rec["method"]]
        for col in keep:
            src = {
                "file": "investigations/results/equal_tuning.json",
                "table": 0,
                "row": [rec["cell"], rec["method"]],
                "column": col,
            }
            shown.append(nums.add(rec[col], src))
        rows.append(shown)
    return rows


def _verdicts(nums: Numbers, summary: Mapping, equal: Mapping | None) -> dict:
    judged = verdicts.judge(summary, equal)
    counts = {s: 0 for s in verdicts.STATUSES}
    for j in judged:
        counts[j["paper"].status] += 1
    src = {"computed": "verdicts"}
    return {
        "n": nums.add(str(len(judged)), {**src, "what": "claims"}),
        "counts": [
            {"status": s, "n": nums.add(str(n), {**src, "status": s})}
            for s, n in counts.items()
            if n
        ],
        "rows": [
            {
                "id": j["claim"].id,
                "subject": j["claim"].subject,
                "claim": j["claim"].claim,
                "paper": j["paper"].status,
                "equal": j["equal"].status,
            }
            for j in judged
        ],
    }


def _deviations(nums: Numbers, root: Path) -> dict:
    entries = record.parse((root / "docs" / "deviations.md").read_text())
    src = {"file": "docs/deviations.md"}
    kinds = [e for e in entries if any("deviation" in k for k in e["kinds"])]
    return {
        "n": nums.add(str(len(entries)), {**src, "what": "entries"}),
        "n_deviation": nums.add(str(len(kinds)), {**src, "what": "deviations"}),
        "entries": [{"id": e["id"], "title": e["title"]} for e in kinds],
    }


def _fact(nums: Numbers, summary, table, setting, method, field) -> str:
    rec = _cell(summary, table, setting, method)
    if rec is None:
        return "—"
    src = {"file": "results/summary.json", "table": table, "setting": setting,
           "method": method, "fields": [field], "format": "+.2f"}  # fmt: skip
    return nums.add(f"{rec[field]:+.2f}", src)


def _side(summary, table, methods) -> str:
    """Where ``methods``' means lie against the paper's in a table, in words."""
    diffs = [
        rec["diff"]
        for rec in summary["tables"][table]["accuracy"]["val"]
        if rec["method"] in methods and rec.get("diff") is not None
    ]
    if diffs and all(d > 0 for d in diffs):
        return "above"
    if diffs and all(d < 0 for d in diffs):
        return "below"
    return "on both sides of"


def _outside(summary, method) -> list[str]:
    """Return the cells of ``method`` outside the paper's mean +- N_STD std."""
    out = []
    for table in TABLE_ORDER:
        t = summary["tables"].get(table)
        for rec in (t or {}).get("accuracy", {}).get("val", []):
            if rec["method"] == method and outside_paper(rec):
                out.append(f"{_TABLE_TITLES[table].split(',')[0]} ({rec['column']})")
    return out


def _equal_words(nums: Numbers, data: Mapping | None) -> dict:
    """TCCA's and CCA (BST)'s cells and gains under equal tuning on Ads."""
    if not data:
        return {}
    table = data["tables"][0]
    rows = {(r[0], r[1]): dict(zip(table["columns"], r, strict=True))
            for r in table["rows"]}  # fmt: skip
    out = {}
    for key, method in (("tcca", "TCCA"), ("bst", "CCA (BST)")):
        rec = rows[("ads #labeled = 100", method)]
        for col, name in (("equal tuning", "pm"), ("change", "change")):
            src = {"file": "investigations/results/equal_tuning.json", "table": 0,
                   "row": ["ads #labeled = 100", method], "column": col}  # fmt: skip
            out[f"{key}_{name}"] = nums.add(rec[col], src)
    return out


def article_data(root: str | os.PathLike) -> dict:
    """Return everything the article quotes, read from the committed outputs."""
    root = Path(root)
    summary = _load(root, "results/summary.json")
    eq_path = root / "investigations" / "results" / "equal_tuning.json"
    equal = json.loads(eq_path.read_text()) if eq_path.is_file() else None
    nums = Numbers()
    cited, doi = original(root)
    prov = summary["provenance"]
    cfg = prov.get("config") or {}
    versions = prov.get("versions") or {}
    data = {
        "title": "[Re] Tensor Canonical Correlation Analysis for Multi-view "
        "Dimension Reduction",
        "original": cited,
        "doi": doi,
        "readings": {"val": READINGS["val"], "best_r": READINGS["best_r"]},
        "protocol": {
            "splits": nums.add(str(cfg.get("n_splits")), {"config": "n_splits"}),
            "seed": nums.add(str(prov.get("seed")), {"config": "seed"}),
            "validation": nums.add(
                str(cfg.get("val_fraction")), {"config": "val_fraction"}
            ),
            "n_std": nums.add(f"{N_STD:g}", {"constant": "N_STD"}),
        },
        "tables": _accuracy_tables(nums, summary),
        "equal_tuning": _equal_tuning(nums, equal),
        "verdicts": _verdicts(nums, summary, equal),
        "deviations": _deviations(nums, root),
        "discussion": {
            "tcca_84k": _pm(nums, summary, "secstr", "84k", "tcca"),
            "tcca_84k_paper": _pm(nums, summary, "secstr", "84k", "tcca", "paper_"),
            "tcca_84k_diff": _fact(nums, summary, "secstr", "84k", "tcca", "diff"),
            "tcca_nc_84k": _pm(nums, summary, "secstr", "84k", "tcca_nc"),
            "bst_84k": _pm(nums, summary, "secstr", "84k", "cca_bst"),
            "tcca_ads": _pm(nums, summary, "ads", "l100", "tcca"),
            "tcca_ads_paper": _pm(nums, summary, "ads", "l100", "tcca", "paper_"),
            "bst_ads": _pm(nums, summary, "ads", "l100", "cca_bst"),
            "cca_secstr": _side(summary, "secstr", ("cca_bst", "cca_avg", "cca_ls")),
            "cca_ads": _side(summary, "ads", ("cca_bst", "cca_avg", "cca_ls")),
            "tcca_outside": _outside(summary, "tcca"),
            "equal_ads": _equal_words(nums, equal),
        },
        "references": [cited + ".", *_REFERENCES],
        "figure": "../results/figures/at_a_glance.png",
        "release": {
            "commit": prov["git"]["commit"],
            "digest": prov.get("source_digest") or "",
            "versions": ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        },
    }
    data["numbers"] = nums.entries
    return data


def metadata(root: str | os.PathLike, data: Mapping) -> dict:
    """Return the ReScience C metadata (``metadata.yaml``) of the article."""
    citation = yaml.safe_load((Path(root) / "CITATION.cff").read_text())
    authors = [
        {"name": a.get("name") or " ".join(
            p for p in (a.get("given-names"), a.get("family-names")) if p),
         "orcid": a.get("orcid", ""), "email": a.get("email", ""), "affiliations": ""}
        for a in citation.get("authors", [])
    ]  # fmt: skip
    return {
        "title": data["title"],
        "abstract": (
            "A replication of the experiments of Luo et al. (TKDE 2015) on tensor "
            "canonical correlation analysis, with the paper's protocol and with "
            "equal tuning; every claim of its experiments section is listed with "
            "its verdict."
        ),
        "authors": authors,
        "type": "Replication",
        "language": "Python",
        "domain": "Machine learning",
        "keywords": list(citation.get("keywords") or []),
        "code": {
            "url": citation.get("repository-code", ""),
            "doi": "",
            "swh": "",
        },
        "data": {"url": "", "doi": ""},
        "contact": {"editor": {"name": "", "orcid": ""}, "reviewers": []},
        "review": {"url": "", "doi": ""},
        "replication": {
            "cite": data["original"],
            "bib": "Luo2015",
            "url": "",
            "doi": data["doi"],
        },
        "article": {"number": "", "doi": "", "url": ""},
        "journal": {
            "name": "ReScience C",
            "issn": "2430-3658",
            "volume": "",
            "issue": "",
        },
        "release": {
            "commit": data["release"]["commit"],
            "source_digest": data["release"]["digest"],
        },
    }


def _compile(folder: Path) -> bytes:
    import typst  # the `article` extra

    return typst.compile(
        str(folder / SOURCE),
        root=str(folder.parent),
        ignore_system_fonts=True,
        timestamp=TIMESTAMP,
    )


def build(root: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Write data.json, metadata.yaml and article.pdf; return the folder written.

    ``out`` defaults to ``<root>/article``; elsewhere the Typst sources are copied
    beside the outputs and the figure is read from ``root`` (the PDF is the same).
    """
    root = Path(root).resolve()
    src = root / ARTICLE
    dest = Path(out).resolve() if out else src
    data = article_data(root)
    if dest != src:
        # a copy of the repository's layout: <dest>/../results/figures, the sources
        dest.mkdir(parents=True, exist_ok=True)
        for name in (SOURCE, TEMPLATE):
            _write_bytes(dest / name, (src / name).read_bytes())
        figs = dest.parent / "results" / "figures"
        fig = root / "results" / "figures" / "at_a_glance.png"
        _write_bytes(figs / fig.name, fig.read_bytes())
    atomic_write_text(
        dest / "data.json", json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    )
    meta = yaml.safe_dump(metadata(root, data), sort_keys=False, allow_unicode=True)
    atomic_write_text(dest / "metadata.yaml", meta)
    _write_bytes(dest / "article.pdf", _compile(dest))
    return dest


def _write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (no partial file if killed)."""
    with atomic_write(path) as fh:
        fh.write(data)


def differences(root: str | os.PathLike) -> list[str]:
    """Build into a temporary folder; name each committed output that differs."""
    root = Path(root).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        dest = build(root, Path(tmp) / ARTICLE)
        return [
            f"{ARTICLE}/{name}"
            for name in OUTPUTS
            if not (root / ARTICLE / name).is_file()
            or (root / ARTICLE / name).read_bytes() != (dest / name).read_bytes()
        ]


def main(argv=None) -> int:
    """Build the article (``--check``: write nothing, fail on a stale output)."""
    parser = argparse.ArgumentParser(prog="python -m tcca_core.reproduction.article")
    parser.add_argument("--root", default=".", help="the repository (default: .)")
    parser.add_argument(
        "--check", action="store_true", help="fail if a committed output differs"
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = differences(args.root)
        for name in stale:
            print(
                f"{name} differs from what the committed outputs give", file=sys.stderr
            )
        return 1 if stale else 0
    print(build(args.root) / "article.pdf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
