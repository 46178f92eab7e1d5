"""Tables, figures and the summary of the reproduction pipeline.

Everything the Snakemake pipeline shows a reader is computed here, so that it can be
tested without Snakemake; the workflow scripts only read files and call these functions.

Inputs are the tidy result rows of :func:`tcca_core.protocol.run_method` (one row per
method, split, r and parameter value, with ``val_acc``, ``test_acc``, ``fit_s`` and
``peak_mb``), gathered per *setting* (one column of a table: a data set with a labeling
scheme, e.g. SecStr with 84K unlabeled instances, or NUS-WIDE with 4 labeled per
concept). From them:

- :mod:`.tables`: :func:`accuracy_cells` gives the number of every table cell, in both
  readings of the paper's "accuracy at the best dimension" (see :data:`READINGS`);
  :func:`accuracy_table` lays the cells out as the paper does, with the paper's number
  (:data:`PAPER_TABLES`) and the difference next to ours; :func:`write_table` writes
  it as CSV, Markdown and LaTeX;
- :mod:`.costs`: :func:`cost_by_r` and :func:`cost_at_selected` give fit time and peak
  memory across r and at the selected r (the paper's cost figures, as numbers);
- :mod:`.figures`: :func:`plot_accuracy` and :func:`plot_cost` draw accuracy, time and
  memory against r;
- :mod:`.glance`: :func:`plot_at_a_glance` draws every cell with a paper number, ours
  (both protocols, 95 % t-intervals) against the paper's mean ± 2 std;
- :mod:`.provenance`: :func:`provenance` and :func:`build_summary` make
  ``summary.json``.

Accuracy tables contain no timing, so rerunning the pipeline reproduces them byte for
byte; timing lives in the separate cost tables.
"""

from ..paper import PAPER_MACHINE, PAPER_TABLES
from .costs import cost_at_selected, cost_by_r, cost_table, job_costs
from .figures import figure_titles, plot_accuracy, plot_cost
from .glance import glance_cells, plot_at_a_glance
from .provenance import (
    build_summary,
    git_commit,
    machine_info,
    machine_text,
    package_versions,
    provenance,
    table_record,
)
from .tables import (
    METHOD_LABELS,
    READINGS,
    accuracy_cells,
    accuracy_curves,
    accuracy_notes,
    accuracy_table,
    format_pm,
    method_label,
    to_html,
    to_latex,
    to_markdown,
    write_table,
)

__all__ = [
    "METHOD_LABELS",
    "PAPER_MACHINE",
    "PAPER_TABLES",
    "READINGS",
    "accuracy_cells",
    "accuracy_curves",
    "accuracy_notes",
    "accuracy_table",
    "build_summary",
    "cost_at_selected",
    "cost_by_r",
    "cost_table",
    "format_pm",
    "git_commit",
    "glance_cells",
    "job_costs",
    "machine_info",
    "machine_text",
    "method_label",
    "package_versions",
    "plot_accuracy",
    "plot_at_a_glance",
    "plot_cost",
    "provenance",
    "table_record",
    "figure_titles",
    "to_html",
    "to_latex",
    "to_markdown",
    "write_table",
]
