"""The fit cache's value codec: entries hold data, never code.

:func:`encode_value` turns a fitted DR step into a JSON tree and the arrays it refers
to, and :func:`decode_value` rebuilds it; :mod:`tcca_core.fit_cache` stores the two
as one entry file, without pickle.

**Entries hold data, never code.** An entry is an ``.npz`` file (an uncompressed zip
of ``.npy`` arrays, read with ``allow_pickle=False``) whose ``__meta__`` member is a
JSON document: the format version, the digest of the entry's key and the value as a
tree of plain JSON values and tagged nodes (lists, tuples, dicts with any keys,
numpy scalars, arrays and scipy.sparse matrices by reference to the zip's members,
and the estimators of this package). An estimator is stored as its class name, its
``get_params()`` and its instance attributes; it is rebuilt by calling that class,
looked up by name in a fixed allow-list of ``tcca_core`` classes (:data:`_CLASSES`),
with the parameters and setting the attributes. Only fitted ``*_`` attributes and the
few others the allow-list names for the class are set, and none that shadows a class
attribute (an entry setting ``transform`` is refused, not served). Nothing in a file
can name a function or a module, so no entry can run code. Objects shared within a
value (the kernels and Cholesky factors of a KTCCA rank path) are stored once and
shared again when read.

A node the decoder does not know (an unknown class, tag or attribute) raises
:class:`EntryError`; a value the encoder cannot store (an estimator holding a
callable kernel, say) raises ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module

import numpy as np
import scipy.sparse as sp

from .registry import METHODS

# The entry's JSON member: never an array a tree may refer to.
_META = "__meta__"


class _Allowed(MutableMapping):
    """The only classes an entry may name, read on every lookup.

    "module.QualName" -> (module, attribute, the instance attributes it may carry
    besides its get_params() and its fitted ``*_`` ones). The estimators of the
    registered methods (``MethodSpec.estimators``: registering a method is the one
    place, even after this module is imported) and the fixed classes of ``fixed``. A
    name is looked up here before anything is imported. A class that gains a private
    attribute its transform needs must be listed in ``fixed`` with it; until then its
    fits are not cached (a warning, and the round-trip test fails).
    """

    def __init__(self, fixed: dict[str, tuple[str, str, tuple[str, ...]]]):
        self._fixed = fixed

    def _all(self) -> dict[str, tuple[str, str, tuple[str, ...]]]:
        out = {}
        for spec in METHODS.values():
            for dotted in spec.estimators:
                module, _, name = dotted.partition(":")
                out[f"{module}.{name}"] = (module, name, ())
        return {**out, **self._fixed}

    def __getitem__(self, name: str) -> tuple[str, str, tuple[str, ...]]:
        return self._all()[name]

    def __setitem__(self, name: str, value: tuple[str, str, tuple[str, ...]]) -> None:
        self._fixed[name] = value

    def __delitem__(self, name: str) -> None:
        del self._fixed[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


_CLASSES: MutableMapping[str, tuple[str, str, tuple[str, ...]]] = _Allowed(
    {
        "tcca_core.kernels.ViewKernel": (
            "tcca_core.kernels",
            "ViewKernel",
            ("kernel", "gamma"),
        )
    }  # no get_params
)
_SPARSE = frozenset(
    f"{fmt}_{kind}" for fmt in ("csr", "csc", "coo") for kind in ("matrix", "array")
)
# numpy scalars stored inline in the JSON (exactly: at most 64-bit reals); any other
# dtype goes to the zip as a 0-d array.
_INLINE_SCALARS = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"}
    | {"uint64", "float16", "float32", "float64", "complex64", "complex128"}
)


class EntryError(ValueError):
    """A cache file that is not a valid entry for the key it was looked up with."""


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _resolve_class(name) -> type:
    """Return the allow-listed class ``name``; refuse anything else before importing."""
    if not isinstance(name, str) or name not in _CLASSES:
        raise EntryError(f"class {name!r} is not one a cache entry may hold")
    module, attr, _ = _CLASSES[name]
    return getattr(import_module(module), attr)


def _check_attribute(name: str, cls: type, attr) -> None:
    """Refuse an instance attribute that ``cls`` (allow-listed as ``name``) lacks.

    Allowed: fitted ``*_`` attributes and the ones ``_CLASSES`` lists for ``cls``,
    and none that shadows a class attribute (a method such as ``transform`` or
    ``__reduce_ex__``), which would break the rebuilt estimator.
    """
    if type(attr) is not str or not attr.isidentifier():
        raise EntryError(f"attribute name {attr!r}")
    fitted = attr.endswith("_") and not attr.startswith("_")
    if not fitted and attr not in _CLASSES[name][2]:
        raise EntryError(f"{name} does not carry an attribute {attr!r}")
    if hasattr(cls, attr):
        raise EntryError(f"attribute {attr!r} would shadow {name}.{attr}")


class _Encoder:
    """Value -> (JSON tree, arrays). Shared objects are stored once (``ref``)."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self._memo: dict[int, int] = {}  # id(object) -> node id
        self._alive: list = []  # keeps memoized objects (and so their ids) alive
        self._active: set[int] = set()

    def _array(self, a: np.ndarray) -> str:
        if a.dtype.hasobject:
            raise TypeError("an array of Python objects cannot be stored")
        name = f"a{len(self.arrays)}"
        self.arrays[name] = a
        return name

    def encode(self, x):
        if x is None or type(x) in (bool, int, float, str):
            return x
        if isinstance(x, np.generic):
            dtype = x.dtype.name
            if dtype in _INLINE_SCALARS:
                if dtype.startswith("complex"):
                    v = [float(x.real), float(x.imag)]
                else:
                    v = x.item()
                return {"t": "scalar", "dtype": dtype, "v": v}
            return {"t": "scalar0d", "a": self._array(np.asarray(x))}
        if type(x) is complex:
            return {"t": "complex", "v": [x.real, x.imag]}
        ident = id(x)
        if ident in self._memo:
            return {"t": "ref", "id": self._memo[ident]}
        if ident in self._active:
            raise TypeError("a value that contains itself cannot be stored")
        self._active.add(ident)
        try:
            node = self._node(x)
        finally:
            self._active.discard(ident)
        node["id"] = len(self._memo)
        self._memo[ident] = node["id"]
        self._alive.append(x)
        return node

    def _items(self, d: dict) -> list:
        return [[self.encode(k), self.encode(v)] for k, v in d.items()]

    def _node(self, x) -> dict:
        if type(x) is np.ndarray:
            return {"t": "ndarray", "a": self._array(x)}
        if sp.issparse(x):
            name = type(x).__name__
            if name not in _SPARSE or getattr(sp, name) is not type(x):
                raise TypeError(f"sparse matrices of type {name} cannot be stored")
            if x.format == "coo":
                parts = {"data": x.data, **{f"c{i}": c for i, c in enumerate(x.coords)}}
            else:
                parts = {"data": x.data, "indices": x.indices, "indptr": x.indptr}
            return {
                "t": "sparse",
                "cls": name,
                "shape": [int(s) for s in x.shape],
                "parts": {k: self.encode(v) for k, v in parts.items()},
            }
        if type(x) in (list, tuple):
            return {"t": type(x).__name__, "v": [self.encode(v) for v in x]}
        if type(x) is dict:
            return {"t": "dict", "v": self._items(x)}
        cls = type(x)
        name = _class_name(cls)
        if name not in _CLASSES or _resolve_class(name) is not cls:
            raise TypeError(f"objects of type {name} cannot be stored")
        params = x.get_params(deep=False) if hasattr(x, "get_params") else {}
        state = {k: v for k, v in vars(x).items() if k not in params}
        for attr in state:  # what the decoder would refuse is never written
            try:
                _check_attribute(name, cls, attr)
            except EntryError as exc:
                raise TypeError(str(exc)) from None
        return {
            "t": "object",
            "cls": name,
            "params": self._items(params),
            "state": self._items(state),
        }


class _Decoder:
    """JSON tree + arrays -> value, accepting nothing but the encoder's nodes."""

    def __init__(self, arrays):
        self._arrays = arrays  # name -> array, read on demand
        self._loaded: dict[str, np.ndarray] = {}
        self._memo: dict[int, object] = {}

    def _array(self, name) -> np.ndarray:
        if not isinstance(name, str) or name == _META or name not in self._arrays:
            raise EntryError(f"no array {name!r} in the entry")
        if name not in self._loaded:
            self._loaded[name] = self._arrays[name]
        return self._loaded[name]

    def decode(self, node):
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is not dict or not isinstance(node.get("t"), str):
            raise EntryError(f"unexpected node {type(node).__name__}")
        tag = node["t"]
        if tag == "ref":
            try:
                return self._memo[node["id"]]
            except (KeyError, TypeError):
                raise EntryError("reference to an unknown node") from None
        if tag == "scalar":
            dtype = node.get("dtype")
            if dtype not in _INLINE_SCALARS:
                raise EntryError(f"scalar type {dtype!r}")
            v = node.get("v")
            if dtype.startswith("complex"):
                re, im = v
                return np.dtype(dtype).type(complex(float(re), float(im)))
            if type(v) not in (bool, int, float):
                raise EntryError("scalar value")
            return np.dtype(dtype).type(v)
        if tag == "scalar0d":
            a = self._array(node.get("a"))
            if a.ndim != 0:
                raise EntryError("scalar array is not 0-d")
            return a[()]
        if tag == "complex":
            re, im = node["v"]
            return complex(float(re), float(im))
        value = self._node(tag, node)
        ident = node.get("id")
        if type(ident) is not int or ident in self._memo:
            raise EntryError("node without a fresh id")
        self._memo[ident] = value
        return value

    def _items(self, items) -> dict:
        if type(items) is not list:
            raise EntryError("mapping is not a list of pairs")
        out = {}
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise EntryError("mapping item is not a pair")
            out[self.decode(pair[0])] = self.decode(pair[1])
        return out

    def _node(self, tag, node):
        if tag == "ndarray":
            return self._array(node.get("a"))
        if tag in ("list", "tuple"):
            items = node.get("v")
            if type(items) is not list:
                raise EntryError(f"{tag} without items")
            values = [self.decode(v) for v in items]
            return values if tag == "list" else tuple(values)
        if tag == "dict":
            return self._items(node.get("v"))
        if tag == "sparse":
            name = node.get("cls")
            if name not in _SPARSE:
                raise EntryError(f"sparse type {name!r}")
            parts = node.get("parts")
            if type(parts) is not dict:
                raise EntryError("sparse matrix without parts")
            parts = {k: self.decode(v) for k, v in parts.items()}
            if not all(type(v) is np.ndarray for v in parts.values()):
                raise EntryError("sparse matrix parts must be arrays")
            shape = tuple(int(s) for s in node.get("shape"))
            cls = getattr(sp, name)
            if name.startswith("coo"):
                coords = tuple(parts[f"c{i}"] for i in range(len(shape)))
                x = cls((parts["data"], coords), shape=shape)
                x.coords = coords  # the constructor may narrow the index type
            else:
                indices, indptr = parts["indices"], parts["indptr"]
                x = cls((parts["data"], indices, indptr), shape=shape)
                x.indices, x.indptr = indices, indptr
            x.data = parts["data"]
            return x
        if tag == "object":
            name = node.get("cls")
            cls = _resolve_class(name)
            params = self._items(node.get("params"))
            state = self._items(node.get("state"))
            if not all(type(k) is str and k.isidentifier() for k in params):
                raise EntryError("parameter names must be identifiers")
            for attr in state:
                _check_attribute(name, cls, attr)
            obj = cls(**params)  # an unknown parameter: TypeError, a miss
            vars(obj).update(state)
            return obj
        raise EntryError(f"unknown node type {tag!r}")


def encode_value(value) -> tuple[object, dict[str, np.ndarray]]:
    """``value`` as a JSON-serialisable tree and the arrays it refers to.

    Raises ``TypeError`` for anything outside the supported types (see the module
    docstring).
    """
    enc = _Encoder()
    return enc.encode(value), enc.arrays


def decode_value(tree, arrays) -> object:
    """Inverse of :func:`encode_value`; ``arrays`` maps names to arrays."""
    return _Decoder(arrays).decode(tree)
