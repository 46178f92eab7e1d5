"""
Tuning TCCA, KTCCA and the CCA baselines with scikit-learn's model selection
============================================================================

Run: ``python examples/model_selection.py`` (a few seconds; also run by the tests).

Two routes, on synthetic data with a skewed signal shared by three views:

1. Unsupervised: ``tcca_core.model_selection.GridSearchCV`` / ``cross_val_score``
   take the list of views (cca-zoo's interface) and score each fold by the
   estimator's ``score``: the mean correlation of the held-out variates (for TCCA
   and KTCCA the high-order correlation of the standardized variates, for CCA
   the canonical correlation). Use it for ``eps`` and kernel parameters.
2. Supervised, as the paper does: the views travel as one concatenated array
   through a scikit-learn ``Pipeline`` (``ViewSplitter`` -> TCCA -> classifier),
   and scikit-learn's own ``GridSearchCV`` picks ``n_components`` and ``eps`` by
   the classifier's accuracy.
"""

# The gallery's thumbnail (this example draws no figure): the published accuracy
# against r of mfeat's linear settings, where r is to be chosen.
# sphinx_gallery_thumbnail_path = "../results/figures/mfeat_linear_accuracy.png"

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV as SklearnGridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tcca_core import KTCCA, TCCA
from tcca_core.baselines import CCA
from tcca_core.compose import ViewSplitter, stack_views
from tcca_core.model_selection import GridSearchCV, cross_val_score


def make_data(n: int = 240, seed: int = 0):
    """Three views sharing a skewed 2-D signal; labels from the first coordinate."""
    rng = np.random.default_rng(seed)
    S = rng.exponential(size=(n, 2)) - 1.0
    views = [
        S @ rng.standard_normal((2, d)) + 0.7 * rng.standard_normal((n, d))
        for d in (12, 10, 8)
    ]
    y = (S[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return views, y


def main(verbose: bool = True) -> dict:
    """Run both routes; return what was chosen (the tests check it)."""
    say = print if verbose else (lambda *a, **k: None)
    views, y = make_data()
    out = {}

    # 1a. TCCA: eps by the held-out high-order correlation (3-fold CV).
    search = GridSearchCV(
        TCCA(n_components=2, random_state=0),
        {"eps": [1e-4, 1e-2, 1.0, 1e2]},
        cv=3,
    ).fit(views)
    say("TCCA, eps by the mean held-out high-order correlation of the")
    say("standardized variates (1/n) sum_n z1 z2 z3 (a co-skewness, not bounded by 1):")
    for eps, s in zip(
        search.cv_results_["param_eps"],
        search.cv_results_["mean_test_score"],
        strict=True,
    ):
        say(f"  eps = {eps:<8g} held-out score {s:.3f}")
    say(f"  chosen: {search.best_params_}; refitted: {search.best_estimator_!r}")
    out["tcca"] = search

    # 1b. CCA on the first two views: the held-out canonical correlation.
    scores = cross_val_score(CCA(n_components=2, eps=1e-2), views[:2], cv=3)
    say(f"CCA (views 0, 1): held-out mean canonical correlation per fold {scores}")
    out["cca"] = scores

    # 1c. KTCCA on 120 samples: eps and the RBF width of view 0 only (per-view
    # parameter "<name>__<view>"; the other views keep kernel_params' entries).
    small = [V[:120] for V in views]
    ksearch = GridSearchCV(
        KTCCA(n_components=1, kernel="rbf", kernel_params=[{}, {}, {}], random_state=0),
        {"eps": [1e-2, 1.0], "kernel_params__0": [{"gamma": 0.01}, {"gamma": 0.1}]},
        cv=3,
    ).fit(small)
    say(
        f"KTCCA: chosen {ksearch.best_params_} "
        f"(held-out score {ksearch.best_score_:.3f})"
    )
    out["ktcca"] = ksearch

    # 2. Supervised: n_components and eps by a classifier's accuracy. The views
    # travel concatenated; ViewSplitter cuts them again inside each fit.
    X, sizes = stack_views(views)
    pipe = make_pipeline(
        ViewSplitter(sizes),
        TCCA(random_state=0),
        StandardScaler(),
        LogisticRegression(),
    )
    grid = {"tcca__n_components": [1, 2, 4], "tcca__eps": [1e-2, 1.0]}
    sup = SklearnGridSearchCV(pipe, grid, cv=3).fit(X, y)
    say(
        f"TCCA + logistic regression: chosen {sup.best_params_}, "
        f"CV accuracy {sup.best_score_:.3f}"
    )
    out["supervised"] = sup
    return out


if __name__ == "__main__":
    main()
