"""Reading the presets' TOML files, and their one error class.

``read_toml`` parses a file once (cached by resolved path); a missing or malformed file, like an unknown
preset or a bad entry (perfmodel.presets, perfmodel.fabrics), raises PresetError: one line, exit 2.
"""

from __future__ import annotations

import tomllib
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


def read_toml(path: Path) -> dict:
    """A TOML file as a dict (cached); a missing or malformed file raises PresetError naming it."""
    return _read_toml(Path(path).resolve())
