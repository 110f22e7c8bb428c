#!/usr/bin/env bash
# Table 1 + Table 2 at the `paper` preset (App. C sizes: PatchTST d_model 128, L = 1024 on the native
# rate pooled 24/12, stride 5, batch 8192, 50 epochs, patience 15; baselines at App. C sizes) on a
# ds003029 copy, on every GPU of this machine. Resumable: rerun the same command to continue.
#
#   training/paper_tables_gpu.sh DATA [OUT] [SEEDS]
#     DATA   a BIDS copy of OpenNeuro ds003029 (or any labelled BIDS/cohort root with centres)
#     OUT    results folder (default experiments/paper-gpu)
#     SEEDS  seeds to run (default "0 1 2 3 4")
#   SMOKE=1 training/paper_tables_gpu.sh DATA OUT "0"   one seed of the `smoke` preset: checks the set-up in minutes
#   GPU_KERNELS=fused training/paper_tables_gpu.sh DATA   the SSS rows' PatchTST through the project's fused Triton
#          kernels (sss-viewer experiment --gpu-kernels: fused, fused-ffn, fused-attention; default torch's layers until a
#          GPU has measured them faster, docs/results.md §3). Recorded in each run; a resume with another value keeps
#          the finished runs. The smoke preset's d_model of 8 is too small for fused-ffn (refused before any run)
#
# How the GPUs are used: the grid is 5 seeds x 2 split modes x 9 settings x (SSS + 11 baselines) = 1080
# independent runs, so each GPU runs whole runs — one seed per process, `CUDA_VISIBLE_DEVICES`
# pinning it to its GPU, all writing their run records into the same folders (one file per run,
# written atomically; nothing else is shared). Splitting one run over GPUs (torchrun, README
# "Scaling out") pays only for a run too large for one GPU's memory or time; for this grid it would add
# an all-reduce to every step of runs that already fit. PROCS_PER_GPU=N runs N seeds on each GPU at once (default 1). When every seed has finished, one last call
# per protocol (all runs found finished, nothing trained) writes the complete results.csv and tables.md.
#
# Expected time, re-measured 2026-11-28 on one H200 (benchmarks/gpu_training.py, docs/results.md §3): with the CUDA
# defaults (bf16 autocast, windows gathered on the GPU, torch.compile) the paper preset trains 632,336 windows/s
# (4.1x the fp32 host-gather path's 152,637 in the same run): ≈ 10.4 min for 50 epochs of 7.9e6 windows, the SSS rows
# of Tables 1 + 2 ≈ 8.7 h on one H200 (goal ≤ 5 h not yet met), ≈ 2.2 h on 4. Before (for the record):
# measured on one H200 (docs/results.md §3): the paper preset trains 118,566 windows/s
# (training/paper_smoke_gpu.sh: one full SSS training on the 24-patient synthetic cohort, 159 s). ds003029's
# pooled setting has ≈ 7.9e6 training windows an epoch after 1:1 balancing → ≤ 56 min for 50 epochs; the SSS rows
# of Tables 1 + 2 (≈ 5 pooled settings per seed and split mode) ≤ 45 h on one H200, ≈ 11 h on 4; the baselines
# come on top (never yet measured on a GPU: benchmarks/gpu_grid_baselines.py times each and adds them to the SSS
# rows' hours for the full grid). Checked on the CPU with SMOKE=1 on a 12-patient synthetic cohort,
# seeds "0 1": 1,232 s, both protocols' complete tables written.
set -euo pipefail
DATA=${1:?usage: training/paper_tables_gpu.sh DATA [OUT] [SEEDS]}
OUT=${2:-experiments/paper-gpu}
SEEDS=${3:-0 1 2 3 4}
SSS=${SSS_VIEWER_BIN:-.venv/bin/sss-viewer}
PRESET=paper
[ "${SMOKE:-0}" = 1 ] && PRESET=smoke
NGPU=$(${PYTHON:-.venv/bin/python} -c "import torch; print(torch.cuda.device_count())")
# PROCS_PER_GPU runs this many seeds on each GPU at once (default 1): worth it where one run leaves the GPU part
# idle, which benchmarks/gpu_concurrent_training.py measures (the sum of N processes' windows/s against one alone)
PROCS_PER_GPU=${PROCS_PER_GPU:-1}
[[ "$PROCS_PER_GPU" =~ ^[1-9][0-9]*$ ]] || { echo "error: PROCS_PER_GPU must be a positive integer; got '$PROCS_PER_GPU'" >&2; exit 2; }
SLOTS=$(( NGPU * PROCS_PER_GPU ))
if [ "$NGPU" -lt 1 ]; then
  # the smoke preset also runs on a CPU (one process at a time): a check of this script itself
  [ "$PRESET" = smoke ] || { echo "error: no CUDA device; this script is for GPU machines (training/cpu_grid.sh runs the cpu preset)" >&2; exit 1; }
  SLOTS=1
fi
mkdir -p "$OUT/logs"
# one CPU share per concurrent process: N processes each running torch on every core stall one another
# (measured on 2 cores with 2 processes: element-wise ops 10-20x slower than with one thread each)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( $(nproc) / SLOTS > 0 ? $(nproc) / SLOTS : 1 ))}
wait_for() {  # a seed's process; its failure stops the script with the log to read
  wait "$1" || { echo "error: a seed of $2 failed; its last lines:" >&2; tail -n 3 "$OUT"/logs/"$2"-seed*.log >&2; exit 1; }
}
start=$(date +%s)
for protocol in paper-table1 paper-table2; do
  gpu=0
  pids=()
  for seed in $SEEDS; do
    CUDA_VISIBLE_DEVICES=$([ "$NGPU" -ge 1 ] && echo "$gpu") "$SSS" experiment "$protocol" --data "$DATA" --preset "$PRESET" --seeds "$seed" \
      ${GPU_KERNELS:+--gpu-kernels "$GPU_KERNELS"} --out "$OUT/$protocol-$PRESET" -q >"$OUT/logs/$protocol-seed$seed.log" 2>&1 &
    pids+=($!)
    gpu=$(( (gpu + 1) % (NGPU > 0 ? NGPU : 1) ))
    if [ "${#pids[@]}" -ge "$SLOTS" ]; then wait_for "${pids[0]}" "$protocol"; pids=("${pids[@]:1}"); fi
  done
  for pid in "${pids[@]}"; do wait_for "$pid" "$protocol"; done
  # shellcheck disable=SC2086
  "$SSS" experiment "$protocol" --data "$DATA" --preset "$PRESET" --seeds $SEEDS --out "$OUT/$protocol-$PRESET" -q
  echo "$protocol ($PRESET preset, seeds $SEEDS, $NGPU GPU(s)): $(( $(date +%s) - start )) s wall so far"
done
echo "tables: $OUT/paper-table1-$PRESET/tables.md and $OUT/paper-table2-$PRESET/tables.md"
