"""One-line errors for perfmodel's commands: bad input is ``perfmodel: error: ...`` and exit status 2.

``CLIError`` is a malformed command-line value; ``OneLineParser`` turns argparse's own complaints into it;
``run_guarded`` runs a command and prints any ValueError or OSError as one line.
"""

from __future__ import annotations

import argparse
import sys


class CLIError(ValueError):
    """A command-line value is malformed."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage too by default)
        raise CLIError(message)


def run_guarded(call) -> int:
    """Run a command callable; bad input (ValueError: SpecError, PresetError, CLIError, ProfileError...;
    OSError: missing files) is one line `perfmodel: error: ...` and exit status 2, never a traceback."""
    try:
        return int(call() or 0)
    except BrokenPipeError:  # e.g. `perfmodel predict | head`: the reader left, nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, OSError) as e:
        print(f"perfmodel: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perfmodel: interrupted", file=sys.stderr)
        return 130
