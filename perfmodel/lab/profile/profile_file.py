"""The profile as a JSON file: ``save_profile`` (atomic) and ``load_profile``, and the dict forms between.

One generic decoder driven by the records' type hints (perfmodel.lab.profile.schema; ~50 lines). Kept rather
than replaced by dacite: it has no dependency, its one-line errors name the field's full path with list
positions (comm[1].ops.allreduce.iters), it refuses JSON true where a number is wanted (bool is an int
subclass, which a plain isinstance check lets through), and the validation proper stays in each
dataclass's __post_init__ either way; dacite would need a strict Config and its errors translated into
these lines. Every problem with a file is one ProfileError naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import types
import typing
from pathlib import Path
from typing import Any

from .schema import SCHEMA_VERSION, CommProfile, Profile, ProfileError


class _Bad(Exception):
    """Decoding problem at a field path (converted to ProfileError with the file name)."""


def _kind(v: Any) -> str:
    return "null" if v is None else type(v).__name__.replace("dict", "object").replace("list", "array")


def _decode(tp: Any, v: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if v is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _decode(inner, v, where)
    if dataclasses.is_dataclass(tp):
        if not isinstance(v, dict):
            raise _Bad(f"{where or 'top level'}: expected an object, got {_kind(v)}")
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        unknown = sorted(set(v) - names)
        if unknown:
            raise _Bad(f"{where or 'top level'}: unknown field {unknown[0]!r}")
        kwargs = {}
        for f in dataclasses.fields(tp):
            sub = f"{where}.{f.name}" if where else f.name
            if f.name in v:
                kwargs[f.name] = _decode(hints[f.name], v[f.name], sub)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _Bad(f"missing field {sub}")
        try:
            return tp(**kwargs)
        except (ValueError, TypeError) as exc:
            raise _Bad(f"{where or 'top level'}: {exc}") from None
    if origin is tuple:
        if not isinstance(v, list):
            raise _Bad(f"{where}: expected an array, got {_kind(v)}")
        (inner, _) = typing.get_args(tp)
        return tuple(_decode(inner, x, f"{where}[{i}]") for i, x in enumerate(v))
    if origin is dict:
        if not isinstance(v, dict):
            raise _Bad(f"{where}: expected an object, got {_kind(v)}")
        _, inner = typing.get_args(tp)
        return {str(k): _decode(inner, x, f"{where}.{k}") for k, x in v.items()}
    if tp is bool:
        if not isinstance(v, bool):
            raise _Bad(f"{where}: expected true or false, got {_kind(v)}")
        return v
    if tp is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _Bad(f"{where}: expected an integer, got {_kind(v)}")
        return v
    if tp is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Bad(f"{where}: expected a number, got {_kind(v)}")
        return float(v)
    if tp is str:
        if not isinstance(v, str):
            raise _Bad(f"{where}: expected a string, got {_kind(v)}")
        return v
    raise TypeError(f"no decoder for {tp!r}")  # a bug in the schema, not in the file


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"profile holds a non-finite number ({v}); JSON cannot store it")
    return v


def profile_to_dict(profile: Profile) -> dict:
    """The profile as plain JSON data (objects, arrays, numbers, strings); ValueError on NaN/inf."""
    return _plain(dataclasses.asdict(profile))


def profile_from_dict(data: Any, where: str = "profile") -> Profile:
    """Rebuild a Profile from ``profile_to_dict`` output; ProfileError names ``where`` and the field."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ProfileError(f"{where}: not a perfmodel profile (no schema_version)")
    version = data["schema_version"]
    if version != SCHEMA_VERSION:
        raise ProfileError(f"{where}: schema version {version!r}, this perfmodel reads version {SCHEMA_VERSION}; "
                           f"rerun `perfmodel profile`")
    try:
        return _decode(Profile, data, "")
    except _Bad as exc:
        raise ProfileError(f"{where}: {exc}") from None


def comm_profile_from_dict(data: Any, where: str) -> CommProfile:
    """A CommProfile from JSON data (what ``python -m perfmodel.lab.profile.comm`` writes)."""
    try:
        return _decode(CommProfile, data, "")
    except _Bad as exc:
        raise ProfileError(f"{where}: {exc}") from None


def load_profile(path: str | os.PathLike) -> Profile:
    """Read a profile JSON file. Raises ProfileError (one line naming the file and the problem)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(f"{p}: no such profile file") from None
    except IsADirectoryError:
        raise ProfileError(f"{p}: is a directory, not a profile file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{p}: cannot read profile ({type(exc).__name__}: {exc})".replace("\n", " ")) from None
    if not text.strip():
        raise ProfileError(f"{p}: empty profile file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (truncated?)" if exc.pos >= len(text.rstrip()) else ""
        raise ProfileError(f"{p}: not valid JSON{hint}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return profile_from_dict(data, str(p))


def save_profile(profile: Profile, path: str | os.PathLike) -> None:
    """Write ``profile`` as JSON atomically (temporary file in the same folder, then os.replace)."""
    from ...fileio import atomic_write_text

    atomic_write_text(path, json.dumps(profile_to_dict(profile), indent=1) + "\n")
