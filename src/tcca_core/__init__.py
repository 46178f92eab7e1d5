"""tcca_core: tensor canonical correlation analysis for multi-view data.

Implements TCCA and kernel TCCA (Luo, Tao, Wen, Ramamohanarao & Xu, "Tensor Canonical
Correlation Analysis for Multi-view Dimension Reduction", IEEE TKDE 2015) with an exact
tensor-free engine, plus the paper's baselines, learners and evaluation protocol.
"""

from ._ktcca import KTCCA
from ._tcca import TCCA, tcca

__all__ = ["KTCCA", "TCCA", "tcca"]
__version__ = "0.1.0"
