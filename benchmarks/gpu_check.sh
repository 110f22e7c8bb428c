#!/usr/bin/env bash
# GPU check, for a machine with a CUDA device (the project never depends on one). ≤ 5 minutes.
#   1. the GPU-marked tests (pytest -m gpu): CUDA training, and the MiniRocket evidence series and
#      window features on CUDA equal to the CPU (numba) paths
#   2. benchmarks/gpu_check.py: train the default and minirocket presets on CUDA (small synthetic
#      cohort), score the latency recording (100 ch × 5 min × 1 kHz) with the bundled demo model and
#      both trained models on CPU and GPU: agreement of window probabilities and windows/s.
#   3. benchmarks/ddp_training.py: torchrun with nccl on 1 GPU and on all of the machine's GPUs.
# Uses the machine's own python/torch (a CUDA build). Pure-Python packages the engine needs and the
# machine may lack can be carried as wheels in .whl/ (see benchmarks/README.md).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/sss-site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/sss-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
$PY -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
echo "== GPU-marked tests"
$PY -m pytest -m gpu -q -p no:cacheprovider -o addopts="" tests/engine/test_training.py tests/models/test_minirocket_series.py \
    tests/models/test_minirocket_triton.py tests/preprocessing/test_torch_filters.py tests/engine/test_training_precision.py; tests_rc=$?
echo "== training and CPU-vs-GPU scoring"
$PY benchmarks/gpu_check.py "$@"; check_rc=$?
echo "== torchrun (nccl): training windows/s on 1 GPU and on every GPU, same global batch"
NGPU=$($PY -c "import torch; print(torch.cuda.device_count())")
$PY benchmarks/ddp_training.py --device cuda --ranks "$NGPU" --repeats 1 --epochs 2; ddp_rc=$?
echo "gpu tests rc=$tests_rc, gpu_check rc=$check_rc, ddp rc=$ddp_rc"
exit $(( tests_rc || check_rc || ddp_rc ))
