#!/usr/bin/env bash
# The paper's Table 1 + Table 2 grid on the synthetic multi-centre cohort with the `cpu` preset:
# SSS and every baseline, 5 seeds x 2 split modes (channel-level as the paper, patient-level).
# Usage: training/cpu_grid.sh [OUT]   (default experiments/synthetic; resumable: rerun to continue)
set -euo pipefail
OUT=${1:-experiments/synthetic}
SSS=${SSS_VIEWER_BIN:-.venv/bin/sss-viewer}
if [ ! -f "$OUT/cohort/cohort.tsv" ]; then
  "$SSS" synth --out "$OUT/cohort" --patients 24 --seed 0 --duration-scale 0.2 --max-channels 32 -q
fi
start=$(date +%s)
"$SSS" experiment paper-table1 --data "$OUT/cohort" --preset cpu --out "$OUT/paper-table1-cpu" -q
"$SSS" experiment paper-table2 --data "$OUT/cohort" --preset cpu --out "$OUT/paper-table2-cpu" -q
echo "Table 1 + Table 2 (cpu preset): $(( $(date +%s) - start )) s wall"
