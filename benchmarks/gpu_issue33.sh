#!/usr/bin/env bash
# Issue 33's GPU measurements, one prepared run (≈ 8-10 min on one H200 machine; each part under its own time limit):
#   1. benchmarks/evidence_kernel.py     the fused (Triton) evidence kernels vs today's torch path, data on the device:
#                                        the generic kernel (tables in memory) and the baked one (numbers compiled in)
#   2. benchmarks/score_long_recording.py --device cuda
#                                        128 ch × 1 h × 1 kHz BrainVision file end to end, GPU vs the machine's CPUs
#   3. benchmarks/gpu_training.py        paper-preset training windows/s, today's path vs bf16/compiled/device-gathered
#   4. the GPU-marked tests
#   SDPA=flash|efficient|cudnn|math restricts part "training"'s attention to that kernel (part "attention" times each)
#   modes (not in the default, ≈ 5 min): the compiled training path in torch.compile's "reduce-overhead" (CUDA
#        graphs) and "max-autotune-no-cudagraphs" modes beside the rows of part 3 (goal 3's next candidates)
#   baselines (not in the default, ≈ 3-4 min): the grid's 11 whole-channel baselines at the paper preset's settings on
#        channels as long as ds003029's, each one's time scaled to the grid, and the full grid's hours with the SSS
#        rows' (SSS_HOURS, default 8.7: the last measured)
#   concurrent (not in the default, ≈ 4 min): the compiled training path in 1 process, then in 2 started together on
#        the GPU: the sum of their windows/s against one alone (training/paper_tables_gpu.sh's PROCS_PER_GPU)
#   attention (not in the default, ≈ 1 min): the paper preset's attention (4 heads of width 8 over 128 tokens, dropout
#        0.3, bf16) forward + backward on each of torch's attention kernels and the fused Triton one, and without
#        dropout: which is fastest
#   fused (not in the default, ≈ 3 min): PatchTST's sub-layers through the fused Triton kernels: the feed-forward
#        sub-layer's forward + backward, stock (eager, compiled) vs fused, at the paper's sizes (benchmarks/fused_ffn.py),
#        then paper-preset training with rows for gpu_kernels=fused-ffn, fused-attention and fused beside today's and
#        the new path's (gpu_training.py --gpu-kernels); part "attention" times the fused attention ("triton" row)
#   profile (not in the default, ≈ 1.5 min): the compiled training path once under torch's profiler — the device's
#        busy share of a training epoch (low: the host bounds a step, CUDA graphs help) and its time by kernel kind
#   ncu, ncubaked (not in the default): the generic / baked Triton evidence kernel under Nsight Compute, one launch
#        at the third dilation (4 biases a kernel, as 19 of the demo model's 25): occupancy, registers, warp stalls,
#        issue slots used (works on Firecracker machines, device/KINDS.md)
# Each part's full output goes to $OUT/<part>.log when OUT is set (the device tool's folder), else /tmp/gpu-issue33.
# Usage (machine's own python3 with a CUDA torch; wheels the image lacks in .whl/, see benchmarks/README.md):
#   bash benchmarks/gpu_issue33.sh [PARTS]     PARTS: any of "evidence e2e training tests modes baselines concurrent attention fused profile ncu ncubaked"
#                                              (default: the first four; also "attention")
# Run "evidence" before "e2e" on a fresh machine: the first use of the Triton kernels compiles them (about a
# minute on the H200 machine for the generic kernel, one compile per dilation for the baked one; cached on disk
# afterwards), which would otherwise fall into e2e's GPU warm-up.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOGS=${OUT:-/tmp/gpu-issue33}
mkdir -p "$LOGS"
if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/sss-site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/sss-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
$PY -c "import torch, triton; assert torch.cuda.is_available(), 'no CUDA device'; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(0))" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader || true
PARTS=${1:-evidence e2e training tests}
declare -A RC
part() {  # part NAME LIMIT_S COMMAND...
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit} s)"
    local t0=$SECONDS
    timeout -k 10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
    RC[$name]=$?
    tail -n 30 "$LOGS/$name.log"
    echo "-- $name rc=${RC[$name]} in $((SECONDS - t0)) s"
}
for p in $PARTS; do
    case $p in
    evidence) part evidence 330 $PY benchmarks/evidence_kernel.py --configs "${EVIDENCE_TILES:-1024x4,baked128x4,baked128x4+tile,baked256x8}" \
        --timeout 320 ;;
    e2e) part e2e 240 $PY benchmarks/score_long_recording.py --device cuda --file /tmp/sss-long/long.vhdr --skip-per-window --child-timeout 200 ;;
    training) part training 170 $PY benchmarks/gpu_training.py --no-spread --sdpa "${SDPA:-default}" --timeout 160 ;;
    modes) part modes 300 $PY benchmarks/gpu_training.py --no-spread --compile-modes reduce-overhead,max-autotune-no-cudagraphs --timeout 290 ;;
    tests) part tests 210 $PY -m pytest -m gpu -q -p no:cacheprovider -o addopts="" tests/engine/test_training.py \
        tests/models/test_minirocket_series.py tests/models/test_minirocket_triton.py tests/preprocessing/test_torch_filters.py \
        tests/engine/test_training_precision.py tests/engine/test_device_resident_scoring.py \
        tests/models/test_patchtst_triton.py tests/models/test_attention_triton.py ;;
    baselines) part baselines 300 $PY benchmarks/gpu_grid_baselines.py --sss-hours "${SSS_HOURS:-8.7}" --timeout 280 ;;
    concurrent) part concurrent 300 $PY benchmarks/gpu_concurrent_training.py --timeout 290 ;;
    attention) part attention 130 bash -c "$PY benchmarks/attention_backends.py && $PY benchmarks/attention_backends.py --dropout 0" ;;
    profile) part profile 200 $PY benchmarks/gpu_training.py --profile --timeout 190 ;;
    fused) part fused 300 bash -c "$PY benchmarks/fused_ffn.py; a=\$?; $PY benchmarks/gpu_training.py --no-spread \
        --gpu-kernels fused-ffn,fused-attention,fused --sdpa ${SDPA:-default} --timeout 240; exit \$((a | \$?))" ;;
    ncu | ncubaked)
        config=1024x4
        [ "$p" = ncubaked ] && config=baked128x4
        part "$p" 200 ncu --clock-control none --kernel-name regex:evidence_kernel --launch-skip 2 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
            --section ComputeWorkloadAnalysis --section InstructionStats \
            $PY benchmarks/evidence_kernel.py --rows 16 --samples 100000 --configs $config --repeats 1 --search-repeats 1 \
            --timeout 190 ;;
    *) echo "unknown part $p (expected evidence, e2e, training, tests, modes, baselines, concurrent, attention, fused, profile, ncu, ncubaked)"; RC[$p]=2 ;;
    esac
done
status=0
for p in "${!RC[@]}"; do
    echo "$p rc=${RC[$p]}"
    [ "${RC[$p]}" = 0 ] || status=1
done
exit $status
