"""Reading the presets' TOML files, and their one error class.

``read_toml`` parses a file once (cached by resolved path); a missing or malformed file, like an unknown
preset or a bad entry (perfmodel.presets, perfmodel.fabrics), raises PresetError: one line, exit 2.
``check_keys`` refuses a table's unknown (misspelt) key; ``match_name`` finds the preset a name means
despite stray case and spaces, and ``closest`` names the nearest one for an unknown name.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from .specs import SpecError


class PresetError(SpecError):
    """A preset is unknown, or a preset file is missing or malformed."""


@lru_cache(maxsize=64)
def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise PresetError(f"TOML file {path} is missing") from None
    except tomllib.TOMLDecodeError as e:
        raise PresetError(f"TOML file {path} is malformed: {e}") from None
    except UnicodeDecodeError:
        raise PresetError(f"TOML file {path} is not UTF-8 text") from None
    except IsADirectoryError:
        raise PresetError(f"TOML file {path} is a folder") from None
    except OSError as e:
        raise PresetError(f"TOML file {path} cannot be read: {e.strerror or e}") from None


def read_toml(path: Path) -> dict:
    """A TOML file as a dict (cached); a missing or malformed file raises PresetError naming it."""
    return _read_toml(Path(path).resolve())


def check_keys(d: dict, keys: tuple[str, ...], where: str) -> None:
    """PresetError naming the first key of table ``d`` not in ``keys``, its closest match and the keys."""
    for k in d:
        if k not in keys:
            raise PresetError(f"{where}: unknown key {k!r}{closest(str(k), keys)}; keys: {', '.join(keys)}")


def match_name(name: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` that ``name`` means: itself, else the one equal to it stripped and in lower
    case (preset names are lower case); None when none is."""
    names = list(names)
    if name in names:
        return name
    key = name.strip().lower()
    return next((n for n in names if n.lower() == key), None)


def closest(name: str, names: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the name of ``names`` closest to ``name``; "" when none is close."""
    close = difflib.get_close_matches(name.strip().lower(), [str(n) for n in names], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
