#!/usr/bin/env bash
# Goal-4 smoke of the `paper` preset on a GPU: one full SSS training at App. C sizes (PatchTST d_model 128,
# L = 1024 on native rates, stride 5, batch 8192, 50 epochs, patience 15) on the synthetic multi-centre
# cohort of docs/results.md §1, with its epoch times and windows/s in the log — the measured unit of
# training/paper_tables_gpu.sh's expected time.
#
#   training/paper_smoke_gpu.sh [OUT]      OUT: where the model and the log go (default experiments/paper-smoke-gpu)
#
# Uses $PYTHON (default .venv/bin/python; a bare GPU image's python3 with the wheels of benchmarks/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-experiments/paper-smoke-gpu}
PY=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT"
$PY -m sss_viewer synth --out "$OUT/cohort" --patients 24 --seed 0 --duration-scale 0.2 --max-channels 32 -q
start=$(date +%s)
$PY -m sss_viewer train "$OUT/cohort" --preset paper --device "${DEVICE:-cuda}" --no-cache --out "$OUT/model" --overwrite -v
echo "paper-preset training on $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")'): $(( $(date +%s) - start )) s wall"
