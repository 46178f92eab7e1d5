"""Every text output escapes what it did not write itself, for its own format.

A table whose title, column labels and machine string come from a hostile
configuration is written as HTML, Markdown, LaTeX and CSV; each output is parsed (the
HTML with :mod:`html.parser`, the Markdown rendered by markdown-it and parsed, the
CSV with :mod:`csv`) and must carry none of the injected markup: no element, no
event-handler attribute, no link, no formula (backticks may make a code span, which
shows its text as written). The Snakemake report's reST never
receives a folder name of the configuration, and the schema refuses titles that are
not one line of plain text.
"""

from __future__ import annotations

import csv
import html.parser
import re
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
import pytest

from tcca_core import reporting
from tcca_core._io import csv_cell, write_csv
from tcca_core.pipeline import report_jobs
from tcca_core.pipeline.config_schema import ConfigError, check_schema
from tcca_core.protocol import RESULT_COLUMNS
from tcca_core.reporting import escape

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"

SCRIPT = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
LINK = "[click](javascript:alert(3)) <javascript:alert(4)> `code`"
FORMULA = '=HYPERLINK("http://evil.example","x")'
HOSTILE = f"{SCRIPT} {LINK}"


class _Elements(html.parser.HTMLParser):
    """The tags and attribute names of an HTML document."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs


def _elements(text: str) -> _Elements:
    parser = _Elements()
    parser.feed(text)
    parser.close()
    return parser


def _assert_no_injection(page: str) -> None:
    found = _elements(page)
    assert "script" not in found.tags and "img" not in found.tags
    assert not [name for name, _ in found.attrs if name.startswith("on")]
    assert not [v for _, v in found.attrs if v and "javascript:" in v]


def _runs() -> pd.DataFrame:
    out = []
    for split in range(3):
        for method, r in (("tcca", 5), ("tcca", 10), ("bsf", None)):
            row = dict.fromkeys(RESULT_COLUMNS)
            row.update(
                setting="a",
                method=method,
                learner="rls",
                split=split,
                r=r,
                val_acc=0.6 + 0.01 * split,
                test_acc=0.5 + 0.02 * split,
                fit_s=0.1,
                peak_mb=5.0,
                threads=1,
            )
            out.append(row)
    return pd.DataFrame(out)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Every text output of one table whose strings are all hostile."""
    tmp = tmp_path_factory.mktemp("escaping")
    names = [
        "csv", "md", "tex", "csv_best_r", "md_best_r", "tex_best_r", "json",
        "cost", "cost_md", "cost_tex", "cost_by_r", "html",
    ]  # fmt: skip
    ext = {"md": ".md", "tex": ".tex", "json": ".json", "html": ".html"}
    out = {n: tmp / (n + ext.get(n.rsplit("_", 1)[-1], ".csv")) for n in names}
    spec = {
        "name": "t",
        "title": f"T {HOSTILE}",
        "dataset": "d",
        "paper": None,
        "columns": [{"setting": "a", "label": f"{FORMULA} {HOSTILE}"}],
        "same_as": {"a": {}},
        "run_note": "reduced run: x",
    }
    report_jobs.build_table(_runs(), [], spec, out, machine=f"{FORMULA} {SCRIPT}")
    return out


def test_html_page_carries_no_element_from_the_configuration(written):
    page = written["html"].read_text()
    _assert_no_injection(page)
    # the strings are there, as text
    assert escape.html("<script>alert(2)</script>") in page


def test_html_escapes_column_headings():
    table = pd.DataFrame({SCRIPT: ["1"], "b": [SCRIPT]})
    page = reporting.to_html([(SCRIPT, table, [SCRIPT])], title=SCRIPT)
    _assert_no_injection(page)
    # title, h2, h3, note, column heading and cell: each there, as text
    assert page.count("&lt;script&gt;alert(2)&lt;/script&gt;") == 6


def _render_markdown(text: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(text)


@pytest.mark.parametrize("key", ["md", "md_best_r", "cost_md"])
def test_markdown_renders_no_html_and_no_link(written, key):
    text = written[key].read_text()
    rendered = _render_markdown(text)
    found = _elements(rendered)
    _assert_no_injection(rendered)
    assert "a" not in found.tags
    assert not re.search(r"(?<!\\)(\][(\[]|<[A-Za-z/!?])", text)  # all escaped


def test_markdown_escape_keeps_plain_text_and_one_line():
    assert escape.markdown("CCA (BST) #labeled = 4, 62.36 ± 1.27") == (
        "CCA (BST) #labeled = 4, 62.36 ± 1.27"
    )
    assert escape.markdown("a\n<b>|[c](d)` p < 0.01 [e]") == (
        r"a \<b>\|[c\](d)` p < 0.01 [e]"
    )
    assert escape.markdown("\\](x)") == r"\\\](x)"
    rendered = _render_markdown(f"**{escape.markdown(HOSTILE)}**\n")
    assert "<a" not in rendered and "<script" not in rendered


def test_latex_caption_and_notes_are_one_line_and_escaped():
    table = pd.DataFrame({"a\nb": ["x\n\ny"]})
    tex = reporting.to_latex(table, "T\n\n\\input{/etc/passwd}", notes=["n\r\n$x$"])
    assert "\\input{" not in tex and "\\$x\\$" in tex
    assert "\n\n" not in tex  # no blank line: no paragraph break inside the table
    assert "\r" not in tex


@pytest.mark.parametrize("key", ["csv", "csv_best_r", "cost", "cost_by_r"])
def test_csv_cells_never_start_a_formula(written, key):
    with written[key].open(newline="") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert cells
    starts = [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    numbers = [c for c in starts if re.fullmatch(r"[+-]\d+(\.\d+)?(e[+-]?\d+)?", c)]
    assert starts == numbers


def test_csv_cell_neutralizes_only_formulas(tmp_path):
    for value in (
        "=1+2",
        "+A1",
        "-A1",
        "@SUM(A1)",
        "\t=1",
        "\r=1",
        "=cmd|' /C calc'!A0",
    ):
        assert csv_cell(value) == "'" + value
    for value in ("-0.25", "+1.50", "1e-3", "-inf", "x=1", "", "n/a", 3, None):
        assert csv_cell(value) == value
    write_csv(
        pd.DataFrame({"=x": ["=1", "-1.5"], "n": [np.int64(1), -2]}), tmp_path / "c"
    )
    assert (tmp_path / "c").read_text() == "'=x,n\n'=1,1\n-1.5,-2\n"


def test_report_rst_takes_no_string_from_the_configuration():
    """workflow.rst is a Jinja template of reST: a folder name with backticks and
    line breaks would add a ``.. raw:: html`` block. Only integers checked by the
    schema may go in."""
    text = (ROOT / "workflow" / "report" / "workflow.rst").read_text()
    used = set(re.findall(r"snakemake\.config\[\"(\w+)\"\]", text))
    assert used <= {"seed", "n_splits"}
    hostile = "x``\n\n.. raw:: html\n\n   <script>alert(1)</script>\n\n``"
    config = {"seed": 0, "n_splits": 5, "data_root": hostile, "results_dir": hostile}
    rendered = jinja2.Template(text).render(snakemake=type("S", (), {"config": config}))
    assert "raw::" not in rendered and "<script" not in rendered
    docutils_core = pytest.importorskip("docutils.core")
    page = docutils_core.publish_string(
        rendered, writer="html", settings_overrides={"report_level": 5}
    ).decode()
    _assert_no_injection(page)


def _schema_config(**table):
    column = table.pop("column", {"setting": "s", "label": "L"})
    return {
        "datasets": {"d": {"settings": {"s": {"n_labeled": 4}}}},
        "tables": {"t": {"dataset": "d", "title": "T", "columns": [column], **table}},
    }


@pytest.mark.parametrize(
    "edit, key",
    [
        ({"title": "Accuracy $\\frac{a}{b}$"}, "tables.t.title"),
        ({"title": "two\nlines"}, "tables.t.title"),
        ({"column": {"setting": "s", "label": "L\r"}}, "tables.t.columns[0].label"),
        ({"column": {"setting": "s", "label": "$x$"}}, "tables.t.columns[0].label"),
    ],
)
def test_schema_refuses_titles_that_are_not_one_line_of_plain_text(edit, key):
    with pytest.raises(ConfigError) as err:
        check_schema(_schema_config(**edit), SCHEMA)
    lines = str(err.value).splitlines()
    assert any(
        line.startswith(f"invalid config: {key}: must be one line of plain text")
        for line in lines
    ), lines


@pytest.mark.parametrize("key", ["data_root", "results_dir", "fit_cache"])
def test_schema_refuses_folder_names_with_line_breaks(key):
    cfg = {**_schema_config(), key: "x``\n\n.. raw:: html\n"}
    with pytest.raises(ConfigError, match=f"invalid config: {key}: must be a folder"):
        check_schema(cfg, SCHEMA)
