"""The files people hand `perfmodel`, broken one field at a time: a cluster file (a preset-style node and an
inline GPU table) and a profile JSON. Every field in turn is set to a value people get wrong (0, -1, nan, inf,
1e300, text, true, an empty list or table) or removed; `perfmodel predict`, `plan` and `show-profile` either run,
printing strict JSON where JSON was asked for, or exit 2 with one `error:` line. Never a traceback.

A run log for `perfmodel validate` likewise: each value validate reads from the header (the config keys of
perfmodel.lab.run_header, the rank and worker counts) and each field of a step line, in a DASO log and a
parameter-server log (whose readers differ most).

The option sweep (tests/test_input_sweep.py) does the same for the command-line options.
"""

import contextlib
import copy
import io
import json
import random
from pathlib import Path

import pytest

from perfmodel.cli import main as perfmodel_main

from perfmodel.lab.run_header import COUNTS, FLAGS, NUMBERS, TEXTS

pytestmark = pytest.mark.slow  # about 2,000 invocations, in-process

CLUSTERS = {
    "inline-gpu": {"gpus_per_node": 8, "intra": "xgmi-mi300x", "network": "8xib-ndr", "price_per_gpu_hour": 2.0,
                   "gpu": {"name": "mi325x", "peak_flops": 163.4e12, "tensor_flops": 1307.4e12,
                           "memory_Bps": 6.0e12, "memory_bytes": 256e9, "host": "pcie5",
                           "compute_capability": "9.0"}},  # an NVIDIA GPU's key: here to sweep its values
    "links": {"gpu": "v100", "gpus_per_node": 8, "intra": "nvlink2",
              "host": {"latency_s": 1e-5, "bandwidth_Bps": 1.2e10},
              "network": {"nics": 4, "latency_s": 1e-6, "bandwidth_Bps": 4.8e10}},
}
BAD = [0, -1, float("nan"), float("inf"), 1e300, 1e-300, "x", True, [], {}, 2**70, "__del__"]
COMMANDS = [["predict", "--workload", "resnet50", "--estimate", "mixed", "--gpus", "1,8,64", "--format", "json"],
            ["plan", "--workload", "resnet50", "--estimate", "mixed", "--samples", "1e7", "--gpus-max", "64",
             "--format", "json"]]
ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "results" / "coquelin2021" / "profile_lenet_timing_small.json"
RUNS = ROOT / "results" / "validation" / "runs" / "small"
RUN_PROFILE = ROOT / "results" / "validation" / "profile_lenet_small.json"


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if v != v else "inf" if v == float("inf") else repr(v)
    if isinstance(v, (int, str)):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{}"


def _toml(name: str, table: dict) -> str:
    lines, subs = [f"[{name}]"], []
    for k, v in table.items():
        if isinstance(v, dict) and v:
            subs.append((k, v))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    for k, v in subs:
        lines += [f"[{name}.{k}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = perfmodel_main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def _broken(doc, path: tuple, bad):
    d = copy.deepcopy(doc)
    t = d
    for k in path[:-1]:
        t = t[k]
    if bad == "__del__":
        if isinstance(t, list):
            return None
        del t[path[-1]]
    else:
        t[path[-1]] = bad
    return d


def _strict_json(text: str) -> None:
    json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"not strict JSON: {c}")))


def _check(argv: list[str], json_out: bool, what: str) -> None:
    code, out, err = _run(argv)
    assert code in (0, 2), f"{what}: exit {code}\n{err[-2000:]}"
    if code == 2:
        errors = [line for line in err.splitlines() if line.startswith("perfmodel: error")]
        assert len(errors) == 1 and "Traceback" not in err, f"{what}: {err[-2000:]}"
    elif json_out:
        _strict_json(out)


def _fields(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _fields(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:2]):
            yield from _fields(v, path + (i,))
    if path:
        yield path


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_a_cluster_file_broken_one_field_at_a_time(name, tmp_path):
    base = CLUSTERS[name]
    for path in _fields(base):
        for bad in BAD:
            f = tmp_path / "c.toml"
            f.write_text(_toml(name, _broken(base, path, bad)))
            for cmd in COMMANDS:
                _check(cmd + ["--cluster", f"{f}:{name}"], True, f"{cmd[0]} with {name}.{'.'.join(path)} = {bad!r}")


def test_a_profile_broken_one_field_at_a_time(tmp_path):
    with open(PROFILE) as fh:
        base = json.load(fh)
    paths = sorted(_fields(base), key=str)
    for path in random.Random(0).sample(paths, min(40, len(paths))):
        for bad in BAD[:3] + [1e300, "x", True, None, [], {}, "__del__"]:
            doc = _broken(base, path, bad)
            if doc is None:
                continue
            f = tmp_path / "p.json"
            f.write_text(json.dumps(doc))
            what = f"profile {'.'.join(map(str, path))} = {bad!r}"
            _check(["predict", "--profile", str(f), "--format", "json", "--gpus", "1,2,4"], True, what)
            _check(["show-profile", str(f)], False, what)


@pytest.mark.parametrize("log", ["lenet_daso_4.jsonl", "lenet_asgd_4.jsonl"])
def test_a_run_log_broken_one_field_at_a_time(log, tmp_path):
    lines = [json.loads(x) for x in (RUNS / log).read_text().splitlines()]
    steps = [i for i, r in enumerate(lines) if r.get("type") == "step"]
    fields = [(0, ("config", k)) for k in (*COUNTS, *NUMBERS, *FLAGS, *TEXTS) if k in lines[0]["config"]]
    fields += [(0, (k,)) for k in ("algo", "ranks", "workers", "exchange", "backend", "config", "type")
               if k in lines[0]]
    if "asgd" in log:  # the parameter server's step lines are read field by field
        fields += [(steps[-1], (k,)) for k in lines[steps[-1]]]
    for i, path in fields:
        for bad in [0, -1, float("nan"), 1e300, "x", None, [], "__del__"]:
            doc = copy.deepcopy(lines)
            doc[i] = _broken(doc[i], path, bad)
            f = tmp_path / "run.jsonl"
            f.write_text("".join(json.dumps(r) + "\n" for r in doc))
            _check(["validate", "--profile", str(RUN_PROFILE), "--format", "json", str(f)], True,
                   f"{log} line {i + 1} {'.'.join(path)} = {bad!r}")
