"""Loading this repository's scripts (benchmarks/, investigations/, .test/) as modules."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_script(path: str | Path, name: str | None = None) -> ModuleType:
    """The script at ``path`` (relative to the repository, or absolute) as a module.

    Its folder goes on ``sys.path`` first, as ``python path`` would put it, so that a
    script's own helpers (``investigations/_common.py``) import.
    """
    path = REPO / path
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
