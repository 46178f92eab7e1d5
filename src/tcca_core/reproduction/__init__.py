"""REPRODUCTION.md: our numbers beside the paper's, built from ``results/summary.json``.

The pipeline's ``reproduction`` rule calls :func:`build` (:mod:`.document`) with the
summary, the written investigations (``docs/investigations.md``, a Jinja2 template,
with the outputs of the investigation scripts and their data inlined by
:func:`include_files`, :mod:`.investigations`) and the list of tables that did not
run. Every number comes from the summary (:mod:`.summary`) or from the data an
investigation handed over, and each of the paper's qualitative claims is checked by a
function of the summary (:mod:`.claims`). Every claim of the paper's experiments
section, with its verdict under the paper's protocol and under equal tuning, is listed
in :mod:`.verdicts` (the table REPRODUCTION.md opens with). The prose is in
``templates/*.md.j2``.
"""

from .claims import CLAIMS
from .document import build
from .investigations import (
    FIELD_HELP,
    hand_typed_numbers,
    include_files,
    included_data,
)
from .sentences import render_fields

# the method groups and roles, read by tests of the registry
from .summary import _DR_KERNEL as _DR_KERNEL
from .summary import _DR_LINEAR as _DR_LINEAR
from .summary import TABLE_ORDER, deviations, outside_paper
from .summary import _of_paper as _of_paper
from .summary import _post_hoc as _post_hoc

__all__ = [
    "CLAIMS",
    "FIELD_HELP",
    "TABLE_ORDER",
    "build",
    "deviations",
    "hand_typed_numbers",
    "include_files",
    "included_data",
    "outside_paper",
    "render_fields",
]
