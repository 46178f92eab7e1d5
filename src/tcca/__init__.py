"""tcca: the distribution's name as an import name, an alias of :mod:`tcca_core`.

``pip install tcca`` installs the library as :mod:`tcca_core` (its documented name,
used by the API reference, the pipeline and the examples) and this small package, so
that the installed name imports too. It mirrors tcca_core whole: ``tcca.TCCA is
tcca_core.TCCA`` for everything in ``__all__``, and every public submodule imports
through it as the very same module object (``import tcca.datasets``, ``from
tcca.compose import ViewSplitter``: ``tcca.datasets is tcca_core.datasets``).
Private modules (a component starting with ``_``) are not mirrored, nor a module
whose package gives its name to something else (``tcca_core.reporting.provenance``
is the function; ``tcca.reporting.provenance`` is the same function).
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

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


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import ``tcca.X.Y`` as the module ``tcca_core.X.Y`` itself (not a copy).

    The module keeps its own name, spec and globals, so a class seen through
    either name is one class (``isinstance``, pickling, ``repr`` agree).
    """

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, rest = fullname.partition(".")
        if prefix != __name__ or not rest:
            return None
        if any(part.startswith("_") for part in rest.split(".")):
            return None  # private modules are no part of the mirror
        real = f"{_core.__name__}.{rest}"
        if importlib.util.find_spec(real) is None:
            return None
        parent, _, leaf = real.rpartition(".")
        module = importlib.import_module(real)
        attr = getattr(sys.modules[parent], leaf, module)
        if attr is not module:
            # The package's attribute of that name is something else (a function
            # re-exported over its module): importing the module here would set the
            # attribute to the module, in tcca_core too.
            raise ModuleNotFoundError(
                f"{fullname} is not mirrored: {parent}.{leaf} names a "
                f"{type(attr).__name__}, not its module; use `from "
                f"{fullname.rpartition('.')[0]} import {leaf}` for the "
                f"{type(attr).__name__} or `import {real}` for the module",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        # The real module. The import system keeps its __name__ and __path__ but
        # sets its __spec__ to this alias's spec: exec_module gives its own back,
        # or every relative import inside it would see __package__ !=
        # __spec__.parent (an ImportWarning each time).
        module = importlib.import_module(_core.__name__ + spec.name[len(__name__) :])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        # already executed, under its own name
        module.__spec__ = module.__spec__.loader_state


# First on the path: the path finder would otherwise find ``tcca.datasets.ads`` in
# the real package's folder (``tcca.datasets.__path__``) and run it a second time.
if not any(isinstance(f, _Alias) for f in sys.meta_path):
    sys.meta_path.insert(0, _Alias())
