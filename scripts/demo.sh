#!/usr/bin/env bash
# The main job on the embedded default: the tiny reasoner shipped with trac-eval (trac_tasks/data/tiny-reasoner) on
# the bundled offline demo task (100 held-out arithmetic word problems, K = 8), through the real `lm_eval --model vllm`
# CLI (vLLM's CPU build), then accuracy and TrAC metrics, the leaderboard with 95 % intervals, and the run as one HTML
# page (its path printed last). Usage: bash scripts/demo.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
source scripts/cpu_env.sh
OUT=${1:-demo_output}
MODEL=$(python3 -m trac_tasks.data.tiny_reasoner)
DTYPE=$(python3 -m trac_tasks.data.tiny_reasoner --dtype)   # the dtype this CPU runs it fastest in
lm_eval --tasks trac_demo --model vllm \
  --model_args "pretrained=$MODEL,dtype=$DTYPE,max_model_len=1024,enable_prefix_caching=True,block_size=32,enforce_eager=True,distributed_executor_backend=uni,seed=1234" \
  --apply_chat_template --output_path "$OUT" --log_samples
python3 -m trac_metrics.cli summary "$OUT"
# the page shades each trace token by token with the model's own tokenizer (the folder lm_eval ran)
python3 -m trac_metrics.cli report "$OUT" --out "$OUT/report" --html "$OUT/report.html" --tokenizer "$MODEL" >/dev/null
# the leaderboard with intervals: macro AUROC / AURC of every method, 95 % hierarchical-bootstrap intervals, best first
python3 -c "import pandas, sys; table = pandas.read_csv(sys.argv[1]); print(table.sort_values('macro AUROC', ascending=False).round(3).to_string(index=False))" "$OUT/report/confidence_intervals.csv"
echo "HTML report: $OUT/report.html"
