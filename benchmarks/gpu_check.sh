#!/usr/bin/env bash
# The GPU check, run from the repository root on the device machine (no
# network; Python 3.12, torch, transformers, torchvision preinstalled; the
# `bytecode` wheel carried in .whl/).  Writes everything into $OUT:
#   env.txt      nvidia-smi and versions
#   tests.txt    the GPU unit tests (tests/test_gpu.py + the CUDA-graph boundary's CPU tests)
#   bench.txt    benchmarks/gpu.py's log (with ARMATURE_LOGS=perf: why CUDA graphs were skipped); gpu.md / gpu.json
# All GPU tests run (no -x: one failure does not hide the others).
# Bounded: tests ${TEST_TIMEOUT:-180} s, benchmark ${BENCH_TIMEOUT:-330} s (compile-time
# subprocesses stop starting after ${BUDGET_S:-120} s of it); about 8 minutes on an H200.
# Extra arguments go to benchmarks/gpu.py (e.g. --only gpt2_decode,gpt2_decode_ro).
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PY:-python3}
$PY -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=$PWD/src:/tmp/site
export PYTHONUNBUFFERED=1
{
  date -u
  nvidia-smi 2>&1 | head -20
  $PY - <<'PYEOF'
import sys, torch
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(), "capability", torch.cuda.get_device_capability())
for m in ("transformers", "torchvision", "triton", "bytecode", "pytest"):
    try:
        mod = __import__(m)
        print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "MISSING", type(e).__name__)
import armature
print("armature", armature.__file__)
PYEOF
} 2>&1 | tee "$OUT/env.txt"

echo "=== GPU tests" | tee "$OUT/tests.txt"
if $PY -c "import pytest" 2>/dev/null; then
  timeout "${TEST_TIMEOUT:-180}" $PY -m pytest -q -rs -p no:cacheprovider \
      tests/test_gpu.py tests/test_cudagraphs.py tests/test_matmul_precision_guards.py \
      tests/test_ambient_autocast.py tests/test_cuda_queries.py >>"$OUT/tests.txt" 2>&1
  rc=$?
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.txt" | tail -30
else
  echo "(pytest not installed: tests/test_gpu.py's own runner)" | tee -a "$OUT/tests.txt"
  timeout "${TEST_TIMEOUT:-180}" $PY tests/test_gpu.py >>"$OUT/tests.txt" 2>&1
  rc=$?
  tail -30 "$OUT/tests.txt"
fi
echo "tests exit: $rc" | tee -a "$OUT/tests.txt"

echo "=== benchmark" | tee "$OUT/bench.txt"
ARMATURE_LOGS=${ARMATURE_LOGS:-perf} timeout "${BENCH_TIMEOUT:-330}" $PY benchmarks/gpu.py --quick --out "$OUT" --budget-s "${BUDGET_S:-120}" "$@" 2>&1 \
    | grep -v "Warning\|warn(" | tee -a "$OUT/bench.txt" | tail -30
echo "benchmark exit: ${PIPESTATUS[0]}" | tee -a "$OUT/bench.txt"
