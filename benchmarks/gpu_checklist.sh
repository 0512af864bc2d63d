#!/usr/bin/env bash
# The GPU path's checklist (docs/gpu.md): run it from the repository root on a GPU node, under 10 minutes.
#
#   bash benchmarks/gpu_checklist.sh [OUT_DIR]      (default OUT_DIR: a new temporary folder)
#
# Without a GPU it prints one line, "gpu_checklist: no GPU here (...)", and exits 0. With one it prints
# one "CHECK <name>: ok|FAIL ..." line per check (and the figures it measured), keeps every check's
# output under OUT_DIR, and exits 1 when a check failed:
#   versions     GPU, driver, torch / CUDA / cuDNN / NCCL, Open MPI, CUDA-aware MPI (ompi_info and ours)
#   tests        the CUDA tests (tests/test_gpu_path.py, the CUDA cases of test_collectives_backends.py and
#                test_run_backends_mpi.py): they run instead of skipping
#   checkpoint   2 ranks train ResNet-20 on cuda for 12 steps with a checkpoint at step 6; every tensor in
#                the checkpoint is a host tensor; --resume continues from it
#   timing       SSGD with --overlap on and off: per step 0 <= t_comm_exposed and t_comm_full > 0, and with
#                overlap off exposed ~ full (hidden fraction >= -5%; a negative one is the old device-wide
#                sync counting communication as compute)
#   ddp          benchmarks/ddp_vs_ours.py --device cuda: our SSGD step / DDP's (target <= 1.05); on a
#                1-GPU node "ddp1" compares them on one rank (the trainers' per-step work, not the exchange)
#   profile      perfmodel profile --device cuda on 1 rank, and its step time at batch 64 and 256 against
#                the trainer's measured t_step on 1 rank, three alternations (target: the medians within
#                10% at each batch)
#   parity       benchmarks/gpu_step_parity.py: the profile's step and the trainer's in one process,
#                alternating (their ratio is the code paths' alone)
#   layout       (2 GPUs or more) perfmodel profile records `nvidia-smi topo -m`; show-profile prices its
#                ring and sets it against NCCL's measured bus bandwidth (a figure, no target)
# Ranks: 2 (NCCL when the node has 2 GPUs or more; otherwise gloo on one shared GPU, DSGD_SHARE_GPUS=1).
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}

gpus=$("$PY" -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)' 2>/dev/null)
if [ -z "$gpus" ]; then
    echo "gpu_checklist: no GPU here ($PY cannot import torch; activate the project's environment)"
    exit 0
fi
if [ "$gpus" = 0 ]; then
    echo "gpu_checklist: no GPU here (torch.cuda.is_available() is False); nothing to check"
    exit 0
fi

OUT=${1:-$(mktemp -d -t gpu_checklist.XXXXXX)}
mkdir -p "$OUT"
MPI=(mpiexec --oversubscribe --allow-run-as-root -n 2)
if [ "$gpus" -ge 2 ]; then BACKEND=nccl; else BACKEND=gloo; export DSGD_SHARE_GPUS=1; fi
failed=0
check() {  # check NAME SECONDS CMD...: run CMD with a time limit, output to OUT/NAME.log, one line
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    if timeout "$limit" "$@" >"$OUT/$name.log" 2>&1; then
        echo "CHECK $name: ok ($((SECONDS - t0)) s)"
    else
        echo "CHECK $name: FAIL (exit $?, $((SECONDS - t0)) s; $OUT/$name.log): $(tail -n 1 "$OUT/$name.log")"
        failed=1
    fi
}
TRAIN=(-m trainers.run run --algo ssgd --model resnet20 --dataset synthetic --synthetic-n 4096 --batch 64
       --device cuda --backend "$BACKEND" --no-progress --eval-batch 512)

echo "gpu_checklist: $gpus GPU(s), backend $BACKEND, output in $OUT"
check versions 60 "$PY" - <<'EOF'
import subprocess, torch
from trainers.collectives.mpi import cuda_aware
print("gpus:", [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "nccl", torch.cuda.nccl.version())
for cmd in (["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], ["mpiexec", "--version"]):
    try:
        print(" ".join(cmd[:1]), subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0])
    except (OSError, IndexError, subprocess.SubprocessError) as exc:
        print(cmd[0], "unavailable:", exc)
try:
    out = subprocess.run(["ompi_info", "--parsable", "--all"], capture_output=True, text=True, timeout=30).stdout
    print("ompi_info:", [l for l in out.splitlines() if "mpi_built_with_cuda_support:value" in l])
except OSError as exc:
    print("ompi_info unavailable:", exc)
print("CUDA-aware MPI (trainers.collectives.mpi.cuda_aware):", cuda_aware())
EOF
sed -n '1,20p' "$OUT/versions.log"

check tests 240 "$PY" -m pytest -q -x tests/test_gpu_path.py tests/test_collectives_backends.py tests/test_run_backends_mpi.py \
    -k "gpu_path or cuda or gpu"

check checkpoint 150 bash -c "
  ${MPI[*]} $PY ${TRAIN[*]} --steps 12 --checkpoint-every 6 --checkpoint $OUT/ck.pt --log $OUT/ck.jsonl --fail-at-step 8 ;
  $PY -c \"
import torch, sys
ck = torch.load('$OUT/ck.pt', weights_only=False)  # no map_location: a GPU tensor would come back on a GPU
def walk(o):
    if isinstance(o, torch.Tensor): yield o
    elif isinstance(o, dict): yield from (t for v in o.values() for t in walk(v))
    elif isinstance(o, (list, tuple)): yield from (t for v in o for t in walk(v))
devices = {t.device.type for t in walk(ck)}
print('checkpoint step', ck['step'], 'tensor devices', sorted(devices), 'cuda rng saved', 'cuda' in ck['ranks'][1]['rng'])
sys.exit(0 if ck['step'] == 6 and devices == {'cpu'} and 'cuda' in ck['ranks'][1]['rng'] else 1)
\" && ${MPI[*]} $PY ${TRAIN[*]} --steps 12 --checkpoint $OUT/ck.pt --log $OUT/ck.jsonl --resume"

check timing 150 bash -c "
  for o in on off; do ${MPI[*]} $PY ${TRAIN[*]} --steps 25 --bucket-mb 0.25 --overlap \$o --log $OUT/overlap-\$o.jsonl || exit 1; done
  $PY - <<'EOF'
import json, statistics, sys
res = {}
for o in ('on', 'off'):
    rows = [json.loads(l) for l in open('$OUT/overlap-' + o + '.jsonl')]
    steps = [r for r in rows if r.get('type') == 'step'][5:]
    ex = statistics.median(s['t_comm_exposed'] for s in steps); full = statistics.median(s['t_comm_full'] for s in steps)
    res[o] = (ex, full, statistics.median(s['t_step'] for s in steps))
    print(f'overlap {o}: t_step {res[o][2]*1e3:.2f} ms, exposed {ex*1e3:.3f} ms, full {full*1e3:.3f} ms, '
          f'hidden {1 - ex / full:.3f}')
    if min(s['t_comm_exposed'] for s in steps) < 0 or full <= 0:
        sys.exit(1)
sys.exit(0 if 1 - res['off'][0] / res['off'][1] >= -0.05 else 1)
EOF"
grep '^overlap' "$OUT/timing.log"

if [ "$gpus" -ge 2 ]; then
    check ddp 180 "$PY" benchmarks/ddp_vs_ours.py --device cuda --ranks 2 --model resnet20 --batch 64 --steps 30 \
        --repeats 2 --allreduce-iters 50 --backend "$BACKEND"
    tail -n 12 "$OUT/ddp.log"
    # the node's nvidia-smi topo -m in its profile, and that layout's ring set against NCCL's bus bandwidth
    check layout 300 bash -c "
      $PY -m perfmodel profile --workload lenet --device cuda --batch 64 --ranks 1,2 --nccl on --repeats 5 \\
          --comm-repeats 5 --out $OUT/layout.json --quiet &&
      $PY -m perfmodel show-profile $OUT/layout.json | grep -A1 '^GPU layout'"
    grep -A1 '^GPU layout' "$OUT/layout.log"
else  # two ranks on one GPU compare nothing (NCCL refuses them); one rank compares the trainers' own
    # per-step work (batch, timers, divergence check) with DDP's, NCCL against NCCL: ours skips the
    # exchange of one rank, DDP runs it, so a ratio <= 1.05 here does not stand for the 2-GPU check
    echo "CHECK ddp: the 2-rank comparison needs 2 GPUs, one per rank; running it on 1 rank"
    check ddp1 180 "$PY" benchmarks/ddp_vs_ours.py --device cuda --ranks 1 --model resnet20 --batch 64 --steps 30 \
        --repeats 3 --allreduce-iters 50 --backend nccl
    tail -n 12 "$OUT/ddp1.log"
fi

# three alternations of the profile and the trainer: between processes a launch-bound step varies about
# 10% (H200, 2026-11-26: the profile's step 12.5-13.8 ms at batch 256 in three processes), while in one
# process the two code paths agree within 2% (benchmarks/gpu_step_parity.py, the parity check below)
check profile 420 bash -c "
  for r in 1 2 3; do
    $PY -m perfmodel profile --workload resnet20 --device cuda --batch 64,256 --ranks 1 --repeats 30 \
        --out $OUT/profile_r\$r.json --quiet || exit 1
    for b in 64 256; do
      $PY -m trainers.run run --algo ssgd --model resnet20 --dataset synthetic --synthetic-n 8192 --batch \$b \
          --steps 100 --device cuda --no-progress --eval-batch 512 --log $OUT/one_\${b}_r\$r.jsonl || exit 1
    done
  done &&
  $PY - <<'EOF'
import json, statistics, sys
ok = True
for b in (64, 256):
    preds, meas, parts = [], [], []
    for r in (1, 2, 3):
        prof = json.load(open(f'$OUT/profile_r{r}.json'))
        preds.append(next(row['total']['median_s'] for row in prof['compute']['rows'] if row['batch'] == b))
        steps = [json.loads(l) for l in open(f'$OUT/one_{b}_r{r}.jsonl')]
        steps = [s for s in steps if s.get('type') == 'step'][10:]
        meas.append(statistics.median(s['t_step'] for s in steps))
        parts.append(statistics.median(s['t_idle'] for s in steps))
        print(f'round {r}: profile step {preds[-1]*1e3:.3f} ms, trainer t_step {meas[-1]*1e3:.3f} ms '
              f'(t_idle {parts[-1]*1e3:.3f}), batch {b}, ratio {preds[-1]/meas[-1]:.3f}')
    pred, mea = statistics.median(preds), statistics.median(meas)
    print(f'profile step {pred*1e3:.3f} ms, trainer t_step {mea*1e3:.3f} ms (medians of 3 rounds), batch {b}, '
          f'ratio {pred/mea:.3f}')
    ok = ok and abs(pred / mea - 1) <= 0.10
sys.exit(0 if ok else 1)
EOF"
grep 'profile step' "$OUT/profile.log"

check parity 120 "$PY" benchmarks/gpu_step_parity.py --device cuda --model resnet20 --batch 64,256 --steps 40 --rounds 3
grep '^batch' "$OUT/parity.log"

echo "gpu_checklist: $([ $failed = 0 ] && echo 'all checks passed' || echo 'some checks FAILED'); logs in $OUT"
exit $failed
