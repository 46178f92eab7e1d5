"""tcca_core: tensor canonical correlation analysis for multi-view data.

Implements TCCA and kernel TCCA (Luo, Tao, Wen, Ramamohanarao & Xu, "Tensor Canonical
Correlation Analysis for Multi-view Dimension Reduction", IEEE TKDE 2015) with an exact
tensor-free engine, plus the paper's baselines, learners and evaluation protocol.
"""

__version__ = "0.1.0"
__all__ = [
    "KTCCA",
    "MultiViewAdapter",
    "TCCA",
    "ViewSplitter",
    "compose",
    "model_selection",
    "stack_views",
    "tcca",
    "tcca_path",
]

_LAZY = {
    "KTCCA": "._ktcca",
    "TCCA": "._tcca",
    "tcca": "._tcca",
    "tcca_path": "._tcca",
    # scikit-learn model selection on lists of views (issue #17)
    "MultiViewAdapter": ".compose",
    "ViewSplitter": ".compose",
    "stack_views": ".compose",
}
_SUBMODULES = ("compose", "model_selection")


def __getattr__(name):
    # Imported on first use: scikit-learn costs seconds, and the data and pipeline
    # entry points (one process per Snakemake job) often need none of it.
    from importlib import import_module

    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    if name in _SUBMODULES:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
