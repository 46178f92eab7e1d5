"""The layers of docs/architecture.md, as rules on the library's imports.

Every import of ``src/tcca_core`` counts, at the top of a module or inside a
function (and under ``TYPE_CHECKING``): a function-level import is still a
dependency, and a cycle hidden in one still ties the two modules together.

* No import cycles, anywhere in the library.
* Between components, each may import only its own and the layers below it: the
  estimators never reach the protocol, the data, the tables or the pipeline; the
  protocol never reaches the tables or the pipeline; the tables read the protocol's
  selection only.
* Inside the core (the estimators and their solver), imports point down an order of
  layers (:data:`CORE_LAYERS`): the solver's facts, the data it reads, the engines,
  ALS, the engine that races the starts, Dask, the rank path, the estimators.

A new import that breaks a rule fails here, naming the module and what it imported;
a new core module fails until it is placed in a layer.
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
    "_validation", "solver", "_tcca", "_ktcca", "kernels", "learners", "baselines",
    "_multiview", "_progress", "_spikes", "_ktcca_xp",
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

#: The core's layers, bottom first: a module imports from its own layer or below.
#: A name is one module (a package: its ``__init__``); ``name.*`` also covers the
#: modules under it.
CORE_LAYERS = [
    {"_validation", "_progress"},  # input checks; a fit's progress reporter
    {"solver.params", "solver.linalg"},  # the solver's facts; linear algebra
    {"solver.sparse"},  # sparse raw moments, CSR kernels
    {"solver.views"},  # the whitened views every engine reads
    {"solver.implicit", "solver.dense", "solver.tensorly"},  # the engines' tensors
    {"solver.als"},  # CP-ALS on any tensor's MTTKRP
    {"solver.lm"},  # damped Gauss-Newton on the same, with ALS's error and rule
    {"solver.convergence", "solver.engine"},  # starts, race, rank loop; warnings
    {"solver.dask_reads"},  # what a Dask pass read, checked against the first
    {"solver.dask_chunks"},
    {"solver.dask"},
    {"solver.xp"},  # the array-API (device) passes
    {"solver.path", "solver"},  # the rank path of TCCA, KTCCA and Dask
    {"kernels", "_multiview", "_spikes"},
    {"_ktcca_xp"},  # KTCCA's kernels and whitening on the device
    {"_tcca", "_ktcca", "baselines.*", "learners"},
]


def _name(path: Path, root: Path) -> str:
    """Dotted name of a module relative to the package ``root`` ("" for its root)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package ``root`` it imports (names relative).

    ``from .pkg import name`` counts as importing ``pkg.name`` when that is a
    module, else ``pkg``; absolute imports of the package (by its directory's
    name) count the same.
    """
    top = root.name
    files = {_name(p, root): p for p in sorted(root.rglob("*.py"))}

    def resolve(module: str, names: list[str]) -> set[str]:
        found = set()
        for n in names:
            sub = f"{module}.{n}" if module else n
            found.add(sub if sub in files else module)
        return found

    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names]
                if node.level:
                    base = package.split(".") if package else []
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                elif node.module == top or (node.module or "").startswith(top + "."):
                    module = node.module.removeprefix(top).removeprefix(".")
                else:
                    continue
                out |= resolve(module, names)
            elif isinstance(node, ast.Import):
                out |= {
                    a.name.removeprefix(top).removeprefix(".")
                    for a in node.names
                    if a.name == top or a.name.startswith(top + ".")
                }
        graph[name] = out - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v] & graph.keys()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_of(name: str) -> int | None:
    """Index of the layer of :data:`CORE_LAYERS` that covers ``name``, if any."""
    for i, layer in enumerate(CORE_LAYERS):
        for entry in layer:
            package = entry.removesuffix(".*")
            if name == package or (
                entry.endswith(".*") and name.startswith(package + ".")
            ):
                return i
    return None


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Core imports that point up :data:`CORE_LAYERS`, and core modules not in it."""
    bad = []
    for name, targets in sorted(graph.items()):
        if name.split(".")[0] not in CORE:
            continue
        mine = layer_of(name)
        if mine is None:
            bad.append(f"{name}: not placed in CORE_LAYERS")
            continue
        for t in sorted(targets):
            theirs = layer_of(t)
            if theirs is not None and theirs > mine:
                bad.append(f"{name} imports {t}, a layer above it")
    return bad


def _allowed(component: str, target: str) -> bool:
    if target.split(".")[0] in {component, *ANYWHERE}:
        return True
    rules = ALLOWED[component]
    return any(target == r or target.startswith(r + ".") for r in rules) or (
        target.split(".")[0] in rules
    )


GRAPH = import_graph(SRC)


def test_no_import_cycles():
    assert not cycles(GRAPH), f"import cycles: {cycles(GRAPH)}"


def test_core_imports_point_down():
    assert not upward(GRAPH), "\n".join(upward(GRAPH))


@pytest.mark.parametrize("module", sorted(GRAPH), ids=lambda m: m or "__init__")
def test_imports_follow_the_layers(module):
    component = module.split(".")[0] if module else "__init__"
    assert component in ALLOWED, f"{component}: not placed in a layer"
    bad = sorted(t for t in GRAPH[module] if not _allowed(component, t))
    assert not bad, f"{module or 'tcca_core'} imports {bad}"


def test_the_rule_catches_a_wrong_import():
    """Control: an estimator importing the protocol breaks the rule."""
    assert not _allowed("baselines", "protocol.run")
    assert not _allowed("reporting", "protocol.runners")
    assert _allowed("reporting", "protocol.selection")
    assert _allowed("pipeline", "protocol.run")


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checks_catch_a_planted_cycle_and_an_upward_import(tmp_path):
    """Control: a cycle through a function-level import, and ALS importing the
    engine that runs it, on a synthetic package shaped like the library."""
    pkg = _write(
        tmp_path / "tcca_core",
        {
            "__init__.py": "",
            "_tcca.py": "from .solver.path import rank_path\n",
            "solver/__init__.py": "",
            "solver/path.py": "def f():\n    from .. import _tcca\n",
            "solver/engine.py": "from . import als\n",
            "solver/als.py": "import tcca_core.solver.engine as engine\n",
            "solver/linalg.py": "from .._validation import check\n",
            "_validation.py": "",
        },
    )
    graph = import_graph(pkg)
    assert graph["solver.path"] == {"_tcca"}  # the function-level import counts
    assert graph["solver.als"] == {"solver.engine"}  # so does an absolute one
    assert cycles(graph) == [
        ["_tcca", "solver.path"],
        ["solver.als", "solver.engine"],
    ]
    assert upward(graph) == [
        "solver.als imports solver.engine, a layer above it",
        "solver.path imports _tcca, a layer above it",
    ]
    # and the library as it is passes both
    assert not cycles(GRAPH) and not upward(GRAPH)


def test_a_new_core_module_must_be_placed(tmp_path):
    pkg = _write(tmp_path / "tcca_core", {"__init__.py": "", "solver/new.py": ""})
    assert upward(import_graph(pkg)) == ["solver.new: not placed in CORE_LAYERS"]
