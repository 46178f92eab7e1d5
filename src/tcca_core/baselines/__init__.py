"""Baselines of Luo et al. (TKDE 2015, section 5).

BSF, CAT, CCA, CCA-LS, DSE, SSMVD and, for kernels, BSK, AVG and KCCA. The protocol
that runs them is :mod:`tcca_core.protocol`.
"""

from .._lazy import lazy_attributes
from ._cca import CCA, KCCA, cca, kcca_from_kernels, view_pairs
from ._cca_ls import CCALS, cca_ls, cca_ls_iterative
from ._single import (
    average_kernels,
    concatenate_views,
    l2_normalize_rows,
    normalize_kernel,
    normalize_views,
)

__all__ = [
    "CCA",
    "CCALS",
    "DSE",
    "KCCA",
    "SSMVD",
    "average_kernels",
    "cca",
    "cca_ls",
    "cca_ls_iterative",
    "concatenate_views",
    "kcca_from_kernels",
    "l2_normalize_rows",
    "normalize_kernel",
    "normalize_views",
    "view_pairs",
]


# DSE and SSMVD live in their own modules, imported on first use so that this package
# imports even where those modules are being developed.
__getattr__, __dir__ = lazy_attributes(globals(), {"DSE": "._dse", "SSMVD": "._ssmvd"})
