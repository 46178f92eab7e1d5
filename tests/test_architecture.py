"""The layers of docs/architecture.md, as a rule on the library's imports.

Each module of ``src/tcca_core`` may import (at the top or inside a function) only
from its own layer and the layers below it: the estimators never reach the protocol,
the data, the tables or the pipeline; the protocol never reaches the tables or the
pipeline; the tables read the protocol's selection only. A new import that breaks the
layering fails here, naming the module and what it imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tcca_core"

FACTS = {"registry", "paper", "_io"}  # standard library only
#: importable from every layer: the lazy-import helper of the packages' __init__
ANYWHERE = {"_lazy"}
CORE = {
    "_validation", "_linalg", "_als", "_convergence", "_tensors", "_sparse_moments", "_dense",
    "_engine", "_dask", "_dask_chunks", "_tcca", "_ktcca", "kernels", "learners", "baselines",
    "_multiview", "_progress", "_spikes",
}  # fmt: skip
SKLEARN = {"compose", "model_selection"}  # scikit-learn tools on lists of views
#: component -> the components it may import (besides itself)
ALLOWED = {
    **dict.fromkeys(FACTS | ANYWHERE, set()),
    **dict.fromkeys(CORE, CORE),
    "compose": CORE,
    "model_selection": CORE | {"compose"},
    "datasets": {"_io"},
    "stats": set(),  # numpy and scipy only: the tests REPRODUCTION.md reports
    "_cache_codec": FACTS | CORE,  # rebuilds allow-listed estimators by name
    "_cache_auth": {"_io", "_cache_codec"},  # the fit cache's per-user HMAC key
    "fit_cache": FACTS | CORE | {"_cache_codec", "_cache_auth"},
    "protocol": CORE | {"registry"},
    "reporting": FACTS | {"protocol.selection", "protocol.results"},
    "reproduction": FACTS | {"reporting", "stats"},
    "pipeline": FACTS
    | CORE
    | {
        "datasets",
        "fit_cache",
        "protocol",
        "reporting",
        "reproduction",
    },  # fmt: skip
    "__init__": CORE | SKLEARN,
}


def _module(path: Path) -> list[str]:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path) -> set[str]:
    """Dotted names (relative to tcca_core) of what the file imports."""
    here = _module(path)
    package = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                names = (
                    [[*base, node.module]]
                    if node.module
                    else [[*base, a.name] for a in node.names]
                )
                out |= {".".join(n) for n in names}
            elif node.module and node.module.startswith("tcca_core."):
                out.add(node.module.removeprefix("tcca_core."))
        elif isinstance(node, ast.Import):
            out |= {
                a.name.removeprefix("tcca_core.")
                for a in node.names
                if a.name.startswith("tcca_core.")
            }
    return out


def _allowed(component: str, target: str) -> bool:
    if target.split(".")[0] in {component, *ANYWHERE}:
        return True
    rules = ALLOWED[component]
    return any(target == r or target.startswith(r + ".") for r in rules) or (
        target.split(".")[0] in rules
    )


FILES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_follow_the_layers(path):
    module = _module(path)
    component = module[0] if module else "__init__"
    assert component in ALLOWED, f"{component}: not placed in a layer"
    bad = sorted(t for t in _imports(path) if not _allowed(component, t))
    assert not bad, f"{'.'.join(module)} imports {bad}"


def test_the_rule_catches_a_wrong_import(tmp_path):
    """Control: an estimator importing the protocol breaks the rule."""
    assert not _allowed("baselines", "protocol.run")
    assert not _allowed("reporting", "protocol.runners")
    assert _allowed("reporting", "protocol.selection")
    assert _allowed("pipeline", "protocol.run")


#: Most lines a module of src/ may have: past it, a module holds more than one thing.
MAX_LINES = 650


def test_no_module_is_over_the_line_limit():
    lengths = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in FILES}
    over = {m: n for m, n in lengths.items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"
