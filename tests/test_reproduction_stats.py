"""REPRODUCTION.md's tests beside the 2-std flag, its computed verdict sentences and
its index of docs/deviations.md.

Each verdict is checked against an independent computation (scipy on the same
summaries, counting by hand) and on small data where it flips.
"""

import copy
import json
import re
from pathlib import Path

import pytest
from scipy import stats

from tcca_core.reproduction import build, record, sentences
from tcca_core.reproduction.claims import CLAIMS
from tcca_core.reproduction.investigations import Investigation
from tcca_core.reproduction.significance import against_paper, paper_tests

REPO = Path(__file__).resolve().parents[1]


def _rec(method, column, mean, std, paper, setting, source=None):
    return {
        "method": method, "column": column, "setting": setting,
        "result_of_setting": source or setting, "mean": mean, "std": std,
        "n_splits": 5, "r": "", "paper_mean": paper[0], "paper_std": paper[1],
        "paper_note": None, "diff": mean - paper[0],
    }  # fmt: skip


@pytest.fixture
def summary():
    c84, c13 = "#unlabeled = 84K", "#unlabeled = 1.3M"
    recs = [
        _rec("bsf", c84, 58.0, 1.7, (57.5, 1.9), "84k"),
        _rec("bsf", c13, 58.0, 1.7, (57.5, 1.9), "1.3m", source="84k"),  # a copy
        # within 2 std (61 + 2 x 2 = 65), yet far from the paper against our spread
        _rec("cca_avg", c84, 64.5, 0.3, (61.0, 2.0), "84k"),
        _rec("tcca", c84, 57.5, 1.4, (62.4, 1.3), "84k"),  # outside, Welch p < 0.05
    ]
    cols = [{"setting": "84k", "label": c84}, {"setting": "1.3m", "label": c13}]
    table = {"title": "SecStr", "paper_table": "secstr", "columns": cols,
             "accuracy": {"val": recs, "best_r": copy.deepcopy(recs)},
             "curves": [], "cost_selected": []}  # fmt: skip
    return {"tables": {"secstr": table}}


# ------------------------------------------------------ cells against the paper


def test_welch_and_hedges_against_scipy(summary):
    cells = {(c["column"].split()[-1], c["method"]): c for c in against_paper(summary)}
    for c in cells.values():
        ref = stats.ttest_ind_from_stats(
            c["mean"], c["std"], 5, c["paper_mean"], c["paper_std"], 5,
            equal_var=False,
        )  # fmt: skip
        assert c["p"] == pytest.approx(ref.pvalue, rel=1e-10)
        assert c["t"] == pytest.approx(ref.statistic, rel=1e-10)
    # Hedges' g by hand: pooled std over 8 df, J(8) = Gamma(4) / (2 Gamma(3.5))
    tcca = cells[("84K", "tcca")]
    sp = ((1.4**2 + 1.3**2) / 2) ** 0.5
    j = 6 / (2 * 3.32335097044784)  # Gamma(3.5) = 15 sqrt(pi) / 8
    assert tcca["g"] == pytest.approx(j * (57.5 - 62.4) / sp, rel=1e-9)


def test_holm_over_the_distinct_cells_and_the_copies(summary):
    cells = against_paper(summary)
    fam = [c for c in cells if c["family"]]
    assert len(fam) == 3  # the 1.3M BSF copies the 84K cell: one test
    ps = sorted(c["p"] for c in fam)
    by_hand = [min(1.0, max((3 - j) * ps[j] for j in range(i + 1))) for i in range(3)]
    assert sorted(c["p_holm"] for c in fam) == pytest.approx(by_hand)
    copy_, source = (
        next(c for c in cells if c["column"].endswith(k) and c["method"] == "bsf")
        for k in ("1.3M", "84K")
    )
    assert not copy_["family"] and copy_["p_holm"] == source["p_holm"]


def test_the_cells_sentence_follows_the_numbers(summary):
    t = paper_tests(summary)
    assert (t["n_cells"], t["n_copies"], t["n_outside"]) == (3, 1, 1)
    # CCA (AVG) +3.5 lies within 2 std but Welch's test flags it
    assert t["within_but_welch"].startswith("secstr #unlabeled = 84K CCA (AVG) (+3.50")
    text = build(summary)
    assert "1 of the 3 cells lie outside 2 std." in text
    assert "Within 2 std but Welch p < 0.05: secstr #unlabeled = 84K CCA (AVG)" in text
    # the same cell with our spread as large as the paper's: no longer flagged
    s = copy.deepcopy(summary)
    s["tables"]["secstr"]["accuracy"]["val"][2]["std"] = 4.0
    t = paper_tests(s)
    assert t["within_but_welch"] == "" and t["n_welch"] == 1
    assert "Within 2 std but Welch p" not in build(s)
    # the tables carry p (Holm) and g beside the flag
    row = next(x for x in text.splitlines() if x.startswith("| TCCA | 57.50"))
    assert row.endswith(" | **outside 2 std** | " + " | ".join(_welch_cells(summary)))


def _welch_cells(summary):
    c = next(c for c in against_paper(summary) if c["method"] == "tcca")
    return [f"{c['p']:.4f} ({c['p_holm']:.4f})", f"{c['g']:+.2f} |"]


# --------------------------------------------------------- the cost claim's N


def test_cost_claim_says_when_n_differs():
    check = next(c[2] for c in CLAIMS if c[2].__name__ == "claim_cost")
    cost = [
        {"setting": "84k", "method": "tcca", "fit_s": 2.0, "peak_mb": 80.0},
        {"setting": "84k", "method": "cca_avg", "fit_s": 1.0, "peak_mb": 40.0},
        {"setting": "84k", "method": "dse", "fit_s": 0.3, "peak_mb": 50.0},
    ]
    s = {"tables": {"secstr": {"dataset": "secstr", "cost_selected": cost}}}
    # same N (no subset): TCCA costs more than DSE on SecStr: not confirmed
    assert check(s).status == "not confirmed"
    # DSE on a subset, TCCA on all rows: the rule does not decide, and says why
    s["provenance"] = {"config": {
        "datasets": {"secstr": {"settings": {"84k": {"methods": "m"}}}},
        "method_sets": {"m": {"dse": {"subset": 10000}, "tcca": {"eps": [0.01]}}},
    }}  # fmt: skip
    v = check(s)
    assert v.status == "not decided"
    assert (
        "DSE on a 10,000-row subset, TCCA on all rows (not decided: unequal N)"
        in (v.evidence[-1])
    )
    # TCCA cheaper than DSE even on more rows: evidence for the claim
    cost[2].update(fit_s=5.0, peak_mb=500.0)
    v = check(s)
    assert v.status == "confirmed" and "not decided" not in v.evidence[-1]


# ----------------------------------------------------------- verdict sentences


def _curves(values):
    return [
        {"setting": "l100", "method": m, "r": r, "mean": v}
        for m, pts in values.items()
        for r, v in pts
    ]


def test_near_majority_names_who_is_near():
    s = {"tables": {"ads": {"curves": _curves({
        "cca_bst": [(5, 91.44), (10, 91.75)], "dse": [(5, 84.41), (10, 84.0)],
        "tcca": [(5, 87.75)],
    })}}}  # fmt: skip
    out = sentences.near_majority(s, "ads", "l100", ["cca_bst", "dse", "tcca"], "86.0")
    assert out.startswith("DSE and TCCA lie within 2 points of the majority-class rate")
    assert out.endswith("CCA (BST) does not (CCA (BST) 91.44)")
    assert "(r = 5)" in out
    # CCA (BST) at the majority rate too: every one of them
    s["tables"]["ads"]["curves"][0]["mean"] = 86.5
    out = sentences.near_majority(s, "ads", "l100", ["cca_bst", "dse", "tcca"], "86.0")
    assert out.startswith("Every one of them lies within 2 points")
    out = sentences.near_majority(s, "ads", "l100", ["cca_bst"], "80.0")
    assert out.startswith("None of them lies")
    with pytest.raises(sentences.FieldError):
        sentences.near_majority(s, "ads", "l100", ["cca_ls"], "86.0")


def _robustness(header, shared):
    rows = [
        ["a", f"0 of {n} shared ranks differ; selected 1.00 ± 0.10"] for n in shared
    ]
    rows.append(["b", "same grid (the setting's own)"])
    return Investigation(
        "optimizer_robustness",
        {
            "tables": [
                {"heading": "Robustness", "columns": ["cell", header], "rows": rows}
            ]
        },
    )


def test_other_grid_states_the_grid_the_output_records():
    assert sentences.expand_grid("10, 20, ..., 100, 120, ..., 300") == [
        *range(10, 101, 10), *range(120, 301, 20)
    ]  # fmt: skip
    # every rank on the paper's grid: a test of rank independence only
    on = sentences.other_grid(_robustness("r grid 10, 20, ..., 100, 120, ..., 300",
                                          [20, 20]))  # fmt: skip
    assert "(20 ranks), holds only ranks of the paper's grid" in on
    assert "not what a rank the paper's grid lacks would give" in on
    # with ranks off the paper's grid (7 and 12): named
    off = sentences.other_grid(_robustness("r grid 7, 10, 12, 20", [2]))
    assert "holds 2 ranks of the paper's grid" in off and "2 off it (7, 12)" in off
    # a heading that abbreviates the grid: said so, no claim about off-grid ranks
    bad = sentences.other_grid(_robustness("r grid 10, 20, ..., 300", [20]))
    assert "(10, 20, ..., 300) is not the one its rows compare" in bad
    assert "30 ranks, 25 of them on the paper's grid" in bad
    assert "does not show what a rank off the paper's grid would give" in bad
    # a grid the output records as a fact, under a column that names none
    inv = _robustness("other r grid (shared ranks)", [10])
    inv.data["facts"] = {"other_grid": "7, 10, 13, 20, 30, ..., 100"}
    out = sentences.other_grid(inv)
    assert "holds 10 ranks of the paper's grid" in out and "2 off it (7, 13)" in out
    del inv.data["facts"]
    with pytest.raises(sentences.FieldError, match="records no other r grid"):
        sentences.other_grid(inv)


def _equal(eps_rows, draws=None):
    cols = ["cell", "method", "paper", "paper protocol (eps = 1e-2)", "equal tuning",
            "change", "eps chosen per split"]  # fmt: skip
    tables = [{"heading": "Equal tuning: eps on validation", "columns": cols,
               "rows": eps_rows}]  # fmt: skip
    if draws:
        tables.append(draws)
    return Investigation("equal_tuning", {"tables": tables})


def _eps_row(method, mean, eps):
    return ["ads #labeled = 100", method, "", "", f"{mean:.2f} ± 0.50", "", eps]


def test_ridge_direction_follows_the_eps_chosen():
    up = _equal([_eps_row("CCA (BST)", 93.4, "1, 0.1, 0.001"),
                 _eps_row("TCCA", 93.1, "10, 1, 0.01")])  # fmt: skip
    out = sentences.ridge(up, "ads #labeled = 100", ["cca_bst", "tcca"])
    assert "eps above the paper's 0.01 in 4 of the 6 splits" in out
    assert "(1 below, 1 at it): it prefers a stronger ridge" in out
    assert "does not explain why the paper's numbers are higher" in out
    down = _equal([_eps_row("CCA (BST)", 93.4, "0.001, 0.001, 0.1"),
                   _eps_row("TCCA", 93.1, "0.001, 1, 0.01")])  # fmt: skip
    out = sentences.ridge(down, "ads #labeled = 100", ["cca_bst", "tcca"])
    assert "it prefers a weaker ridge" in out and "could explain part" in out
    even = _equal([_eps_row("CCA (BST)", 93.4, "0.001, 1")])
    assert "prefers neither side" in sentences.ridge(
        even, "ads #labeled = 100", ["cca_bst"]
    )


def test_tuned_draws_resolved_only_with_the_draws():
    rows = [_eps_row(m, v, "1, 1, 1, 1, 1") for m, v in
            (("CCA (BST)", 93.42), ("CCA (AVG)", 92.65), ("CCA-LS", 92.87),
             ("TCCA", 93.06))]  # fmt: skip
    without = sentences.tuned_draws(_equal(rows), ["ads #labeled = 100"])
    assert without.startswith("Not yet: the 5 splits give no interval")
    assert "TCCA - CCA (BST) -0.36 points" in without
    cols = ["cell", "A - B", "draws", "difference", "95 % CI", "after Holm"]
    draws = {"heading": "Equal tuning over 30 draws: TCCA against each CCA method",
             "columns": cols, "rows": [
                 ["ads #labeled = 100", "TCCA - CCA (BST)", "30", "-0.40",
                  "[-0.90, 0.10]", "not resolved"],
                 ["ads #labeled = 100", "TCCA - CCA-LS", "30", "+0.90",
                  "[0.30, 1.50]", "A above B"]]}  # fmt: skip
    out = sentences.tuned_draws(_equal(rows, draws), ["ads #labeled = 100"])
    assert out.startswith("Over 30 draws, ads #labeled = 100: TCCA - CCA (BST) -0.40")
    assert out.endswith("1 of the 2 comparisons resolved after Holm's adjustment")
    # a checkpoint: one cell's draws not all fitted yet; each cell says its own count
    draws["rows"].append(["secstr #unlabeled = 84K", "TCCA - CCA (BST)", "30", "-5.79",
                          "[-6.33, -5.26]", "A below B"])  # fmt: skip
    for row in draws["rows"][:2]:
        row[2] = "13"
    out = sentences.tuned_draws(
        _equal(rows, draws), ["ads #labeled = 100", "secstr #unlabeled = 84K"]
    )
    assert out.startswith("Over the draws, ads #labeled = 100 (13 draws): TCCA - CCA")
    assert "; secstr #unlabeled = 84K (30 draws): TCCA - CCA (BST) -5.79" in out
    assert "Over 30 draws" not in out


def test_holm_changes_counts_what_the_adjustment_leaves():
    cols = ["cell", "A - B", "the interval says", "after Holm"]
    rows = [
        ["x", "CAT - BSF", "A above B", "not resolved"],
        ["x", "TCCA - CAT", "A below B", "A below B"],
        ["x", "TCCA - BSF", "A below B", "not resolved"],
        ["x", "CCA-LS - CAT", "not resolved (0 inside)", "not resolved"],
    ]
    inv = Investigation("v", {"tables": [{"heading": "h", "columns": cols,
                                          "rows": rows}]})  # fmt: skip
    out = sentences.holm_changes(inv)
    assert out.startswith("of the 3 comparisons whose raw 95 % interval excludes 0 "
                          "(of 4), Holm's adjustment over the family leaves 2")  # fmt: skip
    assert out.endswith("1 of the 2 that put TCCA below another method survive it")
    rows[2][3] = "A below B"
    assert sentences.holm_changes(inv).endswith(
        "every one of the 2 that put TCCA below another method survives it"
    )


# ------------------------------------------------- the record of deviations


RECORD = """# Deviations

## Data

**D-1. First.** [open]
- *Ours*: this.
- *Where*: `a.b`; `c`.
- *Effect*: 0.5 points (REPRODUCTION.md *Tables* and *Nowhere*;
  `investigations/results/x.md`).

**D-2. Second, with a title
over two lines.** [deviation] [notes differ]
- *Where*: `d`.
- *Effect*: not measured.

## Reporting

**D-3. Third.** [open]
- *Where*: `e`, with a sub-list:
  - `f`.
"""


def test_record_parses_entries_and_their_effects():
    entries = record.parse(RECORD)
    assert [e["id"] for e in entries] == ["D-1", "D-2", "D-3"]
    assert entries[1]["title"] == "Second, with a title over two lines."
    assert entries[1]["kinds"] == ["deviation", "notes differ"]
    assert entries[2]["section"] == "Reporting"
    assert entries[2]["bullets"]["Where"] == "`e`, with a sub-list: - `f`."
    assert [record.effect_status(e) for e in entries] == [
        "measured", "not measured", "no effect to measure"]  # fmt: skip
    table, counts = record.index(entries, ["Tables", "Other"], "docs/deviations.md")
    assert "| [D-1](docs/deviations.md#data) | open | First. | `a.b`; `c`. |" in table
    # a section the document has is linked, one it lacks is named, an output linked
    assert "[Tables](#tables), *Nowhere*, [x.md](investigations/results/x.md)" in table
    assert "0.5" not in table  # the record's numbers stay in the record
    assert counts == {"measured": 1, "not measured": 1, "no effect to measure": 1}


def test_every_entry_of_the_record_is_in_reproduction_md():
    """Independent of the parser: every '**D-N.' of docs/deviations.md has its row in
    REPRODUCTION.md's *Deviations from the paper's protocol*."""
    ids = re.findall(r"^\*\*(D-\d+)\.", (REPO / "docs" / "deviations.md").read_text(),
                     re.MULTILINE)  # fmt: skip
    assert len(ids) == len(set(ids)) >= 36
    text = (REPO / "REPRODUCTION.md").read_text()
    section = text.split("## Deviations from the paper's protocol")[1].split("\n## ")[0]
    rows = re.findall(r"^\| \[(D-\d+)\]\(docs/deviations\.md#[\w-]+\) \|", section,
                      re.MULTILINE)  # fmt: skip
    assert rows == ids
    # every section an entry names is linked, none left as plain text
    assert not re.search(r"\| [^|]*\*[^*|]+\*[^|]*\|$", section, re.MULTILINE), (
        "an *Effect* names a section REPRODUCTION.md does not have"
    )


def test_record_index_from_the_notes(tmp_path):
    """The notes' record line frames the entries as data; build() shows the index."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "deviations.md").write_text(RECORD)
    from tcca_core.reproduction import include_files

    notes = include_files("## Notes\n\n<!-- record: docs/deviations.md -->\n", tmp_path)
    assert "D-1" in notes and "<!-- data: protocol_record -->" in notes
    text = build({"tables": {}}, investigations=notes)
    section = text.split("## Deviations from the paper's protocol")[1]
    assert "(D-1 to D-3, 3 entries: 1 with a deviation among their kinds" in section
    assert "| [D-2](docs/deviations.md#data) | deviation; notes differ |" in section
    assert "D-1" not in text.split("## Notes")[1]  # shown once, as the index
    assert json.loads  # the data frame is gone from the text
    assert "<!-- data:" not in text


# ------------------------------------------- the committed run, recomputed here


def _committed():
    summary = json.loads((REPO / "results" / "summary.json").read_text())
    return summary, " ".join((REPO / "REPRODUCTION.md").read_text().split())


def test_cells_sentence_on_the_committed_run():
    """Welch's test by scipy on every distinct cell, Holm by hand: the counts the
    sentence of *Cells against the paper* states."""
    summary, text = _committed()
    ps, outside = [], 0
    for table in ("secstr", "ads"):
        for r in summary["tables"][table]["accuracy"]["val"]:
            if r.get("mean") is None or r.get("paper_mean") is None:
                continue
            if r["result_of_setting"] != r["setting"] or r["method"] == "tcca_nc":
                continue  # a copied cell; the post hoc method has no paper number
            ps.append(stats.ttest_ind_from_stats(
                r["mean"], r["std"], r["n_splits"], r["paper_mean"], r["paper_std"],
                5, equal_var=False).pvalue)  # fmt: skip
            outside += abs(r["mean"] - r["paper_mean"]) > 2 * r["paper_std"]
    m = len(ps)
    holm, running = [], 0.0
    for i, p in enumerate(sorted(ps)):
        running = max(running, min(1.0, (m - i) * p))
        holm.append(running)
    raw, adj = sum(p < 0.05 for p in ps), sum(h < 0.05 for h in holm)
    assert (
        f"{outside} of the {m} cells lie outside 2 std. Welch's test gives p < 0.05 in "
        f"{raw} of the {m}, and {adj} after Holm's adjustment"
    ) in text


def test_near_majority_sentence_on_the_committed_run():
    summary, text = _committed()
    majority = json.loads(
        (REPO / "investigations" / "results" / "graph_baselines.json").read_text()
    )["facts"]["majority_class"]
    first = {}
    for c in summary["tables"]["ads"]["curves"]:
        if c["method"] in ("cca_bst", "cca_avg", "cca_ls", "dse", "ssmvd", "tcca"):
            if c["mean"] is not None and c["r"] == 5:
                first[c["method"]] = c["mean"]
    far = [m for m, v in first.items() if abs(v - float(majority)) > 2]
    assert len(first) == 6
    labels = {"cca_bst": "CCA (BST)", "cca_avg": "CCA (AVG)", "cca_ls": "CCA-LS"}
    for m in far:
        assert f"{labels.get(m, m.upper())} {first[m]:.2f})" in text
        assert f"{labels.get(m, m.upper())} does not" in text


def test_ridge_sentence_on_the_committed_run():
    _, text = _committed()
    out = (REPO / "investigations" / "results" / "equal_tuning.md").read_text()
    eps = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if (
            len(cells) == 7
            and cells[0] == "ads #labeled = 100"
            and cells[1] in ("CCA (BST)", "CCA (AVG)", "CCA-LS", "TCCA")
        ):
            eps += [float(e) for e in cells[6].split(",")]
    above = sum(e > 0.01 for e in eps)
    below = sum(e < 0.01 for e in eps)
    assert f"eps above the paper's 0.01 in {above} of the {len(eps)} splits" in text
    assert ("it prefers a stronger ridge" in text) == (above > below)
    assert "sums instead of means" in text
    assert "the most likely source of the gap" not in text
