"""tcca_core: tensor canonical correlation analysis for multi-view data.

Implements TCCA and kernel TCCA (Luo, Tao, Wen, Ramamohanarao & Xu, "Tensor Canonical
Correlation Analysis for Multi-view Dimension Reduction", IEEE TKDE 2015) with an exact
tensor-free engine, plus the paper's baselines, learners and evaluation protocol.
"""

__version__ = "0.1.0"
__all__ = ["KTCCA", "TCCA", "tcca", "tcca_path"]

_LAZY = {"KTCCA": "._ktcca", "TCCA": "._tcca", "tcca": "._tcca", "tcca_path": "._tcca"}


def __getattr__(name):
    # Imported on first use: scikit-learn costs seconds, and the data and pipeline
    # entry points (one process per Snakemake job) often need none of it.
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
