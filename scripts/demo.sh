#!/usr/bin/env bash
# The main job on the embedded default: the tiny SmolLM2 model on the bundled offline demo task, through the real
# `lm_eval --model vllm` CLI (vLLM's CPU build), then accuracy and TrAC metrics, and the run as one HTML page (its path
# printed last). Usage: bash scripts/demo.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
source scripts/cpu_env.sh
OUT=${1:-demo_output}
MODEL=$(python3 -m trac_tasks.data.tiny_model)
lm_eval --tasks trac_demo --model vllm \
  --model_args "pretrained=$MODEL,dtype=bfloat16,max_model_len=2048,enable_prefix_caching=True,block_size=32,enforce_eager=True,distributed_executor_backend=uni,seed=1234" \
  --apply_chat_template --output_path "$OUT" --log_samples
python3 -m trac_metrics.cli summary "$OUT"
python3 -m trac_metrics.cli report "$OUT" --html "$OUT/report.html"
