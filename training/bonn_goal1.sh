#!/usr/bin/env bash
# Bonn D vs C (issue 18, goal 1): SSS's candidates, the nested choice among them, the registered refit rows
# (bonn-refit), the references trained on the inner split and on the whole training fold, the Hydra +
# MiniRocket peer, their paired differences on the same folds, and what each costs. Resumable: rerun the same
# command to continue.
#
#   training/bonn_goal1.sh [DATA] [OUT]
#     DATA   the Bonn data folder (default ../shared/data/bonn-epilepsy)
#     OUT    results folder (default experiments)
#
# Writes OUT/bonn-candidates (8 SSS candidates x 5 folds x 3 repeats), OUT/bonn-refit (4 rows: the recipe and
# the Hydra + MiniRocket window ensemble with the L-BFGS head, as chosen and refitted), OUT/bonn-bonn (SSS at the bonn
# preset, MiniRocket-LR and Hydra + MiniRocket + ridge, each on the inner split and on the whole fold),
# OUT/bonn-goal1.md (paired differences + wall time per fold) and OUT/bonn-candidate-cost.md,
# OUT/bonn-refit-cost.md (training s, scoring windows/s). Every choice is made on inner validation; the test
# folds only score (a refitted row makes no choice after its refit).
# On this 2-core box: about 1.5 h for the candidates, 0.5 h for the refit rows and 1 h for the references
# with nothing else running.
set -euo pipefail
DATA=${1:-../shared/data/bonn-epilepsy}
OUT=${2:-experiments}
SSS=${SSS_VIEWER_BIN:-.venv/bin/sss-viewer}
PY=${PYTHON:-.venv/bin/python}
"$SSS" experiment bonn-candidates --data "$DATA" --no-cache --out "$OUT/bonn-candidates" -q
"$SSS" experiment bonn --data "$DATA" --no-cache --out "$OUT/bonn-bonn" -q \
  --models sss minirocket-lr minirocket-lr-full hydra-minirocket-ridge hydra-minirocket-ridge-full
"$SSS" experiment bonn-refit --data "$DATA" --no-cache --out "$OUT/bonn-refit" -q
REFERENCES=(minirocket-lr minirocket-lr-full hydra-minirocket-ridge hydra-minirocket-ridge-full bonn:sss)
{
  echo "# Bonn D vs C: paired differences on the same folds (5-fold x 3 repeats)"
  for candidate in "selected on inner validation" "bonn-candidates:sss" \
      "sss backbone=hydra_minirocket, window_length=2048" "sss window_length=2048"; do
    echo
    "$SSS" compare "$OUT/bonn-bonn" "$OUT/bonn-candidates" --candidate "$candidate" --against "${REFERENCES[@]}"
  done
  for candidate in "sss head_solver=lbfgs, refit_on_train_val=True" \
      "sss backbone=hydra_minirocket, window_lengths=1024+2048, head_solver=lbfgs, refit_on_train_val=True"; do
    echo
    "$SSS" compare "$OUT/bonn-bonn" "$OUT/bonn-refit" --candidate "$candidate" --against "${REFERENCES[@]}"
  done
} > "$OUT/bonn-goal1.md.tmp"
mv "$OUT/bonn-goal1.md.tmp" "$OUT/bonn-goal1.md"
"$PY" benchmarks/bonn_candidate_cost.py --data "$DATA" --repeats 3 > "$OUT/bonn-candidate-cost.md.tmp"
mv "$OUT/bonn-candidate-cost.md.tmp" "$OUT/bonn-candidate-cost.md"
"$PY" benchmarks/bonn_candidate_cost.py --data "$DATA" --protocol bonn-refit --repeats 3 > "$OUT/bonn-refit-cost.md.tmp"
mv "$OUT/bonn-refit-cost.md.tmp" "$OUT/bonn-refit-cost.md"
echo "wrote $OUT/bonn-goal1.md, $OUT/bonn-candidate-cost.md and $OUT/bonn-refit-cost.md"
