"""Reading the configuration files and checking them against the JSON schema.

The first checks of the configuration (:mod:`tcca_core.pipeline.config`):

- :func:`load_yaml` and :func:`check_config_files`: each configuration file read
  again, a key given twice refused (Snakemake keeps the last without a word);
- :func:`check_schema`: the merged configuration against
  ``workflow/schemas/config.schema.yaml``, with the method and learner names of
  :mod:`tcca_core.registry` (:func:`load_schema`), every violation one line
  ``invalid config: <key>: <what is wrong>``.

:class:`ConfigError`, the error of every step, lives here: the later steps
(:mod:`.config_settings`, :mod:`.locations`) raise it too. Standard library only at
import; PyYAML and jsonschema are imported on use.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from ..registry import LEARNERS, METHODS

__all__ = [
    "ConfigError",
    "check_config_files",
    "check_schema",
    "load_schema",
    "load_yaml",
]


class ConfigError(ValueError):
    """A configuration error found before any job runs; names the offending key."""


#: Keys naming folders (a pattern error is "must be a folder name").
_FOLDER_KEYS = ("data_root", "mirror", "fit_cache", "results_dir")


def _fail(key, message):
    raise ConfigError(f"invalid config: {key}: {message}")


def _key(path, *more):
    """Dotted key of a path into the config: datasets.ads.settings.l100, columns[0]."""
    out = ""
    for part in [*path, *more]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "<top level>"


def _short(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(error):
    """(key, message) for one jsonschema error, descending into oneOf alternatives."""
    path, kind = list(error.absolute_path), error.validator
    if kind == "oneOf" and error.context:
        alternatives = error.validator_value
        if all("required" in a for a in alternatives):
            names = [n for a in alternatives for n in a["required"]]
            return _key(path), f"give exactly one of {', '.join(names)}"
        # drop the alternatives that fail on the type: they are not what was meant
        by_alt = {}
        for sub in error.context:
            by_alt.setdefault(sub.relative_schema_path[0], []).append(sub)
        meant = [
            subs
            for subs in by_alt.values()
            if not any(
                s.validator == "type" and len(s.absolute_path) == len(path)
                for s in subs
            )
        ]
        if len(meant) == 1:
            return _describe(min(meant[0], key=lambda s: -len(s.absolute_path)))
        return _key(path), (
            f"{_short(error.instance)} is not valid here: "
            + "; or ".join(sorted({s.message for s in error.context}))[:300]
        )
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        hints = difflib.get_close_matches(extra[0], allowed, n=1) if allowed else []
        return _key(path, extra[0]), (
            "unknown key"
            + (f" (did you mean {hints[0]!r}?)" if hints else "")
            + (f"; allowed: {', '.join(allowed)}" if allowed else "")
        )
    if "propertyNames" in error.schema_path:
        name = error.instance
        if kind == "enum":
            what = (
                "method" if "method" in error.schema.get("description", "") else "name"
            )
            return _key(path, name), (
                f"unknown {what} {name!r}; choose one of "
                + ", ".join(error.validator_value)
            )
        return _key(path, name), f"invalid name {name!r}: {error.message}"
    if kind == "required":
        missing = [r for r in error.validator_value if r not in error.instance]
        return _key(path, missing[0]), "required key is missing"
    if kind in ("minItems", "minProperties", "minLength"):
        if len(error.instance) == 0 or error.validator_value == 1:
            return _key(path), f"must not be empty (got {_short(error.instance)})"
        what = "views" if path and path[-1] == "views" else "items"
        return _key(path), (
            f"needs at least {error.validator_value} {what}, got "
            f"{len(error.instance)} ({_short(error.instance)})"
        )
    if kind == "pattern" and path and path[-1] in _FOLDER_KEYS:
        if error.instance == "":  # minLength says the same
            return _key(path), "must not be empty (got '')"
        if isinstance(error.instance, str) and error.instance.isprintable():
            return _key(path), f"must be a folder name, got {_short(error.instance)}"
        return _key(path), (
            "must be a folder name on one line (no control characters), got "
            f"{_short(error.instance)}"
        )
    if kind == "pattern" and path and path[-1] in ("title", "label"):
        return _key(path), (
            "must be one line of plain text without `$` (a figure would read it as "
            f"mathtext), got {_short(error.instance)}"
        )
    if kind == "pattern" and len(path) > 1 and path[0] == "machine":
        return _key(path), f"must be one line of text, got {_short(error.instance)}"
    if kind in ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"):
        bound = {
            "maximum": "at most",
            "minimum": "at least",
            "exclusiveMaximum": "below",
            "exclusiveMinimum": "above",
        }[kind]
        return _key(path), (
            f"must be {bound} {error.validator_value}, got {_short(error.instance)}"
        )
    if kind == "type":
        return _key(path), (
            f"expected {error.validator_value}, got {_short(error.instance)} "
            f"({type(error.instance).__name__})"
        )
    if kind == "enum":
        choices = [str(v) for v in error.validator_value]
        hints = (
            difflib.get_close_matches(error.instance, choices, n=1)
            if isinstance(error.instance, str)
            else []
        )
        return _key(path), (
            f"{_short(error.instance)} is not one of {', '.join(choices)}"
            + (f" (did you mean {hints[0]!r}?)" if hints else "")
        )
    return _key(path), error.message


def _duplicate_keys(node, path=()) -> list[tuple[str, str, int, int]]:
    """(dotted key, key, line, first line) of each key given twice in a mapping."""
    import yaml

    found = []
    if isinstance(node, yaml.MappingNode):
        seen: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<`: may be overridden
                continue
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if key is not None and key in seen:
                found.append((_key([*path, key]), key, line, seen[key]))
            elif key is not None:
                seen[key] = line
            found += _duplicate_keys(value_node, (*path, key if key else "?"))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found += _duplicate_keys(item, (*path, i))
    return found


def load_yaml(path: str | os.PathLike):
    """Read a YAML file, refusing a key given twice in one mapping.

    PyYAML keeps the last value of a repeated key without a word, so a setting
    written twice (the second copy forgotten at the bottom of a file) would silently
    replace the first. ConfigError: ``invalid config: <file>, line <n>: duplicate
    key <dotted key> (first at line <m>) ...``, one line per repeated key.
    """
    import yaml

    text = Path(path).read_text(encoding="utf-8")
    duplicates = _duplicate_keys(yaml.compose(text, Loader=yaml.SafeLoader))
    if duplicates:
        raise ConfigError(
            "\n".join(
                f"invalid config: {os.fspath(path)}, line {line}: duplicate key "
                f"{dotted!r} (first at line {first}); give each key once (YAML would "
                "silently keep the last)"
                for dotted, _, line, first in duplicates
            )
        )
    return yaml.safe_load(text)


def check_config_files(paths) -> None:
    """Refuse configuration files with a key given twice (:func:`load_yaml`).

    Snakemake reads ``configfile:`` and ``--configfile`` files itself, keeping the
    last of two equal keys; common.smk reads each again with this check before any
    other. Every file's problems are reported together.
    """
    problems = []
    for path in paths:
        try:
            load_yaml(path)
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("\n".join(problems))


def load_schema(schema_path: str | os.PathLike) -> dict:
    """Load the configuration schema, with the registry's method and learner names.

    The schema file leaves these names open (``workflow/schemas/config.schema.yaml``);
    they are filled in here from :mod:`tcca_core.registry`, so that a method
    registered there is a valid configuration value without editing the schema.
    """
    schema = load_yaml(schema_path)
    schema["$defs"]["method"]["enum"] = list(METHODS)
    schema["$defs"]["setting"]["properties"]["learner"]["enum"] = list(LEARNERS)
    return schema


def _command_line_booleans(cfg: dict, schema: dict) -> None:
    """Turn ``"true"``/``"false"`` of top-level boolean keys into booleans, in place.

    Snakemake hands ``--config strict=true`` over as the string ``'true'`` (only
    Python's ``True`` becomes a boolean), so the documented spelling would fail.
    """
    for key, prop in schema.get("properties", {}).items():
        types = prop.get("type")
        types = [types] if isinstance(types, str) else types or []
        value = cfg.get(key)
        if "boolean" in types and isinstance(value, str):
            word = value.strip().lower()
            if word in ("true", "false"):
                cfg[key] = word == "true"


def check_schema(cfg: dict, schema_path: str | os.PathLike) -> None:
    """Raise ConfigError listing every schema violation, one line each, key first.

    Top-level boolean keys given as ``true``/``false`` on the command line are
    turned into booleans first (``cfg`` is changed in place).
    """
    import jsonschema

    schema = load_schema(schema_path)
    _command_line_booleans(cfg, schema)
    validator = jsonschema.Draft202012Validator(schema)
    problems = sorted({_describe(e) for e in validator.iter_errors(cfg)})
    if problems:
        raise ConfigError(
            "\n".join(f"invalid config: {key}: {msg}" for key, msg in problems)
            + "\n(see config/README.md and workflow/schemas/config.schema.yaml)"
        )
