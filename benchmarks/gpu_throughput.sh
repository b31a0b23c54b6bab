#!/usr/bin/env bash
# Issue 23's GPU rows in one call of a lent GPU machine (a few minutes on an H100 or H200):
#   - the Transformer base (6+6 layers, d_model 512, ~25k target tokens a batch) in bf16 against
#     torch.nn.Transformer of the same size, eager and under torch.compile, as model FLOPs utilisation of the
#     device's dense bf16 peak (PEAK_TFLOPS, default 989.4: H100 and H200 SXM, NVIDIA's data sheet);
#   - the share of a training step spent waiting for data, with data.num_workers 0 and 2.
#
# The lent machine has torch, Lightning, tokenizers and sacrebleu but no Hydra and no internet, so the
# pure-Python packages zoo needs beside those travel as wheels in .whl/ (ignored by git):
#   benchmarks/gpu_throughput.sh --fetch-wheels      # here, once: downloads them into .whl/
#   benchmarks/gpu_throughput.sh OUT_DIR             # there (device run, carry .whl): installs, then measures
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=(hydra-core==1.3.8 omegaconf==2.3.1 antlr4-python3-runtime==4.9.3)

if [ "${1:-}" = "--fetch-wheels" ]; then
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  python3 -m pip download --quiet --no-deps -d .whl "${wheels[@]}"
  ls .whl
  exit 0
fi

out="${1:-gpu_throughput}"
mkdir -p "$out"
peak="${PEAK_TFLOPS:-989.4}"
python3 -m pip install --quiet --no-index --no-deps --no-build-isolation --find-links .whl "${wheels[@]}"
python3 -m pip install --quiet --no-index --no-deps --no-build-isolation -e .  # zoo's plugin entry point
export PYTHONUNBUFFERED=1
nvidia-smi -L | tee "$out/device.txt"
base=(python3 benchmarks/bench_transformer.py --device cuda --size base --precision bf16 --peak-tflops "$peak")
"${base[@]}" --rounds 3 --batches 5 | tee "$out/base_bf16.txt"
"${base[@]}" --rounds 3 --batches 5 --compile 2>&1 | tee "$out/base_bf16_compiled.txt"
python3 benchmarks/speed_suite.py --device cuda --threads 4 --only data_wait --out "$out/suite" | tee "$out/data_wait.txt"
