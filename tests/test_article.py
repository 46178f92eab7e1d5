"""The [Re] article: built from the committed outputs, byte for byte, every number sourced.

``article/article.pdf`` is compiled by the ``typst`` wheel (extra ``article``) from
``article/article.typ``, which holds no number, and ``article/data.json``, which
:mod:`tcca_core.reproduction.article` writes from the outputs. The tests: the
committed data, metadata and PDF are what a rebuild gives (the build is
deterministic); every number the data register reads back from its source, here
recomputed without the article module; every decimal number of the PDF's text is
one of them; the Typst sources type no number by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tcca_core.reproduction import verdicts

ROOT = Path(__file__).resolve().parents[1]
ARTICLE = ROOT / "article"
DATA = json.loads((ARTICLE / "data.json").read_text())
SUMMARY = json.loads((ROOT / "results" / "summary.json").read_text())


def _pdf_text() -> str:
    pypdf = pytest.importorskip("pypdf", reason="the article extra is not installed")
    reader = pypdf.PdfReader(ARTICLE / "article.pdf")
    return "\n".join(page.extract_text() for page in reader.pages)


def _from_source(source: dict) -> str:
    """The text a registered number must have, read from its source by hand."""
    if source.get("file") == "results/summary.json":
        t = SUMMARY["tables"][source["table"]]
        (rec,) = [
            r
            for r in t["accuracy"]["val"]
            if r["setting"] == source["setting"] and r["method"] == source["method"]
        ]
        values = [rec[f] for f in source["fields"]]
        if len(values) == 2:
            return f"{values[0]:.2f} ± {values[1]:.2f}"
        return format(values[0], source.get("format", ".2f"))
    if source.get("file") == "investigations/results/equal_tuning.json":
        path = ROOT / source["file"]
        table = json.loads(path.read_text())["tables"][source["table"]]
        col = table["columns"].index(source["column"])
        (row,) = [r for r in table["rows"] if r[:2] == source["row"]]
        return row[col]
    if source.get("file") == "docs/deviations.md":
        text = (ROOT / source["file"]).read_text()
        blocks = re.split(r"\n(?=\*\*D-\d+\.)", text)[1:]
        # an entry's kinds follow its bold title, up to its first bullet
        heads = [" ".join(b.split("\n- ")[0].split()).split("**")[2] for b in blocks]
        if source["what"] == "entries":
            return str(len(heads))
        return str(sum("deviation" in h for h in heads))
    if "config" in source:
        key = source["config"]
        cfg = SUMMARY["provenance"]["config"]
        return str(cfg[key])
    if source.get("constant") == "N_STD":
        from tcca_core.reproduction.summary import N_STD

        return f"{N_STD:g}"
    if source.get("computed") == "verdicts":
        equal = json.loads(
            (ROOT / "investigations" / "results" / "equal_tuning.json").read_text()
        )
        judged = verdicts.judge(SUMMARY, equal)
        if source.get("what") == "claims":
            return str(len(judged))
        return str(sum(j["paper"].status == source["status"] for j in judged))
    raise AssertionError(f"a number with no known source: {source}")


def test_every_registered_number_reads_back_from_its_source():
    assert DATA["numbers"]
    wrong = [
        (n["text"], n["source"])
        for n in DATA["numbers"]
        if n["text"] != _from_source(n["source"])
    ]
    assert wrong == []


def test_every_decimal_of_the_pdf_is_a_registered_number():
    text = _pdf_text()
    registered = set()
    for n in DATA["numbers"]:
        registered.update(re.findall(r"[-+]?\d+\.\d+", n["text"]))
    # decimals with two places, not pieces of a dotted version (numpy 2.4.6)
    quoted = re.findall(r"(?<![\d.])[-+−]?\d+\.\d\d(?![\d.])", text)
    assert len(quoted) > 100
    assert sorted({q.replace("−", "-") for q in quoted} - registered) == []


def test_the_pdf_shows_every_table_cell_and_the_verdict_counts():
    text = " ".join(_pdf_text().split())
    for table in DATA["tables"]:
        for row in table["rows"]:
            for cell in row[1:]:
                assert cell.replace(" †", "") in text, (table["key"], row[0], cell)
    for c in DATA["verdicts"]["counts"]:
        assert f"{c['n']} {c['status']}" in text
    for v in DATA["verdicts"]["rows"]:
        assert v["id"] in text


def test_the_verdicts_are_the_reports():
    report = (ROOT / "REPRODUCTION.md").read_text()
    for v in DATA["verdicts"]["rows"]:
        row = next(r for r in report.splitlines() if r.startswith(f"| {v['id']} |"))
        assert f"**{v['paper']}** | {v['equal']} |" in row


def test_the_metadata_is_rescience_cs():
    meta = yaml.safe_load((ARTICLE / "metadata.yaml").read_text())
    for key in ("title", "authors", "type", "language", "replication", "journal"):
        assert key in meta
    assert meta["type"] == "Replication" and meta["title"].startswith("[Re] ")
    assert meta["release"]["commit"] == SUMMARY["provenance"]["git"]["commit"]


#: Numbers the Typst sources may hold: lengths and proportions of the layout, the
#: paper's section numbers, the name of a setting, the digits of a short commit.
_LAYOUT = re.compile(r"\d+(?:\.\d+)?(?:pt|mm|em|fr|%)")
_ALLOWED = (
    'paper: "a4"',
    "Section 5",
    "Sections 4.2 to 4.4",
    "84K",
    "slice(0, 12)",
    "slice(0, 16)",
    "columns: 5",
    "len() - 1",
    'numbering: "1.1"',
    'display("1")',
    "level == 1",
    "get().first() > 1",
    "luma(90)",
    "luma(160)",
    "luma(245)",
)


@pytest.mark.parametrize("name", ["article.typ", "rescience.typ"])
def test_the_typst_sources_type_no_number(name):
    text = (ARTICLE / name).read_text()
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r'rgb\("#[0-9a-f]{6}"\)', "", text)
    text = re.sub(r"#\(d\.[\w.]+", "", text)  # a field of the data, by name
    text = " ".join(text.split())
    for allowed in _ALLOWED:
        text = text.replace(allowed, "")
    text = _LAYOUT.sub("", text)
    assert re.findall(r"\d+", text) == []


def test_the_committed_article_is_what_the_outputs_give():
    pytest.importorskip("typst", reason="the article extra is not installed")
    from tcca_core.reproduction.article import differences

    assert differences(ROOT) == []


def test_two_builds_give_the_same_bytes(tmp_path):
    pytest.importorskip("typst", reason="the article extra is not installed")
    from tcca_core.reproduction.article import build

    a = build(ROOT, tmp_path / "a" / "article")
    b = build(ROOT, tmp_path / "b" / "article")
    for name in ("article.pdf", "data.json", "metadata.yaml"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
