"""One-line errors for perfmodel's commands: bad input is ``perfmodel: error: ...`` and exit status 2.

``CLIError`` is a malformed command-line value; ``OneLineParser`` turns argparse's own complaints into it;
``run_guarded`` runs a command and prints any ValueError or OSError as one line; ``glue_dash_values`` lets
a negative-looking value (``--deadline -1h``) reach its option's own check.
"""

from __future__ import annotations

import argparse
import sys


class CLIError(ValueError):
    """A command-line value is malformed."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage too by default)
        raise CLIError(message)


class OneLineExitParser(argparse.ArgumentParser):
    """argparse whose errors are one line ``PROG: error: ...`` on stderr and exit status 2, without the usage
    dump, for commands that parse outside ``run_guarded`` (the reproduce scripts)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def value_options(parser: argparse.ArgumentParser, commands: tuple[str, ...]) -> frozenset[str]:
    """The options of the subcommands ``commands`` of ``parser`` that take exactly one value."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return frozenset(flag for sub in subs for name in commands if name in sub.choices
                     for a in sub.choices[name]._actions if a.option_strings and a.nargs is None
                     for flag in a.option_strings)


_DASH_NUMBER = frozenset(f"-{d}" for d in "0123456789.")  # how a negative-looking value begins: -1h, -.5, -3Gb/s


def glue_dash_values(argv: list[str], options: frozenset[str] | tuple[str, ...]) -> list[str]:
    """``--deadline -1h`` as ``--deadline=-1h`` for each of ``options`` whose value starts with - and a digit or a
    dot (-1h, -3Gb/s, -1e3), so the value reaches the option's check and its one-line error instead of argparse
    taking it for an option ("expected one argument"); nothing after a bare ``--`` changes."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--":
            return out + argv[i:]
        if argv[i] in options and i + 1 < len(argv) and argv[i + 1][:2] in _DASH_NUMBER:
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


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
