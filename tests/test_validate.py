"""perfmodel validate: run-log medians, predictions by hand from a synthetic profile, errors, CLI."""

import json

import pytest

from perfmodel.cli import main
from perfmodel.lab.profile.profile_file import save_profile
from perfmodel.lab.validate import ValidateError, error_pct, mape, measure_run, median_ape, validate
from test_profile_schema import ALPHA_OP, BW_OP, make_profile

T0, T1 = 2e-3, 5e-5  # the synthetic profile's compute: t_c(b) = T0 + T1 b
GRAD = 4 * (640 + 10 + 100 + 10)  # bytes of the tiny model's gradient


def write_log(path, algo, ranks, batch, t_steps, model="tiny", extra=None, cfg=None, header=None):
    lines = [{"type": "header", "schema": 1, "algo": algo, "ranks": ranks,
              "config": {"algo": algo, "model": model, "batch": batch, "threads": 1, **(cfg or {})}, **(header or {})}]
    for i, t in enumerate(t_steps):
        lines.append({"type": "step", "step": i, "epoch": 0, "loss": 1.0, "samples": batch * ranks,
                      "t_compute": t * 0.8, "t_comm": t * 0.2, "t_compress": 0.0, "t_idle": 0.0, "t_step": t,
                      "bytes_sent": 0, **((extra or {}).get(i, {}))})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return str(path)


@pytest.fixture
def profile(tmp_path):
    path = tmp_path / "p.json"
    save_profile(make_profile(), path)
    return str(path)


def test_measure_run_takes_medians_after_warmup(tmp_path):
    log = write_log(tmp_path / "a.jsonl", "ssgd", 2, 32, [9.0, 9.0, 0.010, 0.012, 0.011, 0.5])
    m = measure_run(log, skip=2)
    assert m.steps == 4 and m.t_step_s == pytest.approx(0.0115)
    assert m.throughput == pytest.approx(64 / 0.0115)
    with pytest.raises(ValidateError, match="need more than skip"):
        measure_run(log, skip=4)


def test_ssgd_prediction_by_hand(tmp_path, profile):
    t_pred = (T0 + T1 * 32) + (ALPHA_OP + GRAD / BW_OP)  # the ring link reproduces the measured Allreduce
    log = write_log(tmp_path / "a.jsonl", "ssgd", 2, 32, [0.004] * 8)
    (row,) = validate([log], [profile], skip=2, cores=2)
    assert row["predicted_step_s"] == pytest.approx(t_pred, rel=1e-3)
    assert row["step_error_pct"] == pytest.approx(100 * (t_pred - 0.004) / 0.004, rel=1e-3)
    assert row["throughput_error_pct"] == pytest.approx(100 * (0.004 / t_pred - 1), rel=1e-3)
    assert mape([row]) == pytest.approx(abs(row["step_error_pct"]))


def test_ssgd_with_overlap_is_predicted_with_the_models_hidden_share(tmp_path, profile):
    def row(name, algo, ranks, cfg, **kw):
        extra = {i: {"B": 1, "W": 0} for i in range(11)} if algo == "daso" else None
        log = write_log(tmp_path / name, algo, ranks, 16 if algo == "daso" else 32, [0.004] * 11, extra=extra, cfg=cfg)
        return validate([log], [profile], skip=2, cores=ranks)[0]

    small = {"overlap": True, "bucket_mb": 400 / 2**20}
    off = row("off.jsonl", "ssgd", 2, {"overlap": False})
    # one 25 MiB bucket is ready only when backward ends: nothing to hide, the same as overlap off
    one = row("one.jsonl", "ssgd", 2, {"overlap": True, "bucket_mb": 25.0})
    assert one["predicted_step_s"] == pytest.approx(off["predicted_step_s"], rel=1e-12)
    # buckets of 400 B on the tiny model (tensors 640, 10, 100, 10 floats, taken from the last):
    # 40 + 400 B closes the first; the second (40 + 2560 B) is ready only when backward ends
    on = row("on.jsonl", "ssgd", 2, small)
    assert on["predicted_compute_s"] == pytest.approx(off["predicted_compute_s"])
    # the comm the trainer logs (t_comm) is what is left after backward: the model's exposed part
    assert on["predicted_step_s"] == pytest.approx(on["predicted_compute_s"] + on["predicted_comm_s"])
    # the last bucket is never hidden; the first one can be, so less than both buckets' cost is left
    assert ALPHA_OP + 4 * (640 + 10) / BW_OP - 1e-12 <= on["predicted_comm_s"] < 2 * ALPHA_OP + GRAD / BW_OP
    # DASO's node-local buckets likewise (2 pretend nodes x 2 ranks, B = 1, W = 0)
    d_off = row("doff.jsonl", "daso", 4, {"ranks_per_node": 2})
    d_one = row("done.jsonl", "daso", 4, {"ranks_per_node": 2, "overlap": True, "bucket_mb": 25.0})
    d_on = row("don.jsonl", "daso", 4, {"ranks_per_node": 2, **small})
    assert d_one["predicted_step_s"] == pytest.approx(d_off["predicted_step_s"], rel=1e-12)
    assert d_on["predicted_compute_s"] == pytest.approx(d_off["predicted_compute_s"])
    assert d_on["predicted_step_s"] != d_off["predicted_step_s"]  # the overlap reaches the model


def test_oversubscribed_ranks_share_the_cores(tmp_path, profile):
    # 4 ranks on 2 cores: compute stretched 2x; the 2-rank Allreduce link (alpha', beta') used by a 4-rank ring
    a, b = ALPHA_OP / 2, (1 / BW_OP) * 2 / 2
    t_comm = 2 * 3 * a + 2 * 3 / 4 * GRAD * b
    log = write_log(tmp_path / "a.jsonl", "ssgd", 4, 32, [0.01] * 8)
    (row,) = validate([log], [profile], skip=2, cores=2)
    assert row["computing_ranks"] == 4  # 4 ranks on 2 cores: a share of 2
    assert row["predicted_compute_s"] == pytest.approx(2 * (T0 + T1 * 32), rel=1e-3)
    assert row["predicted_comm_s"] == pytest.approx(t_comm, rel=1e-3)


def test_ranks_timed_at_once_give_compute_and_the_wait_for_the_slowest(tmp_path):
    # the profile's 2-rank run also timed the step on both ranks at once: the mean is the compute, not
    # stretched; its cv is the model's straggler spread, and the wait for the slower rank (the model's
    # gamma expectation, perfmodel.stragglers) moves from compute to communication, as the trainer times it
    import dataclasses

    from perfmodel.lab.profile.schema import ConcurrentCompute
    from perfmodel.stragglers import CVB, sync_slowdown

    prof = make_profile()
    cc = ConcurrentCompute(batches=(16, 32, 64), mean_s=(3e-3, 4e-3, 6e-3), max_s=(3.5e-3, 4.8e-3, 7e-3),
                           cv=(0.2, 0.25, 0.1), repeats=10)
    prof = dataclasses.replace(prof, comm=(prof.comm[0], dataclasses.replace(prof.comm[1], compute=cc)))
    path = tmp_path / "p.json"
    save_profile(prof, path)
    log = write_log(tmp_path / "a.jsonl", "ssgd", 2, 32, [0.01] * 8)
    (row,) = validate([log], [str(path)], skip=2, cores=1)  # cores=1 would stretch 2x without the timing
    wait = 4e-3 * (sync_slowdown(2, CVB(1.0, v_task=0.0, v_mach=0.25)) - 1)
    assert wait > 0
    assert row["predicted_compute_s"] == pytest.approx(4e-3, rel=1e-9)
    assert row["predicted_comm_s"] == pytest.approx(ALPHA_OP + GRAD / BW_OP + wait, rel=1e-3)
    assert row["predicted_step_s"] == pytest.approx(4e-3 + wait + ALPHA_OP + GRAD / BW_OP, rel=1e-3)
    # a 4-rank run has no 4-rank timing in this profile: the one-process compute, stretched
    log4 = write_log(tmp_path / "b.jsonl", "ssgd", 4, 32, [0.01] * 8)
    (row4,) = validate([log4], [str(path)], skip=2, cores=2)
    assert row4["predicted_compute_s"] == pytest.approx(2 * (T0 + T1 * 32), rel=1e-3)


def test_compute_is_the_step_timed_after_the_exchange_the_strategy_sends(tmp_path):
    # the profile's 2-rank run also timed the step right after an Allreduce of 2 GRAD bytes: an SSGD run
    # on 2 ranks sends GRAD per rank (its ring), as an Allreduce of GRAD does, so its compute is read
    # halfway between the step after the barrier alone (4 ms at batch 32) and after 2 GRAD (7 ms)
    import dataclasses

    from perfmodel.lab.profile.schema import ConcurrentCompute

    prof = make_profile()
    cc = ConcurrentCompute(batches=(16, 32, 64), mean_s=(3e-3, 4e-3, 6e-3), max_s=(3e-3, 4e-3, 6e-3),
                           cv=(0.0, 0.0, 0.0), repeats=10, after_bytes=(2 * GRAD,),
                           after_mean_s=((5e-3, 7e-3, 9e-3),))
    prof = dataclasses.replace(prof, comm=(prof.comm[0], dataclasses.replace(prof.comm[1], compute=cc)))
    path = tmp_path / "p.json"
    save_profile(prof, path)
    (row,) = validate([write_log(tmp_path / "a.jsonl", "ssgd", 2, 32, [0.01] * 8)], [str(path)], skip=2, cores=2)
    assert row["predicted_bytes_per_step"] == pytest.approx(GRAD)
    assert row["predicted_compute_s"] == pytest.approx(5.5e-3, rel=1e-9)
    assert row["predicted_step_s"] == pytest.approx(5.5e-3 + ALPHA_OP + GRAD / BW_OP, rel=1e-3)


@pytest.mark.parametrize("ranks", [2, 3, 4, 8, 512])
def test_after_exchange_bytes_inverts_the_ring_allreduces_bytes_per_rank(ranks):
    from perfmodel.lab.profile.predictor import after_exchange_bytes
    from trainers.comm import ring_allreduce_bytes

    assert after_exchange_bytes(ring_allreduce_bytes(1724320, ranks), ranks) == pytest.approx(1724320, rel=1e-12)
    assert after_exchange_bytes(1000.0, 1) == 0.0


def test_daso_steps_are_predicted_per_logged_phase(tmp_path, profile):
    extra = {i: {"B": 1, "W": 0} for i in range(5)} | {i: {"B": 2, "W": 1} for i in range(5, 11)}
    log = write_log(tmp_path / "d.jsonl", "daso", 4, 16, [0.01] * 11, extra=extra, cfg={"ranks_per_node": 2})
    (row,) = validate([log], [profile], skip=1, cores=4)
    blocking = validate([write_log(tmp_path / "b.jsonl", "daso", 4, 16, [0.01] * 11,
                                   extra={i: {"B": 1, "W": 0} for i in range(11)}, cfg={"ranks_per_node": 2})],
                        [profile], skip=1, cores=4)[0]
    cycling = validate([write_log(tmp_path / "c.jsonl", "daso", 4, 16, [0.01] * 11,
                                  extra={i: {"B": 2, "W": 1} for i in range(11)}, cfg={"ranks_per_node": 2})],
                       [profile], skip=1, cores=4)[0]
    # 4 blocking steps and 6 cycling steps after skipping one
    expect = (4 * blocking["predicted_step_s"] + 6 * cycling["predicted_step_s"]) / 10
    assert row["predicted_step_s"] == pytest.approx(expect)
    assert cycling["predicted_step_s"] < blocking["predicted_step_s"]


def test_errors(tmp_path, profile, capsys):
    log = write_log(tmp_path / "a.jsonl", "ssgd", 2, 32, [0.01] * 8, model="resnet20")
    with pytest.raises(ValidateError, match="no --profile of that model"):
        validate([log], [profile])
    assert main(["validate", log]) == 2
    assert "needs --profile" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "missing.jsonl"), "--profile", profile]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    (tmp_path / "torn.jsonl").write_text('{"type": "step"}\n')
    assert main(["validate", str(tmp_path / "torn.jsonl"), "--profile", profile]) == 2
    assert "not a header" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value, needle", [
    ("--cores", "0", "perfmodel: error: --cores must be >= 1 (cores the runs shared), got 0"),
    ("--cores", "-2", "perfmodel: error: --cores must be >= 1 (cores the runs shared), got -2"),
    ("--skip", "-1", "perfmodel: error: --skip must be >= 0 (warm-up steps left out of each run), got -1"),
])
def test_impossible_cores_and_skip_are_refused(tmp_path, profile, capsys, flag, value, needle):
    log = write_log(tmp_path / "a.jsonl", "ssgd", 2, 32, [0.01] * 8)
    assert main(["validate", log, "--profile", profile, flag, value]) == 2
    assert capsys.readouterr().err == needle + "\n"
    with pytest.raises(ValidateError, match=flag.lstrip("-")):  # the library refuses them too
        validate([log], [profile], **{flag.lstrip("-"): int(value)})


def test_cli_formats(tmp_path, profile, capsys):
    log = write_log(tmp_path / "a.jsonl", "ssgd", 2, 32, [0.004] * 8)
    assert main(["validate", log, "--profile", profile, "--cores", "2", "--format", "json",
                 "--plot", str(tmp_path / "v.png")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["runs"]) == 1 and out["mape_step_pct"] == pytest.approx(abs(out["runs"][0]["step_error_pct"]))
    assert (tmp_path / "v.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["validate", log, "--profile", profile, "--cores", "2"]) == 0
    assert "MAPE over 1 runs" in capsys.readouterr().out


def test_daso_step_time_counts_the_sync_steps(tmp_path):
    """Cycles of B=4 steps (1, 1, 1, 5 ms): 2 ms per step, where a per-step median would say 1 ms."""
    times = [0.001, 0.001, 0.001, 0.005] * 6
    extra = {i: {"B": 4, "W": 1} for i in range(len(times))}
    log = write_log(tmp_path / "d.jsonl", "daso", 2, 8, times, extra=extra, cfg={"ranks_per_node": 1})
    m = measure_run(log, skip=1)  # windows start one step late: (1, 1, 5, 1) has the same mean
    assert m.t_step_s == pytest.approx(0.002)
    assert m.t_comm_s == pytest.approx(0.2 * 0.002)
    assert m.phase_steps == {(4, 1): 23}
    # two phases: 4 blocking steps of 3 ms (B=1), then B=2 cycles of (1, 3) ms: (4*3 + 8*2) / 12
    times = [0.003] * 4 + [0.001, 0.003] * 4
    extra = {i: {"B": 1, "W": 0} for i in range(4)} | {i: {"B": 2, "W": 1} for i in range(4, 12)}
    m = measure_run(write_log(tmp_path / "e.jsonl", "daso", 2, 8, times, extra=extra), skip=0)
    assert m.t_step_s == pytest.approx((4 * 0.003 + 8 * 0.002) / 12)
    # a synchronous run keeps the per-step median
    ssgd = measure_run(write_log(tmp_path / "s.jsonl", "ssgd", 2, 8, times), skip=0)
    assert ssgd.t_step_s == pytest.approx(0.003)


def test_daso_sync_on_cpu_is_paid_at_the_wait_with_the_measured_nonblocking_factor(tmp_path):
    """A CPU profile whose Iallreduce+Wait takes 3x the Allreduce: DASO's non-blocking global sync
    (2 ranks = 2 nodes of one rank, B=4, W=1) is charged 3 allreduces every 4 steps, nothing hidden."""
    import dataclasses

    from perfmodel.lab.profile.to_specs import nonblocking_factor, profile_daso
    from test_profile_schema import _op

    prof = make_profile()
    mpi = prof.comm[1]
    ops = dict(mpi.ops, iallreduce=_op("iallreduce", 2, lambda n: 3 * (ALPHA_OP + n / BW_OP)))
    prof = dataclasses.replace(prof, comm=(prof.comm[0], dataclasses.replace(mpi, ops=ops)))
    path = tmp_path / "p.json"
    save_profile(prof, path)
    assert nonblocking_factor(prof) == pytest.approx(3.0, rel=1e-3)
    assert profile_daso(prof) == {"progress": "wait", "nonblocking_factor": pytest.approx(3.0, rel=1e-3)}
    extra = {i: {"B": 4, "W": 1} for i in range(12)}
    log = write_log(tmp_path / "d.jsonl", "daso", 2, 32, [0.004] * 12, extra=extra, cfg={"ranks_per_node": 1})
    (row,) = validate([log], [str(path)], skip=0, cores=2)
    assert row["predicted_comm_s"] == pytest.approx(3 * (ALPHA_OP + GRAD / BW_OP) / 4, rel=1e-3)
    assert row["predicted_step_s"] == pytest.approx(T0 + T1 * 32 + 3 * (ALPHA_OP + GRAD / BW_OP) / 4, rel=1e-3)
    # a profile without iallreduce: the factor is 1, still paid at the wait on CPU
    (plain,) = validate([log], [make_profile_path(tmp_path)], skip=0, cores=2)
    assert plain["predicted_comm_s"] == pytest.approx((ALPHA_OP + GRAD / BW_OP) / 4, rel=1e-3)


def test_daso_global_sync_is_charged_at_its_groups_measured_iallreduce(tmp_path):
    """DASO on 2 nodes x 2 ranks, B=4, W=1, waited on CPU: the profile's Iallreduce on one rank per node
    ("global_iallreduce") is what one global sync costs, once every 4 steps. Two profiles that differ
    only in that measurement differ in predicted communication by a quarter of the difference of their
    times at the fp32 gradient; the all-ranks Iallreduce's factor no longer applies."""
    import dataclasses

    from perfmodel.lab.profile.to_specs import nonblocking_factor
    from test_profile_schema import _op, _with_global_group

    paths = []
    for scale in (1.0, 2.0):
        prof = _with_global_group(make_profile())
        four = prof.comm[-1]
        g = _op("global_iallreduce", 2, lambda n, s=scale: s * (2 * 30e-6 + n / 1.2e7))
        prof = dataclasses.replace(prof, comm=prof.comm[:-1] + (dataclasses.replace(four, ops=dict(four.ops, global_iallreduce=g)),))
        assert nonblocking_factor(prof) != pytest.approx(1.0, abs=1e-3)
        paths.append(tmp_path / f"p{scale}.json")
        save_profile(prof, paths[-1])
        measured = g.time_at(GRAD)
    extra = {i: {"B": 4, "W": 1} for i in range(12)}
    log = write_log(tmp_path / "d.jsonl", "daso", 4, 32, [0.004] * 12, extra=extra, cfg={"ranks_per_node": 2})
    (one,), (two,) = (validate([log], [str(p)], skip=0, cores=4) for p in paths)
    assert two["predicted_comm_s"] - one["predicted_comm_s"] == pytest.approx(measured / 2 / 4, rel=1e-6)


def make_profile_path(tmp_path):
    path = tmp_path / "plain.json"
    save_profile(make_profile(), path)
    return str(path)


@pytest.mark.parametrize("key,exchange,ranks,expect", [
    # tiny model: ternary 0.weight, 0.bias (650 elements, 2 scalers); fc in fp32 (110 elements)
    ("tern_exchange", "levels", 4, 2 * 3 / 4 * (650 * 1 + 4 * 2 + 4 * 110)),  # int8 sums, ring allreduce
    ("tern_exchange", "ps", 4, 2 * 3 / 4 * (4 * 2 + 4 * 110) + 3 * (168 // 4 + 168 * 4 // 8)),  # 9 levels: 4 bits
    ("tern_exchange", "allgather", 3, 2 * 2 / 3 * (4 * 2 + 4 * 110) + 2 * (160 + 3)),  # ceil(n/4), 2 copies
    (None, None, 4, 2 * 3 / 4 * (4 * 2 + 4 * 110) + 3 * (160 + 3)),  # logs before the option: allgather
    # the field's name since trainers.config (logs also carry the former key; either alone is read)
    ("terngrad_exchange", "levels", 4, 2 * 3 / 4 * (650 * 1 + 4 * 2 + 4 * 110)),
    ("terngrad_exchange", "ps", 4, 2 * 3 / 4 * (4 * 2 + 4 * 110) + 3 * (168 // 4 + 168 * 4 // 8)),
])
def test_bytes_per_step_measured_and_predicted(tmp_path, profile, capsys, key, exchange, ranks, expect):
    cfg = {} if exchange is None else {key: exchange}
    log = write_log(tmp_path / "t.jsonl", "terngrad", ranks, 32, [0.004] * 6, cfg=cfg,
                    extra={i: {"bytes_sent": expect} for i in range(6)})
    (row,) = validate([log], [profile], skip=1, cores=4)
    assert row["measured_bytes_per_step"] == expect
    assert row["predicted_bytes_per_step"] == pytest.approx(expect, rel=1e-12)
    assert main(["validate", log, "--profile", profile, "--skip", "1", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)["runs"][0]
    assert out["predicted_bytes_per_step"] == pytest.approx(expect, rel=1e-12)
    assert main(["validate", log, "--profile", profile, "--skip", "1"]) == 0
    assert "B/step" in capsys.readouterr().out


@pytest.mark.parametrize("lanes,backend,expect", [
    # the run's --terngrad-lanes and backend decide the lane width, as in the trainer
    ("auto", "mpi", 2 * 3 / 4 * (650 / 2 + 4 * 2 + 4 * 110)),  # 4-bit lanes at 4 ranks
    ("auto", "gloo", 2 * 3 / 4 * (650 * 1 + 4 * 2 + 4 * 110)),  # gloo has no user ops: int8
    ("int8", "mpi", 2 * 3 / 4 * (650 * 1 + 4 * 2 + 4 * 110)),
])
def test_levels_lanes_follow_the_logged_option_and_backend(tmp_path, profile, lanes, backend, expect):
    log = write_log(tmp_path / "t.jsonl", "terngrad", 4, 32, [0.004] * 6,
                    cfg={"tern_exchange": "levels", "tern_lanes": lanes}, header={"backend": backend},
                    extra={i: {"bytes_sent": expect} for i in range(6)})
    (row,) = validate([log], [profile], skip=1, cores=4)
    assert row["predicted_bytes_per_step"] == pytest.approx(expect, rel=1e-12)


def test_component_errors_by_hand(tmp_path, profile):
    # the log measures compute 0.8 t and comm 0.2 t of t = 4 ms, no compression
    log = write_log(tmp_path / "a.jsonl", "ssgd", 2, 32, [0.004] * 8)
    (row,) = validate([log], [profile], skip=2, cores=2)
    comm = ALPHA_OP + GRAD / BW_OP
    assert row["comm_error_pct"] == pytest.approx(100 * (comm - 0.0008) / 0.0008, rel=1e-3)
    assert row["compute_error_pct"] == pytest.approx(100 * ((T0 + T1 * 32) - 0.0032) / 0.0032, rel=1e-3)
    assert row["compress_error_pct"] is None  # nothing measured: no error to report
    assert error_pct(2.0, 3.0) == 50.0 and error_pct(0.0, 1.0) is None
    assert median_ape([row, dict(row, comm_error_pct=-1.0), dict(row, comm_error_pct=None)]) == \
        pytest.approx((abs(row["comm_error_pct"]) + 1.0) / 2)


def test_terngrad_sync_points_cost_what_the_codecs_loop_measured(tmp_path):
    # the 2-rank run's codec, timed on both ranks at once, measured 1.5 ms per synchronization point
    # beyond the exchange's own time: a levels run pays it at the codes' Allreduce and at the fp32
    # classifier's Allreduce, as communication; a profile without the measurement, nothing
    import dataclasses

    from perfmodel.lab.profile.schema import CodecTimes, ConcurrentCompute
    from test_profile_schema import _stats

    rows = {}
    for wait in (None, 1.5e-3):
        codec = CodecTimes(elements=650, encode=_stats(1e-4), decode=_stats(2e-4), workers=2, sync_wait_s=wait)
        cc = ConcurrentCompute(batches=(16, 32, 64), mean_s=(3e-3, 4e-3, 6e-3), max_s=(3e-3, 4e-3, 6e-3),
                               cv=(0.0, 0.0, 0.0), repeats=10, codec=codec)
        prof = make_profile()
        prof = dataclasses.replace(prof, comm=(prof.comm[0], dataclasses.replace(prof.comm[1], compute=cc)))
        path = tmp_path / f"p{wait}.json"
        save_profile(prof, path)
        log = write_log(tmp_path / "t.jsonl", "terngrad", 2, 32, [0.01] * 8, cfg={"tern_exchange": "levels"})
        (rows[wait],) = validate([log], [str(path)], skip=2, cores=2)
    assert rows[1.5e-3]["predicted_comm_s"] - rows[None]["predicted_comm_s"] == pytest.approx(2 * 1.5e-3)
    assert rows[1.5e-3]["predicted_step_s"] - rows[None]["predicted_step_s"] == pytest.approx(2 * 1.5e-3)
    assert rows[1.5e-3]["predicted_compute_s"] == rows[None]["predicted_compute_s"]


def test_terngrad_decoding_is_timed_as_communication():
    from perfmodel.lab.profile.to_specs import profile_workload
    from perfmodel.specs import Strategy
    from perfmodel.lab.validate import decode_in_comm as _decode_in_comm

    wl = profile_workload(make_profile())
    elems = sum(wl.tensor_sizes)  # no fp32 last layer: every tensor is ternarized
    tern = Strategy("terngrad", terngrad_exchange="allgather", terngrad_decode_elems_per_s=1e6,
                    terngrad_fp32_last=False)
    assert _decode_in_comm(wl, tern, 3) == pytest.approx(3 * elems / 1e6)  # every rank's copy
    ps = Strategy("terngrad", terngrad_exchange="ps", terngrad_decode_elems_per_s=1e6, terngrad_fp32_last=False)
    assert _decode_in_comm(wl, ps, 3) == pytest.approx(2 * elems / 1e6)  # pushed shards, gathered aggregates
    # its own work measured (760 elements: shards of 256, 3 x 256 at 5e5/s): that, not the two decodes
    assert elems == 760
    measured = Strategy("terngrad", terngrad_exchange="ps", terngrad_decode_elems_per_s=1e6, terngrad_fp32_last=False,
                        terngrad_ps_aggregate_elems_per_s=5e5)
    assert _decode_in_comm(wl, measured, 3) == pytest.approx(3 * 256 / 5e5)
    assert _decode_in_comm(wl, Strategy("terngrad", terngrad_exchange="levels", terngrad_decode_elems_per_s=1e6),
                           3) == 0.0
    assert _decode_in_comm(wl, Strategy("ssgd"), 3) == 0.0


# ---------------------------------------------------------------- the parameter server (asgd)

from test_profile_schema import ALPHA_PP, BW_PP  # noqa: E402  (the synthetic one-way ping-pong)

STEP_32 = 0.1 * (T0 + T1 * 32)  # the synthetic profile's optimizer step: median over batches 16, 32, 64


def write_ps_log(path, workers, batch, lines, *, header=None):
    """A trainers/ps.py log: one gradient per line, (t_compute, t_comm, t_step) each; t_comm None = none
    reported (a worker's first gradient)."""
    head = {"type": "header", "schema": 1, "algo": "asgd", "master_rule": "asgd", "worker_rule": None,
            "simulated": False, "ranks": workers + 1, "workers": workers, "exchange": "push-pull",
            "config": {"algo": "asgd", "model": "tiny", "batch": batch, "threads": 1}, **(header or {})}
    out = [head]
    for i, (tc, tx, ts) in enumerate(lines):
        out.append({"type": "step", "step": i + 1, "epoch": 0, "loss": 1.0, "samples": batch, "gradients": 1,
                    "t_compute": tc, "t_comm": tx, "t_compress": 0.0, "t_idle": 0.0, "t_step": ts,
                    "t_server": 1e-4, "bytes_sent": GRAD, "bytes_exchanged": 2 * GRAD})
    path.write_text("\n".join(json.dumps(x) for x in out) + "\n")
    return str(path)


def slow_pingpong_profile(tmp_path, alpha=1e-4, bw=1e6):
    """The synthetic profile with a slow one-way ping-pong link (t = alpha + n / bw)."""
    import dataclasses

    from test_profile_schema import _op

    prof = make_profile()
    mpi = prof.comm[1]
    ops = dict(mpi.ops, pingpong=_op("pingpong", 2, lambda n: alpha + n / bw))
    prof = dataclasses.replace(prof, comm=(prof.comm[0], dataclasses.replace(mpi, ops=ops)))
    path = tmp_path / "slow.json"
    save_profile(prof, path)
    return str(path)


def test_ps_log_is_measured_as_the_workers_and_the_server_see_it(tmp_path):
    # 2 warm-up lines skipped; the first kept line has no exchange time (a worker's first gradient)
    lines = [(9.0, None, 9.0), (9.0, 9.0, 9.0), (0.010, None, 0.004), (0.010, 0.020, 0.006),
             (0.012, 0.022, 0.005), (0.014, 0.030, 0.010)]
    m = measure_run(write_ps_log(tmp_path / "ps.jsonl", 2, 32, lines), skip=2)
    assert (m.workers, m.ranks, m.steps) == (2, 3, 4)
    assert m.t_compute_s == pytest.approx(0.012)  # medians over the three timed lines
    assert m.t_comm_s == pytest.approx(0.022)
    assert m.t_step_s == pytest.approx(0.034)  # median of 0.030, 0.034, 0.044
    assert m.throughput == pytest.approx(4 * 32 / (0.004 + 0.006 + 0.005 + 0.010))  # the server's rate
    assert m.bytes_per_step == 2 * GRAD


def test_ps_prediction_by_hand(tmp_path, profile):
    """2 workers on 2 cores: step = t_c(32) + push + pull over the ping-pong link (not the Allreduce's);
    the optimizer step is the server's, timed by the worker as communication."""
    exchange = 2 * (ALPHA_PP + GRAD / BW_PP)
    t_step = T0 + T1 * 32 + exchange
    log = write_ps_log(tmp_path / "ps.jsonl", 2, 32, [(0.003, 0.001, 0.002)] * 6)
    (row,) = validate([log], [profile], skip=1, cores=2)
    assert row["predicted_step_s"] == pytest.approx(t_step, rel=1e-3)
    assert row["predicted_compute_s"] == pytest.approx(T0 + T1 * 32 - STEP_32, rel=1e-3)
    assert row["predicted_comm_s"] == pytest.approx(exchange + STEP_32, rel=1e-3)
    assert row["predicted_throughput"] == pytest.approx(2 * 32 / t_step, rel=1e-3)
    # the server is busy n / bw on its link and STEP_32 on its update per exchange, at 2 / t_step
    # exchanges per second
    assert row["predicted_server_utilization"] == pytest.approx(2 / t_step * (GRAD / BW_PP + STEP_32), rel=1e-3)
    assert row["measured_bytes_per_step"] == row["predicted_bytes_per_step"] == 2 * GRAD  # push + pull, fp32
    assert row["workers"] == 2 and row["ranks"] == 3
    assert row["comm_error_pct"] == pytest.approx(100 * (exchange + STEP_32 - 0.001) / 0.001, rel=1e-3)
    assert row["step_error_pct"] == pytest.approx(100 * (t_step - 0.004) / 0.004, rel=1e-3)
    assert row["throughput_error_pct"] == pytest.approx(100 * (2 * 32 / t_step / (32 / 0.002) - 1), rel=1e-3)


def test_a_saturated_server_sets_the_rate(tmp_path):
    """Ping-pong 0.1 ms + n / (1 MB/s): n / bw = 3.04 ms per exchange at the server's link, plus its
    update (the optimizer step, STEP_32 = 0.36 ms): 3.40 ms. 4 workers (4 cores) would exchange
    4 / (3.6 + 2 x 3.14) ms = 405/s; the server takes 1 / 3.40 ms = 294/s. So each worker's step is
    4 x 3.40 ms, its compute as without the cap (less the update, which the server runs) and the rest
    spent waiting in its exchange."""
    prof = slow_pingpong_profile(tmp_path)
    server = GRAD / 1e6 + STEP_32
    assert 4 / (T0 + T1 * 32 + 2 * (1e-4 + GRAD / 1e6)) > 1 / server  # the cap binds
    (row,) = validate([write_ps_log(tmp_path / "ps.jsonl", 4, 32, [(0.003, 0.009, 0.003)] * 6)], [prof],
                      skip=1, cores=4)
    assert row["predicted_step_s"] == pytest.approx(4 * server, rel=1e-3)
    assert row["predicted_throughput"] == pytest.approx(32 / server, rel=1e-3)
    assert row["predicted_compute_s"] == pytest.approx(T0 + T1 * 32 - STEP_32, rel=1e-3)
    assert row["predicted_comm_s"] == pytest.approx(4 * server - (T0 + T1 * 32 - STEP_32), rel=1e-3)
    assert row["predicted_server_utilization"] == pytest.approx(1.0)
    # the same run on 1 core: only the 4 workers compute, stretched 4x (not the server: it waits), so
    # they exchange 4 / (14.4 + 6.28) ms = 193/s, below the server's 294/s: no waiting for the server
    (shared,) = validate([write_ps_log(tmp_path / "ps2.jsonl", 4, 32, [(0.003, 0.009, 0.003)] * 6)], [prof],
                         skip=1, cores=1)
    assert shared["computing_ranks"] == 4  # the 4 workers on 1 core: a share of 4
    assert shared["predicted_compute_s"] == pytest.approx(4 * (T0 + T1 * 32) - STEP_32, rel=1e-3)
    assert shared["predicted_step_s"] == pytest.approx(4 * (T0 + T1 * 32) + 2 * (1e-4 + GRAD / 1e6), rel=1e-3)
    assert shared["predicted_server_utilization"] == pytest.approx(4 / shared["predicted_step_s"] * server, rel=1e-3)
    assert shared["predicted_server_utilization"] < 1


@pytest.mark.parametrize("header, needle", [
    ({"simulated": True}, "a simulated parameter-server run"),
    ({"exchange": "central-round-trip", "algo": "gem"}, "exchanges 'central-round-trip'"),
    ({"exchange": None}, "before the parameter server logged its workers' exchange times"),
    ({"workers": 1, "ranks": 2}, "1 worker(s)"),
])
def test_ps_logs_the_model_does_not_describe_are_refused(tmp_path, profile, capsys, header, needle):
    log = write_ps_log(tmp_path / "ps.jsonl", 2, 32, [(0.003, 0.001, 0.002)] * 6, header=header)
    with pytest.raises(ValidateError, match="^run log .*" + needle.replace("(", r"\(").replace(")", r"\)")):
        validate([log], [profile], skip=1, cores=2)
    assert main(["validate", log, "--profile", profile, "--skip", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def _wl():
    from perfmodel.specs import ComputeTime, Workload

    # 3 tensors: 1000 and 600 ternarized, the last (the classifier, one tensor here) kept fp32 by default
    return Workload(name="w", tensor_sizes=(1000, 600, 10), classifier_tensors=1,
                    compute={"cpu": ComputeTime("linear", t0_s=0.0, t1_s=1e-3)})


def _tern(exchange, lanes="int8"):
    from perfmodel.specs import Strategy

    return Strategy("terngrad", terngrad_exchange=exchange, terngrad_lanes=lanes)


def test_exchange_message_names_the_profiled_operation_and_the_message_size():
    from perfmodel.lab.profile.predictor import exchange_message
    from perfmodel.specs import Strategy

    wl = _wl()
    grad = 4.0 * 1610
    assert exchange_message(Strategy("ssgd", bucket_mb=25.0), 2, wl) == ("iallreduce", grad)
    assert exchange_message(Strategy("ssgd", bucket_mb=1e-3), 2, wl) == ("iallreduce", 1e-3 * 2**20)  # one bucket
    # levels at 4 MPI ranks with packed lanes: 4 bits per ternary element; int8 lanes: 1 byte
    assert exchange_message(_tern("levels", "packed"), 4, wl) == ("iallreduce", 1600 * 4 / 8)
    assert exchange_message(_tern("levels"), 4, wl) == ("iallreduce", 1600.0)
    # ps and allgather move 2-bit packed codes: ceil(n_k / 4) bytes per tensor
    assert exchange_message(_tern("allgather"), 4, wl) == ("iallreduce", 250 + 150)
    assert exchange_message(Strategy("daso"), 4, wl) == ("allreduce", grad)
    assert exchange_message(Strategy("asgd"), 3, wl) == ("pingpong", grad)


def test_exchange_blocks_are_the_allgather_and_alltoall_blocks():
    from perfmodel.lab.profile.predictor import exchange_blocks
    from perfmodel.specs import Strategy

    wl = _wl()
    # allgather: each rank's 2-bit codes, ceil(1000/4) + ceil(600/4) bytes
    assert exchange_blocks(_tern("allgather"), 4, wl) == {"allgather": 400.0}
    # ps at 4 ranks: shards of ceil(1600/4) = 400 elements (a multiple of 8); push 2 bits, pull
    # ceil(log2(9)) = 4 bits per element of one shard
    assert exchange_blocks(_tern("ps"), 4, wl) == {"alltoall": 100.0, "allgather": 200.0}
    assert exchange_blocks(_tern("levels"), 4, wl) == {}
    assert exchange_blocks(Strategy("ssgd"), 4, wl) == {} and exchange_blocks(_tern("ps"), 1, wl) == {}


def test_read_sizes_are_where_the_predictor_reads_each_profiled_operation():
    from perfmodel.lab.profile.predictor import read_sizes
    from perfmodel.lab.profile.schema import ModelInfo
    from perfmodel.specs import Strategy

    wl = _wl()
    # the profiled model gives the same sizes: its tensor sizes are all they need
    info = ModelInfo(name="w", origin="workload", input_shape=(1, 8, 8), num_classes=10,
                     tensor_names=("a.weight", "b.weight", "c.weight"), tensor_sizes=(1000, 600, 10))
    assert info.classifier_tensors == 1
    grad = 4.0 * 1610
    for model in (wl, info):
        assert read_sizes(Strategy("ssgd", bucket_mb=25.0), 2, 1, model) == {"iallreduce": grad}
        # levels, packed lanes at 4 ranks: 1600 elements x 4 bits
        assert read_sizes(_tern("levels", "packed"), 4, 1, model) == {"iallreduce": 800.0}
        # ps: the fp32 part's link at the 2-bit codes' 400 B, push 100 B per peer, pull 200 B
        assert read_sizes(_tern("ps"), 4, 1, model) == {"iallreduce": 400.0, "alltoall": 100.0, "allgather": 200.0}
        # DASO: the blocking allreduce and its non-blocking factor, both at the fp32 gradient
        assert read_sizes(Strategy("daso"), 4, 1, model) == {"allreduce": grad, "iallreduce": grad}
        # with 2 ranks per node, also its global sync: the Iallreduce on one rank of each node
        assert read_sizes(Strategy("daso"), 4, 2, model) == \
            {"allreduce": grad, "iallreduce": grad, "global_iallreduce": grad}
        assert read_sizes(Strategy("daso"), 4, 4, model) == {"allreduce": grad, "iallreduce": grad}
        assert read_sizes(Strategy("asgd"), 2, 1, model) == {"ps": grad}
        assert read_sizes(Strategy("ssgd"), 1, 1, model) == {}


def test_open_mpis_own_choice_is_predicted_on_the_forced_rings_link(tmp_path):
    # forced ring at 4 ranks: t = 6 a + 1.5 n / B; Open MPI's own choice measured as 2 a + ... by hand
    import dataclasses

    import numpy as np

    from perfmodel.lab.profile.schema import CommProfile
    from perfmodel.lab.validate import validate_allreduce_choice
    from test_profile_schema import SIZES, _op

    a, bw = 10e-6, 1e8
    base = make_profile()

    def prof(name, fn):
        run = CommProfile(ranks=4, backend="mpi", library="Open MPI v5", hosts=("a", "b", "c", "d"), wall_s=1.0,
                          ops={"allreduce": _op("allreduce", 4, fn)})
        path = tmp_path / name
        save_profile(dataclasses.replace(base, comm=(base.comm[0], run)), path)
        return str(path)

    forced = prof("ring.json", lambda n: 6 * a + 1.5 * n / bw)
    chosen = prof("own.json", lambda n: 2 * a + 2 * n / bw)  # what "Open MPI" took here
    rows = {r["bytes"]: r for r in validate_allreduce_choice(forced, chosen, 4)}
    assert sorted(rows) == SIZES
    # the link's latency: the forced ring's median time up to 1 KiB over its 6 steps (8 sizes, 8..1024:
    # the median is the mean of the times at 64 and 128 B)
    alpha = (6 * a + 1.5 * 96 / bw) / 6
    # 4 KiB: recursive doubling at 4 ranks (n < 8192): 2 steps of alpha + n beta_link, where beta_link
    # makes the ring give the forced time: 6 alpha + 1.5 n beta_link = 6 a + 1.5 n / bw
    n = 4096
    beta = (6 * a + 1.5 * n / bw - 6 * alpha) / (1.5 * n)
    r = rows[n]
    assert r["algorithm"] == "recursive-doubling"
    assert r["predicted_s"] == pytest.approx(2 * (alpha + n * beta), rel=5e-3)
    assert r["ring_s"] == pytest.approx(6 * a + 1.5 * n / bw, rel=5e-3)
    assert r["measured_s"] == pytest.approx(2 * a + 2 * n / bw, rel=5e-3)
    assert r["error_pct"] == pytest.approx(100 * (r["predicted_s"] / r["measured_s"] - 1))
    # 1 MiB: Rabenseifner (n >= 8192), the ring's bytes in 2 log2(4) = 4 steps: the ring less 2 latencies
    n = 2**20
    assert rows[n]["algorithm"] == "rabenseifner"
    assert rows[n]["predicted_s"] == pytest.approx(6 * a + 1.5 * n / bw - 2 * alpha, rel=5e-3)
    # 64 B: the ring's time is below its latency estimate, so no bandwidth term is left: 2 latencies
    assert rows[64]["predicted_s"] == pytest.approx(2 * alpha, rel=5e-3)
    assert np.isfinite([r["error_pct"] for r in rows.values()]).all()
    with pytest.raises(ValidateError, match="at 3 ranks"):
        validate_allreduce_choice(forced, chosen, 3)
