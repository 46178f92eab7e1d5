"""tcca: the distribution's name as an import name, an alias of :mod:`tcca_core`.

``pip install tcca`` installs the library as :mod:`tcca_core` (its documented name,
used by the API reference, the pipeline and the examples) and this small package, so
that ``import tcca`` works too: ``tcca.TCCA is tcca_core.TCCA``. It re-exports
tcca_core's public API (``__all__``) and its version; import submodules from
tcca_core (``from tcca_core.datasets import load``).
"""

import tcca_core as _core

__version__ = _core.__version__
__all__ = list(_core.__all__)


def __getattr__(name):
    # Lazy, as tcca_core itself is: the first use of an estimator imports it.
    if name in __all__:
        return getattr(_core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__})
