"""The configuration files `config.toml` and `secrets.toml` of a home; adapter layer.

The journal's location and store are fixed: a `persistence` section is refused outright, so
no configuration can point the runtime at another database or an in-memory store.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import re
import stat
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import orjson
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from adapters.config.names import unknown_models, unknown_names
from adapters.config.profiles import missing_profiles
from adapters.config.roots import RootCheck, check_roots, root_warnings, unusable_roots
from adapters.errors import ConfigError, PersistenceNotConfigurableError
from adapters.sandbox.checks import sandbox_warnings
from adapters.settings.config_file import Config
from adapters.settings.secrets_file import SecretsFile
from adapters.tools.catalog import tool_catalog

Location = tuple[int | str, ...]
M = TypeVar("M", bound=BaseModel)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_GIVEN_LIMIT = 60
"""Longer given values are cut in messages; the key and the expectation matter more."""
_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1
"""The integers orjson writes; TOML allows 64-bit signed ones, tomllib reads any size."""
MAX_DEPTH = 32
"""The deepest nesting of tables and arrays a file may have; no setting needs more than 5."""
_DEPTH_SHOWN = 4
"""How many keys of an over-deep path a message names."""
_TYPE_ERRORS = ("_type", "_parsing", "int_from_float", "enum", "literal_error")
_RANGE_ERRORS = ("greater_than", "less_than", "string_too_short", "string_too_long")


@dataclass(frozen=True)
class CheckedConfig:
    """A home's configuration after every start-up check passed."""

    config: Config
    config_found: bool
    secret_values: int | None
    """How many values secrets.toml redacts; None when there is no secrets.toml."""
    roots: tuple[RootCheck, ...] = ()
    """What each configured root is on disk, in file order."""
    warnings: tuple[str, ...] = ()
    """What a start prints but does not refuse: missing roots, no root at all, an unconfined
    or refused shell."""


def check_config(config_path: Path, secrets_path: Path) -> CheckedConfig:
    """Check both configuration files as a daemon start does; the first problem is raised."""
    config = load_config(config_path)
    roots = checked_roots(config, config_path)
    secrets = secrets_file(secrets_path)
    return CheckedConfig(
        config=config,
        config_found=config_path.is_file(),
        secret_values=None if secrets is None else len(secrets.redacted_values()),
        roots=roots,
        warnings=(
            *root_warnings(roots, config_path),
            *sandbox_warnings(config.tools.shell, config_path),
            *missing_profiles(config, secrets, secrets_path),
        ),
    )


def checked_roots(config: Config, path: Path) -> tuple[RootCheck, ...]:
    """The configured roots as they are now; a root that is not a directory is a ConfigError."""
    roots = check_roots(config.tools.roots)
    problems = unusable_roots(roots)
    if problems:
        msg = f"config {path} is invalid: {'; '.join(problems)}"
        raise ConfigError(msg)
    return roots


def load_config(path: Path) -> Config:
    """Read and validate `path`; a missing file means the defaults."""
    data = _read_toml(path, "config")
    if data is None:
        return Config()
    if "persistence" in data:
        msg = (
            f"config {path} is invalid: persistence: not allowed, the journal always lives in "
            "the home as ledgerclaw.db. Remove the [persistence] section."
        )
        raise PersistenceNotConfigurableError(msg)
    config = _validate(Config, data, f"config {path}", secret=False)
    problems = unknown_names(config.tools, tool_catalog(), config.mcp.servers)
    problems += unknown_models(config.agent, config.models)
    if problems:
        listed = "; ".join(f"{_dotted(loc)}: {problem}" for loc, problem in problems)
        msg = f"config {path} is invalid: {listed}"
        raise ConfigError(msg)
    return config


def check_secrets(path: Path) -> int | None:
    """Check secrets.toml: owner-only, and only `[redact] values` of 4+ characters.

    Returns:
        How many values it lists, or None when there is no secrets.toml.
    """
    values = secret_values(path)
    return None if values is None else len(values)


def secret_values(path: Path) -> tuple[str, ...] | None:
    """The values secrets.toml redacts, after the checks of `check_secrets`; None without one."""
    secrets = secrets_file(path)
    return None if secrets is None else secrets.redacted_values()


def secrets_file(path: Path) -> SecretsFile | None:
    """secrets.toml, read and checked (owner-only, known keys); None when there is none."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
    except OSError as error:
        msg = f"cannot read secrets {path}: {error.strerror or error}"
        raise ConfigError(msg) from None
    if mode & 0o077:
        msg = (
            f"secrets {path} is open to its group or others (mode {mode:04o}); "
            f"make it owner-only: chmod 600 {path}"
        )
        raise ConfigError(msg)
    data = _read_toml(path, "secrets")
    if data is None:
        return None
    return _validate(SecretsFile, data, f"secrets {path}", secret=True)


def _read_toml(path: Path, kind: str) -> dict[str, Any] | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        msg = f"cannot read {kind} {path}: {error.strerror or error}"
        raise ConfigError(msg) from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        msg = f"{kind} {path} is not valid TOML: {error}"
        raise ConfigError(msg) from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively; a few hundred levels
        # exhaust Python's stack before any of our checks can run.
        msg = f"{kind} {path} is invalid: values are nested more than {MAX_DEPTH} levels deep"
        raise ConfigError(msg) from None


def _validate(model: type[M], data: dict[str, Any], source: str, *, secret: bool) -> M:
    problems = _not_json(model, data, secret=secret)
    if not problems:
        # Strict JSON validation: TOML values are typed, so "7431" or true is not a port, yet
        # enums and tables still read from their TOML spelling.
        try:
            return model.model_validate_json(orjson.dumps(data), strict=True)
        except ValidationError as error:
            problems = [_problem(model, detail, secret=secret) for detail in error.errors()]
    msg = f"{source} is invalid: {'; '.join(problems)}"
    raise ConfigError(msg) from None


def _not_json(model: type[BaseModel], data: dict[str, Any], *, secret: bool) -> list[str]:
    """TOML values JSON cannot carry exactly, and nesting no setting needs.

    Dates and times, integers beyond 64 bits and nan or inf have no exact JSON form (orjson
    would write null, and the message would say "got None"). The walk is iterative and stops
    at MAX_DEPTH, so a deeply nested file never reaches orjson's or pydantic's own limits.
    """
    problems: list[str] = []
    pending: list[tuple[Location, object]] = [((key,), item) for key, item in data.items()]
    pending.reverse()
    while pending:
        loc, value = pending.pop()
        if isinstance(value, dict | list):
            if len(loc) >= MAX_DEPTH:
                shown = _dotted(loc[:_DEPTH_SHOWN]) + ("…" if len(loc) > _DEPTH_SHOWN else "")
                problems.append(f"{shown}: nested more than {MAX_DEPTH} levels deep")
                continue
            items = value.items() if isinstance(value, dict) else enumerate(value)
            pending.extend(reversed([((*loc, key), item) for key, item in items]))
            continue
        given = _inexact(value, secret=secret)
        if given is None:
            continue
        target = _target(model, loc)
        if target is None:
            problems.append(f"{_dotted(loc)}: unknown key{_suggestion(model, loc)}")
            continue
        expected = _describe(target, _constraints(model, loc)) or "a TOML string, number or table"
        problems.append(f"{_dotted(loc)}: expected {expected}, got {given}")
    return problems


def _inexact(value: object, *, secret: bool) -> str | None:
    """How to name a value JSON cannot carry exactly; None for every other value."""
    if isinstance(value, dt.date | dt.time):
        return "a date or time" if secret else value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return "a number" if secret else str(value)
    if isinstance(value, int) and not _INT64_MIN <= value <= _UINT64_MAX:
        return "an integer beyond 64 bits" if secret else str(value)
    return None


def _problem(model: type[BaseModel], detail: ErrorDetails, *, secret: bool) -> str:
    loc: Location = detail["loc"]
    kind = detail["type"]
    given = _given(detail["input"], secret=secret)
    if kind == "extra_forbidden":
        return f"{_dotted(loc)}: unknown key{_suggestion(model, loc)}"
    if loc and loc[-1] == "[key]":
        mapping = _target(model, loc[:-2])
        key_type = get_args(mapping)[0] if get_origin(mapping) is dict else None
        key = _describe(key_type, []) or "a valid key"
        close = _close_choice(key_type, detail["input"], secret=secret)
        return f"{_dotted(loc[:-1])}: expected the key to be {key}, got {given}{close}"
    if kind == "missing":
        return f"{_dotted(loc)}: required key is missing"
    if kind == "value_error":
        return f"{_dotted(loc)}: {detail.get('ctx', {}).get('error', detail['msg'])}"
    described = None
    if kind.endswith(_TYPE_ERRORS) or kind.startswith(_RANGE_ERRORS):
        described = _describe(_target(model, loc), _constraints(model, loc))
    expected = described or detail["msg"].removeprefix("Input should be ")
    close = _close_choice(_target(model, loc), detail["input"], secret=secret)
    return f"{_dotted(loc)}: expected {expected}, got {given}{close}"


def _close_choice(annotation: object, given: object, *, secret: bool) -> str:
    """` (did you mean "warning"?)` when a closed set of words has one close to `given`."""
    if secret or not isinstance(given, str):
        return ""
    if get_origin(annotation) is Literal:
        choices = [str(value) for value in get_args(annotation)]
    elif isinstance(annotation, type) and issubclass(annotation, Enum):
        choices = [str(member.value) for member in annotation]
    else:
        return ""
    close = difflib.get_close_matches(given, choices, n=1)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _suggestion(model: type[BaseModel], loc: Location) -> str:
    parent = _target(model, loc[:-1])
    if not (isinstance(parent, type) and issubclass(parent, BaseModel)):
        return ""
    known = list(parent.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if close:
        return f" (did you mean {_dotted((*loc[:-1], close[0]))}?)"
    return f" (known keys: {', '.join(known)})"


def _target(model: type[BaseModel], loc: Location) -> object:
    """The type expected at `loc`, walking fields, array items and table values."""
    current: object = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = field.annotation
        elif get_origin(current) in {tuple, list}:
            current = get_args(current)[0]
        elif get_origin(current) is dict:
            current = get_args(current)[1]
        else:
            return None
    return _unwrap(current)


def _constraints(model: type[BaseModel], loc: Location) -> list[object]:
    """The bounds on the value at `loc`: a model field's, or an annotated array item's."""
    parent = _unwrap(_target(model, loc[:-1])) if loc else None
    if isinstance(parent, type) and issubclass(parent, BaseModel):
        field = parent.model_fields.get(str(loc[-1]))
        return list(field.metadata) if field else []
    if get_origin(parent) in {tuple, list}:
        item = get_args(parent)[0]
        if get_origin(item) is Annotated:
            # `Annotated[str, Field(...)]` keeps its bounds inside the FieldInfo.
            return [
                bound
                for meta in item.__metadata__
                for bound in (meta.metadata if isinstance(meta, FieldInfo) else [meta])
            ]
    return []


def _unwrap(annotation: object) -> object:
    """The annotation without `| None` and without `Annotated` metadata."""
    if get_origin(annotation) in {Union, UnionType}:
        kept = [arg for arg in get_args(annotation) if arg is not NoneType]
        annotation = kept[0] if len(kept) == 1 else annotation
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _describe(annotation: object, constraints: Sequence[object]) -> str | None:  # noqa: PLR0911 - one answer per kind of setting
    """What a value of this type looks like, in TOML words, with its range."""
    if get_origin(annotation) is Literal:
        return "one of " + _choices(get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + _choices([member.value for member in annotation])
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer" + _range(constraints)
    if annotation is float:
        return "a number" + _range(constraints)
    if annotation is str:
        shortest = [n for c in constraints if (n := getattr(c, "min_length", None)) is not None]
        return "a string" + (f" of at least {shortest[0]} characters" if shortest else "")
    if get_origin(annotation) in {tuple, list}:
        return "an array"
    if get_origin(annotation) is dict or (
        isinstance(annotation, type) and issubclass(annotation, BaseModel)
    ):
        return "a table"
    return None


def _choices(values: Sequence[object]) -> str:
    quoted = [f'"{value}"' for value in values]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def _range(constraints: Sequence[object]) -> str:
    low = next((n for c in constraints if (n := getattr(c, "ge", None)) is not None), None)
    high = next((n for c in constraints if (n := getattr(c, "le", None)) is not None), None)
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" of at least {low}"
    if high is not None:
        return f" of at most {high}"
    return ""


def _dotted(loc: Location) -> str:
    """A TOML key path: `tools.approval.shell`, `tools.roots[0].path`, `a."b.c"`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            key = part if _BARE_KEY.match(part) else orjson.dumps(part).decode()
            text += f".{key}" if text else key
    return text or "(top level)"


def _given(value: object, *, secret: bool) -> str:
    """The offending value as TOML spells it; for secrets only its kind, never its text."""
    kinds = {bool: "a boolean", dict: "a table", list: "an array", int: "an integer"}
    if isinstance(value, str):
        text = orjson.dumps(value).decode()
        if secret:
            text = f"a string of {len(value)} characters"
        elif len(text) > _GIVEN_LIMIT:
            text = text[: _GIVEN_LIMIT - 4] + '..."'
        return text
    if isinstance(value, bool) and not secret:
        return "true" if value else "false"
    if secret or isinstance(value, dict | list):
        return kinds.get(type(value), "a number")
    return str(value)
