"""Sphinx configuration of the API reference (built from the docstrings).

Build: ``python -m sphinx -W --keep-going -b html docs/api docs/api/_build``
(``pip install -e ".[docs]"``; CI runs it in ``.ci/run``, warnings as errors).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

project = "tcca"
author = "the tcca contributors"
copyright = "2026, the tcca contributors"  # noqa: A001 (Sphinx's name)

import tcca_core  # noqa: E402

release = version = tcca_core.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]

# numpydoc-style docstrings (Parameters / Returns / Attributes sections)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"
# Heavy optional imports are not needed to read the docstrings.
autodoc_mock_imports: list[str] = []

exclude_patterns = ["_build"]
html_theme = "alabaster"
html_theme_options = {"description": "Tensor CCA and kernel tensor CCA"}


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn adds set_<method>_request (metadata routing) to every estimator
    # class; their docstrings point into scikit-learn's own documentation.
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


# Docstrings in files this documentation may not change (their owners' work in
# progress) that use a fitted attribute's name (trailing "_", scikit-learn's
# convention) as plain text, which reStructuredText reads as a link to an unknown
# target. Only these objects get the trailing "_" escaped; list new ones here
# rather than silencing the warning for everything.
UNESCAPED_ATTRIBUTE_NAMES = {
    "tcca_core.baselines.CCA": "correlations_ in the Attributes section",
    "tcca_core.baselines.SSMVD": "n_iter_ in the Attributes section",
}
_TRAILING_UNDERSCORE = re.compile(
    r"(?<![`\\\w])([A-Za-z]\w*[A-Za-z0-9])_(?=[\s).,;:]|$)"
)


def _escape_attribute_names(app, what, name, obj, options, lines):
    if name not in UNESCAPED_ATTRIBUTE_NAMES:
        return
    for i, line in enumerate(lines):
        if not line.lstrip().startswith(".. "):
            lines[i] = _TRAILING_UNDERSCORE.sub(r"\1\\_", line)


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-docstring", _escape_attribute_names)
