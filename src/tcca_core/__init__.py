"""tcca_core: tensor canonical correlation analysis for multi-view data.

Implements TCCA and kernel TCCA (Luo, Tao, Wen, Ramamohanarao & Xu, "Tensor Canonical
Correlation Analysis for Multi-view Dimension Reduction", IEEE TKDE 2015) with an exact
tensor-free engine, plus the paper's baselines, learners and evaluation protocol.
"""

from ._lazy import lazy_attributes

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

# Imported on first use: scikit-learn costs seconds, and the data and pipeline entry
# points (one process per Snakemake job) often need none of it.
__getattr__, __dir__ = lazy_attributes(
    globals(),
    {
        "KTCCA": "._ktcca",
        "TCCA": "._tcca",
        "tcca": "._tcca",
        "tcca_path": "._tcca",
        # scikit-learn model selection on lists of views
        "MultiViewAdapter": ".compose",
        "ViewSplitter": ".compose",
        "stack_views": ".compose",
    },
    submodules=("compose", "model_selection"),
)
