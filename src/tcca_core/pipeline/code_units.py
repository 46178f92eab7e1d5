"""The code an output depends on: module digests that only code changes move.

A published output (a method's fit rows, an investigation's table) depends on the
modules that computed it, not on the whole library. This module gives the two
facts that the release manifest (:mod:`tcca_core.pipeline.release`) records per
output:

- :func:`module_digest`: SHA-256 of one module's code, blind to what cannot change a
  number: comments, docstrings, layout, and the *messages* it writes (the text of
  log calls, warnings, raised exceptions, and of assignments to a ``message``, as
  :class:`_Messages` defines them). A reworded log line moves no digest; any other
  change to the code does, even one that changes no number (the sentinel refit,
  :mod:`tcca_core.pipeline.sentinel`, tells those apart).
- :func:`executed_modules`: which modules of ``tcca_core`` ran while a block ran
  (a profile hook on calls). A method's fits record the modules they executed, so
  a module that no fit runs (``compose``, ``model_selection``, the Dask engine on
  in-memory data) belongs to no fit's code.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..reporting.provenance import _code_of

__all__ = ["PACKAGE", "executed_modules", "module_digest", "module_digests"]

#: The installed ``tcca_core`` folder; module paths are relative to its parent
#: (``tcca_core/_tcca.py``), so that they read the same in every checkout.
PACKAGE = Path(__file__).resolve().parents[1]

#: Methods of a logger (and ``warnings.warn``) whose string arguments are messages.
_LOG_CALLS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
)
_MESSAGE = "<message>"


def _is_text(node: ast.AST) -> bool:
    """Tell whether ``node`` is a string literal, an f-string, or a sum of those."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _is_text(node.left)
    return False


def _message_name(target: ast.AST) -> bool:
    name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
    return "message" in name or name in ("msg", "why")


class _Messages(ast.NodeTransformer):
    """Replace the messages of a module by one placeholder.

    A message is text that only a reader sees: the string arguments of a log call
    (``logger.info``, ``logging.warning``, ...), of ``warnings.warn`` and of
    ``print``; the string arguments of the exception a ``raise`` builds; the text
    assigned to a name with ``message`` in it (``message += "..."``); and what a
    function named ``*_message`` returns.
    """

    def __init__(self) -> None:
        self._raising = 0
        self._in_message_function = 0

    def _blank_args(self, node: ast.Call) -> None:
        node.args = [ast.Constant(_MESSAGE) if _is_text(a) else a for a in node.args]
        for kw in node.keywords:
            if _is_text(kw.value):
                kw.value = ast.Constant(_MESSAGE)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _LOG_CALLS or name == "print" or self._raising:
            self._blank_args(node)
        return self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        self._raising += 1
        try:
            return self.generic_visit(node)
        finally:
            self._raising -= 1

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if _is_text(node.value) and any(_message_name(t) for t in node.targets):
            node.value = ast.Constant(_MESSAGE)
        return self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        if _is_text(node.value) and _message_name(node.target):
            node.value = ast.Constant(_MESSAGE)
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        inside = node.name.endswith("_message")
        self._in_message_function += inside
        try:
            return self.generic_visit(node)
        finally:
            self._in_message_function -= inside

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if self._in_message_function and node.value is not None:
            if _is_text(node.value):
                node.value = ast.Constant(_MESSAGE)
        return self.generic_visit(node)


def module_digest(path: str | os.PathLike) -> str:
    """Return the SHA-256 (hex) of a module's code.

    Comments, docstrings, layout and messages (:class:`_Messages`) do not count;
    ``"missing"`` for a file that is not there.
    """
    path = Path(path)
    if not path.is_file():
        return "missing"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    tree = _Messages().visit(tree)
    return hashlib.sha256(_code_of(tree).encode()).hexdigest()


def module_digests(
    modules: Iterable[str], root: str | os.PathLike | None = None
) -> dict[str, str]:
    """Return ``{module: module_digest}``, sorted by path.

    Paths are relative to ``root`` (default: the folder holding the installed
    ``tcca_core``).
    """
    top = PACKAGE.parent if root is None else Path(root)
    return {m: module_digest(top / m) for m in sorted(set(modules))}


@contextmanager
def executed_modules(
    package: str | os.PathLike | None = None,
) -> Iterator[set[str]]:
    """Collect the modules of ``package`` whose code runs inside the block.

    Yields a set that fills in as the block runs: each module's path relative to
    the package's parent (``tcca_core/_als.py``). Calls in threads started inside
    the block count too. Any profile hook set before is restored afterwards.
    """
    top = Path(package or PACKAGE).resolve()
    prefix = str(top) + os.sep
    parent = top.parent
    seen: set[str] = set()
    files: dict[str, bool] = {}

    def hook(frame, event, arg):
        if event != "call":
            return
        name = frame.f_code.co_filename
        known = files.get(name)
        if known is None:
            known = files[name] = os.path.realpath(name).startswith(prefix)
            if known:
                seen.add(Path(os.path.realpath(name)).relative_to(parent).as_posix())

    before, before_threads = sys.getprofile(), threading.getprofile()
    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(before)
        threading.setprofile(before_threads)
