"""Where the repository is, and the environment of a subprocess running lm-eval with vLLM's CPU build."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CPU_ENGINE_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

THINKING_TEMPLATE_OPENER = "<think>\n"
"""What the thinking-style copy of the tiny model (conftest's ``thinking_model``) opens its generation prompt with."""


def engine_env(**extra: str) -> dict[str, str]:
    """The environment for a subprocess running lm-eval with vLLM's CPU build."""
    env = {**os.environ, **CPU_ENGINE_ENV, **extra}
    env.pop("TRAC_RECORDS_DIR", None)
    return env
