"""README.md's code runs as written.

The block after the marker ``<!-- test: pipeline-snippet ... -->`` in README.md is
read from the file and run verbatim, so the README and this test cannot drift
apart: the Pipeline pattern of "Model selection with scikit-learn", including
``pipe.set_output(transform="pandas")`` and ``pipe[:-1].get_feature_names_out()``
(both failed with ViewSplitter). The snippet uses the names the README's first
example sets up (``views``, ``TCCA``) and class labels ``y``; they are given here.
"""

from __future__ import annotations

import functools
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- test: pipeline-snippet"


def marked_block(text: str, marker: str) -> str:
    """The first fenced python block after ``marker`` (nothing but blank lines
    between them)."""
    at = text.find(marker)
    assert at >= 0, f"README.md has no {marker!r} marker"
    rest = text[text.index("-->", at) + 3 :]
    m = re.match(r"\s*```python\n(.*?)\n```", rest, re.DOTALL)
    assert m, f"no ```python block right after {marker!r} in README.md"
    return m.group(1)


@pytest.fixture(scope="module")
def snippet() -> str:
    return marked_block(README.read_text(encoding="utf-8"), MARKER)


def test_the_snippet_is_the_pipeline_pattern(snippet):
    for part in ("ViewSplitter(", "set_output(transform=\"pandas\")",
                 "pipe[:-1].get_feature_names_out()"):  # fmt: skip
        assert part in snippet


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_readme_pipeline_snippet_runs_verbatim(snippet):
    from tcca_core import TCCA

    rng = np.random.default_rng(0)
    n = 80
    y = np.arange(n) % 2
    # a class-driven common factor, so that the classifier has something to find
    z = (2 * y - 1)[:, None] + 0.5 * rng.standard_normal((n, 1))
    views = [z @ rng.standard_normal((1, d)) + 0.5 * rng.standard_normal((n, d))
             for d in (6, 7, 8)]  # fmt: skip
    # A short ALS (the README's TCCA, with fewer sweeps and one start): this test
    # checks the plumbing, not the fit; 30 grid fits to convergence take a minute.
    # clone() keeps the parameters, so the search's fits are short too.
    short_tcca = functools.partial(TCCA, max_iter=20, n_init=1)
    namespace = {"np": np, "TCCA": short_tcca, "views": views, "y": y}
    exec(compile(snippet, str(README), "exec"), namespace)

    pipe, X = namespace["pipe"], namespace["X"]
    names = pipe[:-1].get_feature_names_out()
    r = pipe.named_steps["tcca"].n_components
    assert list(names) == [f"tcca_view{p}_{k}" for p in range(3) for k in range(r)]
    Z = pipe[:-1].transform(X)
    assert isinstance(Z, pd.DataFrame) and list(Z.columns) == list(names)
    views_out = pipe[0].transform(X)
    assert [list(V.columns) for V in views_out] == [
        [f"x{i}" for i in range(a, b)] for a, b in [(0, 6), (6, 13), (13, 21)]
    ]
    assert pipe.named_steps["tcca"].max_iter == 20  # the short TCCA was used
    assert pipe.score(X, y) > 0.6  # well above chance (0.5): the steps fit together


def test_the_readme_pipeline_snippet_at_the_defaults_warns_nothing(snippet):
    """The snippet verbatim, the README's TCCA at its defaults, on ordinary data
    (scikit-learn's digits cut into three views of pixels): no warning at all."""
    from sklearn.datasets import load_digits

    from tcca_core import TCCA

    X, y = load_digits(return_X_y=True)
    views = [X[:, :21], X[:, 21:42], X[:, 42:]]
    namespace = {"np": np, "TCCA": TCCA, "views": views, "y": y}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(snippet, str(README), "exec"), namespace)
    assert namespace["pipe"].named_steps["tcca"].max_iter == 500  # the default


def test_readme_command_2_is_what_ci_runs_for_the_default_suite():
    """README's second command installs the extras CI installs for the suite (dask
    included, so that no test module is skipped for lack of an extra) and runs
    CI's test command; the getting-started page gives the same command."""
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    m = re.search(
        r'pip install -e "\.\[([\w,]+)\]" && (python -m pytest -n auto)\n', text
    )
    assert m, "README.md has no install-and-test command"
    extras, command = set(m.group(1).split(",")), m.group(2)
    installs = re.findall(r'pip install --quiet -e "\.\[([\w,]+)\]"', ci)
    assert set(installs[0].split(",")) == extras  # the first install: the suite's
    assert {"test", "pipeline", "dask"} <= extras
    lines = ci.splitlines()
    assert command in lines and not any(command in ln for ln in lines[:5])
    guide = README.parent / "docs" / "guide" / "getting-started.md"
    assert m.group(0).strip() in guide.read_text(encoding="utf-8")
