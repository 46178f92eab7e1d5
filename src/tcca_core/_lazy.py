"""Names of a package imported on first use (standard library only).

The package ``__init__`` modules import their heavy parts lazily: scikit-learn costs
seconds, and the data and pipeline entry points (one process per Snakemake job) often
need none of it. Each such package declares where its names live and gets its module
``__getattr__`` and ``__dir__`` from :func:`lazy_attributes`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any


def lazy_attributes(
    namespace: dict[str, Any],
    homes: Mapping[str, str],
    submodules: Iterable[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a module's ``__getattr__`` and ``__dir__`` for names imported lazily.

    Parameters
    ----------
    namespace : dict
        The package's ``globals()``: a name is stored there once imported, so the
        import happens once.
    homes : mapping of str to str
        Name -> the module (relative to the package) that defines it.
    submodules : iterable of str
        Submodules that are attributes of the package themselves.

    Returns
    -------
    (callable, callable)
        ``__getattr__`` (an unknown name is an :class:`AttributeError`) and
        ``__dir__`` (the names defined so far and ``__all__``).
    """
    package = namespace["__name__"]
    submodules = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        if name in submodules:
            value = import_module(f".{name}", package)
        elif name in homes:
            value = getattr(import_module(homes[name], package), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__
