"""The verdict table: every claim of the paper's experiments section, judged by its rule.

The claims list (:data:`tcca_core.reproduction.verdicts.PAPER_CLAIMS`) holds a
verbatim piece of each claim's sentence. Without the paper, the tests check the
list itself (distinct ids and quotes, a rule for each) and the checks against
hand-made cells whose answer follows from the rule. With the paper's LaTeX source
(``../shared/paper/tcca-luo2015.tex`` beside the repository, or the file named by
``TCCA_PAPER_TEX``; skipped only when neither exists), every quote must occur in
the paper's experiments section and every numbered observation there
("1) ... 2) ...") must hold at least one quote: a claim the list leaves out fails.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tcca_core.reproduction import verdicts as V

ROOT = Path(__file__).resolve().parents[1]


def _paper() -> Path | None:
    for p in (os.environ.get("TCCA_PAPER_TEX"),
              ROOT.parent / "shared" / "paper" / "tcca-luo2015.tex"):  # fmt: skip
        if p and Path(p).is_file():
            return Path(p)
    return None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _experiments() -> str:
    path = _paper()
    if path is None:
        pytest.skip("the paper's LaTeX source is not beside the repository")
    tex = path.read_text()
    start = tex.index(r"\section{Experiments}")
    end = tex.index(r"\section{Conclusion}")
    return _norm(tex[start:end])


# ------------------------------------------------------------------ the list


def test_ids_and_quotes_are_distinct_and_every_claim_has_a_rule():
    ids = [c.id for c in V.PAPER_CLAIMS]
    quotes = [_norm(c.quote) for c in V.PAPER_CLAIMS]
    assert len(set(ids)) == len(ids)
    assert len(set(quotes)) == len(quotes)
    assert all(re.fullmatch(r"[SANKC]\d+", i) for i in ids)
    for c in V.PAPER_CLAIMS:
        assert c.rule and c.claim and c.subject, c.id
        # no quote is a piece of another (each finds its own sentence)
        assert not any(c.quote in o.quote for o in V.PAPER_CLAIMS if o is not c)


def test_every_quote_is_in_the_papers_experiments_section():
    section = _experiments()
    missing = [c.id for c in V.PAPER_CLAIMS if _norm(c.quote) not in section]
    assert not missing


def test_every_numbered_observation_of_the_paper_holds_a_claim():
    section = _experiments()
    quotes = [_norm(c.quote) for c in V.PAPER_CLAIMS]
    items = []
    for para in re.findall(r"(?:we observe that|we can see that|It can be seen from "
                           r"the results that): (.*?)(?=\\begin|$)", section):  # fmt: skip
        items += [i for i in re.split(r"\s\d\) ", " " + para) if i.strip()]
    # the paper's three result paragraphs on SecStr, Ads and NUS-WIDE, the kernel
    # one and the cost one: 6 + 3 + 5 + 3 + 2 numbered observations
    assert len(items) == 19
    uncovered = [i[:60] for i in items if not any(q in i for q in quotes)]
    assert not uncovered


# ------------------------------------------------------------------ the rules


def _cells(cells, curves=None, name="test"):
    columns = {}
    for table, col, _ in cells:
        columns.setdefault(table, [])
        if col not in columns[table]:
            columns[table].append(col)
    curves = {k: sorted(v) for k, v in (curves or {}).items()}
    drops = {k: d for k, v in curves.items() if (d := V._drop_of(v)) is not None}
    return V.Cells(name, cells, curves, drops, columns)


def test_mean_comparisons_give_all_some_or_none():
    base = {("secstr", "a", "cca_bst"): (60.0, 1.0, 5),
            ("secstr", "b", "cca_bst"): (60.0, 1.0, 5)}  # fmt: skip
    both = {**base, ("secstr", "a", "cca_avg"): (61.0, 1.0, 5),
            ("secstr", "b", "cca_avg"): (62.0, 1.0, 5)}  # fmt: skip
    one = {**both, ("secstr", "b", "cca_avg"): (59.0, 1.0, 5)}
    none = {**one, ("secstr", "a", "cca_avg"): (58.0, 1.0, 5)}
    assert V.s_avg_bst(_cells(both)).status == V.REPRODUCED
    assert V.s_avg_bst(_cells(one)).status == V.PARTLY
    assert V.s_avg_bst(_cells(none)).status == V.NOT_REPRODUCED
    assert V.s_avg_bst(_cells(base)).status == V.NOT_TESTABLE


def test_comparable_needs_an_equivalence_test_not_close_means():
    # equal means but a wide spread over 5 splits: TOST cannot show equivalence
    wide = {("ads", "c", "cat"): (90.0, 3.0, 5), ("ads", "c", "bsf"): (90.1, 3.0, 5)}
    tight = {("ads", "c", "cat"): (90.0, 0.1, 5), ("ads", "c", "bsf"): (90.1, 0.1, 5)}
    assert V.a_cat_bsf(_cells(wide)).status == V.NOT_REPRODUCED
    assert V.a_cat_bsf(_cells(tight)).status == V.REPRODUCED


def _curve(values, start=5, step=5, std=0.5):
    return [(start + step * i, v, std, 5) for i, v in enumerate(values)]


def test_dse_falling_and_cca_steady_are_two_claims():
    # DSE and SSMVD rise then fall sharply; CCA-LS falls as sharply: the first half
    # of the paper's sentence holds, the second only partly
    col = "#labeled = 100"
    cells = {("ads", col, m): (90.0, 1.0, 5)
             for m in ("dse", "ssmvd", "cca_avg", "cca_ls", "tcca")}  # fmt: skip
    sharp, steady = _curve([85, 90, 80]), _curve([89, 90, 89.5])
    curves = {("ads", col, "dse"): sharp, ("ads", col, "ssmvd"): sharp,
              ("ads", col, "cca_avg"): steady, ("ads", col, "tcca"): steady,
              ("ads", col, "cca_ls"): sharp}  # fmt: skip
    c = _cells(cells, curves)
    assert V.a_dse_fall(c).status == V.REPRODUCED
    assert V.a_cca_steady(c).status == V.PARTLY  # CCA-LS not, the others steady
    for m in ("cca_avg", "tcca"):
        curves[("ads", col, m)] = sharp
    assert V.a_cca_steady(_cells(cells, curves)).status == V.NOT_REPRODUCED
    for m in ("cca_avg", "tcca", "cca_ls"):
        curves[("ads", col, m)] = steady
    assert V.a_cca_steady(_cells(cells, curves)).status == V.REPRODUCED


def test_significantly_best_needs_the_test_at_most_r():
    col = "#unlabeled = 84K"
    cells = {("secstr", col, m): (60.0, 1.0, 5) for m in ("tcca", "cca_bst")}
    close = {("secstr", col, "tcca"): _curve([61, 61, 61], std=2.0),
             ("secstr", col, "cca_bst"): _curve([60, 60, 60], std=2.0)}  # fmt: skip
    far = {("secstr", col, "tcca"): _curve([70, 70, 70], std=0.5),
           ("secstr", col, "cca_bst"): _curve([60, 60, 60], std=0.5)}  # fmt: skip
    # highest mean everywhere but never significantly: partly, never reproduced
    assert V.s_tcca_best(_cells(cells, close)).status == V.PARTLY
    assert V.s_tcca_best(_cells(cells, far)).status == V.REPRODUCED


def test_equal_tuning_reads_the_investigations_cells_and_falls():
    data = {
        "tables": [
            {
                "heading": "Equal tuning",
                "columns": ["cell", "method", "equal tuning", "eps chosen per split"],
                "rows": [
                    ["ads #labeled = 100", "CCA-LS", "92.00 ± 0.10", "0.1, 1"],
                    ["ads #labeled = 100", "CCA (BST)", "92.10 ± 0.10", "0.1, 1"],
                    ["ads #labeled = 100", "CCA (AVG)", "91.00 ± 0.10", "0.1, 1"],
                    ["ads #labeled = 100", "CAT", "90.00 ± 0.10", "own parameters"],
                ],
            },
            {
                "heading": "claims",
                "columns": ["claim", "evidence"],
                "rows": [
                    [
                        "flat",
                        "ads, #labeled = 100: drop from the peak to the "
                        "largest r: TCCA 0.35 (peak r = 170, last r = 300), "
                        "CCA (AVG) 1.02 (peak r = 100, last r = 190), CCA-LS 7.50 "
                        "(peak r = 20, last r = 190)",
                    ]
                ],
            },  # fmt: skip
        ]
    }
    empty = V.Cells("p", {}, {}, {}, {})
    tuned = V.Cells.of_equal_tuning(data, empty)
    assert tuned.cell("ads", "#labeled = 100", "cca_ls") == (92.0, 0.1, 5)
    assert tuned.drop("ads", "#labeled = 100", "cca_ls")[0] == 7.5
    assert V.a_cca_steady(tuned).status == V.PARTLY  # CCA-LS falls 7.5 >= 5
    verdict = V.a_ls_cca(tuned)  # equivalent to CCA (BST), not to CCA (AVG)
    assert verdict.status == V.PARTLY
    # what equal tuning keeps no data for says so instead of a verdict
    assert V.s_tcca_best(tuned).status == V.NOT_MEASURED


def test_the_published_report_judges_every_claim_under_both_protocols():
    summary = json.loads((ROOT / "results" / "summary.json").read_text())
    equal = json.loads(
        (ROOT / "investigations" / "results" / "equal_tuning.json").read_text()
    )
    judged = V.judge(summary, equal)
    assert [j["claim"].id for j in judged] == [c.id for c in V.PAPER_CLAIMS]
    for j in judged:
        assert j["paper"].status in V.STATUSES and j["paper"].evidence
        assert j["equal"].status in V.STATUSES and j["equal"].evidence
        if j["claim"].subject not in ("SecStr", "Ads"):
            assert j["equal"].status == V.NOT_MEASURED
    text = (ROOT / "REPRODUCTION.md").read_text()
    verdict = text[
        text.index("## Verdict") : text.index("\n## ", text.index("## Verdict") + 3)
    ]
    for j in judged:
        row = next(
            r for r in verdict.splitlines() if r.startswith(f"| {j['claim'].id} |")
        )
        assert f"**{j['paper'].status}** | {j['equal'].status} |" in row


def test_the_report_opens_with_the_verdict():
    text = (ROOT / "REPRODUCTION.md").read_text()
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "Verdict"


def _ads_summary(falls: dict[str, float]) -> dict:
    """A one-column Ads summary whose methods' curves rise, then fall by ``falls``."""
    curves = [
        {"setting": "l100", "method": m, "r": r, "mean": v, "std": 0.5, "n_splits": 5}
        for m, fall in falls.items()
        for r, v in ((5, 85.0), (10, 90.0), (300, 90.0 - fall))
    ]
    return {
        "tables": {
            "ads": {
                "columns": [{"label": "#labeled = 100", "setting": "l100"}],
                "accuracy": {"val": []},
                "curves": curves,
            }
        }
    }


def test_the_ads_sentence_is_judged_in_both_halves():
    from tcca_core.reproduction.claims import claim_cca_steady, claim_dse_ssmvd_fall

    falls = {"dse": 12.0, "ssmvd": 11.0, "cca_bst": 1.0, "cca_avg": 2.0, "tcca": 3.0}
    sharp_ls = _ads_summary({**falls, "cca_ls": 14.0})
    assert claim_dse_ssmvd_fall(sharp_ls).status == "confirmed"
    assert claim_cca_steady(sharp_ls).status == "not confirmed"
    assert claim_cca_steady(_ads_summary({**falls, "cca_ls": 1.5})).status == (
        "confirmed"
    )


def test_a_30_draw_verdict_names_its_protocol():
    # the claims summary of the investigations: each verdict column says whether it
    # reads the paper's protocol or equal tuning
    text = (ROOT / "REPRODUCTION.md").read_text()
    part = text[text.index("### The paper's claims on all of it") :]
    header = next(line for line in part.splitlines() if line.startswith("| claim |"))
    columns = [c.strip() for c in header.strip("|").split("|")][1:]
    assert columns
    assert all("paper protocol" in c or "equal tuning" in c for c in columns)
    assert any("equal tuning" in c and "30 draws" in c for c in columns)


def test_tuned_draws_verdict_reads_every_comparison():
    from tcca_core.reproduction.investigations import Investigation
    from tcca_core.reproduction.sentences import TUNED_DRAWS, tuned_draws_verdict

    def inv(says):
        rows = [["ads #labeled = 100", f"TCCA - {m}", s, s] for m, s in says.items()]
        cols = ["cell", "A - B", "the interval says", "after Holm"]
        return Investigation(
            "equal_tuning",
            {"tables": [{"heading": TUNED_DRAWS, "columns": cols, "rows": rows}]},
        )

    cell = "ads #labeled = 100"
    below = {"CCA (BST)": "A below B", "CCA-LS": "A below B"}
    assert tuned_draws_verdict(inv(below), cell) == "refuted"
    above = {"CCA (BST)": "A above B", "CCA-LS": "A above B"}
    assert tuned_draws_verdict(inv(above), cell) == "confirmed"
    mixed = {"CCA (BST)": "not resolved", "CCA-LS": "A below B"}
    assert tuned_draws_verdict(inv(mixed), cell) == (
        "not resolved (0 above, 1 below, of 2)"
    )
