"""ViewSplitter in a scikit-learn Pipeline: ``set_output`` and
``get_feature_names_out``.

``Pipeline.set_output`` refused ViewSplitter ("set_output is not available") and
``pipe[:-1].get_feature_names_out()`` stopped at it; a transformer whose output is
a list of views now gives a list of DataFrames, and one name array per view.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from tcca_core import TCCA
from tcca_core.compose import MultiViewAdapter, ViewSplitter, stack_views

SIZES = [3, 4, 5]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    y = np.arange(60) % 2
    z = (2 * y - 1)[:, None] + 0.5 * rng.standard_normal((60, 1))
    views = [z @ rng.standard_normal((1, d)) + 0.5 * rng.standard_normal((60, d))
             for d in SIZES]  # fmt: skip
    X, sizes = stack_views(views)
    return X, y, sizes


def test_set_output_pandas_gives_one_dataframe_per_view(data):
    X, _, sizes = data
    views = ViewSplitter(sizes).set_output(transform="pandas").fit_transform(X)
    assert [type(V) for V in views] == [pd.DataFrame] * 3
    assert [list(V.columns) for V in views] == [
        ["x0", "x1", "x2"], ["x3", "x4", "x5", "x6"], [f"x{i}" for i in range(7, 12)]
    ]  # fmt: skip
    np.testing.assert_array_equal(np.hstack(views), X)
    # back to arrays
    splitter = ViewSplitter(sizes).set_output(transform="pandas")
    assert splitter.set_output(transform=None) is splitter
    views = splitter.set_output(transform="default").fit_transform(X)
    assert all(isinstance(V, np.ndarray) for V in views)


def test_dataframe_input_keeps_its_names_and_index(data):
    X, _, sizes = data
    cols = [f"f{i}" for i in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols, index=np.arange(100, 160))
    splitter = ViewSplitter(sizes).set_output(transform="pandas").fit(df)
    views = splitter.transform(df)
    assert [list(V.columns) for V in views] == [cols[:3], cols[3:7], cols[7:]]
    assert all((V.index == df.index).all() for V in views)
    assert [list(n) for n in splitter.get_feature_names_out()] == [
        cols[:3],
        cols[3:7],
        cols[7:],
    ]


def test_global_transform_output_is_followed(data):
    X, _, sizes = data
    with sklearn.config_context(transform_output="pandas"):
        views = ViewSplitter(sizes).fit_transform(X)
    assert all(isinstance(V, pd.DataFrame) for V in views)


def test_feature_names_out_one_array_per_view(data):
    X, _, sizes = data
    splitter = ViewSplitter(sizes).fit(X)
    names = splitter.get_feature_names_out()
    assert [list(n) for n in names] == [
        [f"x{i}" for i in range(a, b)] for a, b in [(0, 3), (3, 7), (7, 12)]
    ]
    given = [f"g{i}" for i in range(12)]
    assert [list(n) for n in splitter.get_feature_names_out(given)] == [
        given[:3],
        given[3:7],
        given[7:],
    ]
    with pytest.raises(ValueError, match="input_features"):
        splitter.get_feature_names_out(given[:5])


def test_sparse_input_with_pandas_output_is_refused(data):
    X, _, sizes = data
    splitter = ViewSplitter(sizes).set_output(transform="pandas")
    with pytest.raises(ValueError, match="does not support sparse"):
        splitter.fit_transform(sp.csr_matrix(X))
    # the default output still cuts sparse matrices
    views = ViewSplitter(sizes).fit_transform(sp.csr_matrix(X))
    assert all(sp.issparse(V) for V in views)


def test_pipeline_set_output_and_feature_names_end_to_end(data):
    X, y, sizes = data
    pipe = make_pipeline(ViewSplitter(sizes), TCCA(2, random_state=0),
                         LogisticRegression())  # fmt: skip
    pipe.set_output(transform="pandas").fit(X, y)
    names = pipe[:-1].get_feature_names_out()
    assert list(names) == [f"tcca_view{p}_{k}" for p in range(3) for k in range(2)]
    Z = pipe[:-1].transform(X)
    assert isinstance(Z, pd.DataFrame) and list(Z.columns) == list(names)
    # the classifier saw the names: the fitted pipeline predicts with them
    assert list(pipe[-1].feature_names_in_) == list(names)
    assert pipe.score(X, y) > 0.8
    # the same numbers as without set_output
    plain = make_pipeline(ViewSplitter(sizes), TCCA(2, random_state=0)).fit(X, y)
    np.testing.assert_allclose(plain.transform(X), Z.to_numpy())


def test_multiview_adapter_in_a_pipeline_too(data):
    X, y, sizes = data
    pipe = make_pipeline(MultiViewAdapter(TCCA(2, random_state=0), sizes),
                         LogisticRegression())  # fmt: skip
    pipe.set_output(transform="pandas").fit(X, y)
    assert list(pipe[:-1].get_feature_names_out()) == [
        f"tcca_view{p}_{k}" for p in range(3) for k in range(2)
    ]
    assert isinstance(pipe[:-1].transform(X), pd.DataFrame)


def test_view_splitter_is_stateless_before_fit():
    """Its tags say it needs no fit (requires_fit False): transform alone works and
    checks the sizes against X, as after fit."""
    X = np.arange(20.0).reshape(4, 5)
    views = ViewSplitter([2, 3]).transform(X)
    assert [v.shape for v in views] == [(4, 2), (4, 3)]
    assert np.array_equal(views[1], X[:, 2:])
    with pytest.raises(ValueError, match="add up to 4 columns, but X has 5"):
        ViewSplitter([2, 2]).transform(X)
