"""The embedded default model: the tiny reasoner shipped in ``trac_tasks/data/tiny-reasoner/`` (trained by
``scripts/train_tiny_reasoner.py``; its model card is the folder's README.md).

It is a normal Hugging Face model folder (Llama architecture, safetensors, ``tokenizer.json`` with ``<think>`` /
``</think>`` as special tokens, a ChatML chat template) that vLLM, ``--model hf`` and ``vllm serve`` load as they are.

Run ``python -m trac_tasks.data.tiny_reasoner`` to print its path, ``... --dtype`` to print the dtype the CPU runs it
fastest in.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from trac_tasks.data.arithmetic_problems import INSTRUCTION, grade

SHIPPED_DIR = Path(__file__).resolve().parent / "tiny-reasoner"
TRAINING_SEED = 20261127
TRAINING_STEPS = 1600
MAX_REPLY_TOKENS = 512  # as trac_demo's max_gen_toks
CARD_FIELDS = "training.json"  # the training run's settings and measured figures, written beside the weights


def reasoner_path() -> Path:
    """The shipped model folder; a clear error when a part of it is missing."""
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        if not (SHIPPED_DIR / name).is_file():
            raise RuntimeError(
                f"the tiny reasoner is incomplete: {SHIPPED_DIR / name} is missing "
                "(rebuild it with python scripts/train_tiny_reasoner.py)"
            )
    return SHIPPED_DIR


def cpu_dtype() -> str:
    """The dtype for the tiny reasoner on a CPU, whatever its instruction set: ``float32``. Its matrices are 128
    wide; bfloat16 saved 8 % of the demo's generation time on a CPU with native bf16 instructions (AVX512-BF16) and
    cost 1.8× with AVX2 alone (``benchmarks/cpu_dtype.py``, docs/guide/tiny-reasoner.md#on-a-cpu)."""
    return "float32"


def save_model(model, tokenizer, folder: Path, training: dict) -> None:
    """Write the model folder: safetensors weights, config, tokenizer, generation config, training settings."""
    folder.mkdir(parents=True, exist_ok=True)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    save_training_record(folder, training)


def save_training_record(folder: Path, training: dict) -> None:
    """``training.json`` beside the weights: the run's settings and measured figures (the model card cites them)."""
    (folder / CARD_FIELDS).write_text(json.dumps(training, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def chat_prompts(tokenizer, questions: list[str]) -> list[str]:
    """The prompts the tasks give: the instruction and each question as the user's turn, through the tokenizer's chat
    template with the generation prompt (as ``--apply_chat_template`` renders them)."""
    return [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": INSTRUCTION + question}], tokenize=False, add_generation_prompt=True
        )
        for question in questions
    ]


def greedy_replies(folder: Path, questions: list[str], batch: int = 50) -> list[str]:
    """Greedy replies of the model in ``folder`` to ``questions`` (with the tasks' instruction, through its chat
    template) by transformers on the CPU in float32, ``batch`` at a time; special tokens kept, each reply cut at the
    end-of-turn token."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    texts = []
    for start in range(0, len(questions), batch):
        prompts = chat_prompts(tokenizer, questions[start : start + batch])
        inputs = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            generated = model.generate(**inputs, max_new_tokens=MAX_REPLY_TOKENS, do_sample=False)
        texts += tokenizer.batch_decode(generated[:, inputs["input_ids"].shape[1] :], skip_special_tokens=False)
    return [text.split(tokenizer.eos_token)[0] for text in texts]


def greedy_accuracy(folder: Path, rows: list[dict]) -> float:
    """Share of ``rows`` (``problem``, ``answer``: the demo set's schema) the model answers right, decoding greedily
    (deterministic: the figure a rebuild of the weights must reproduce)."""
    texts = greedy_replies(folder, [row["problem"] for row in rows])
    return sum(grade(int(row["answer"]), text).correct for row, text in zip(rows, texts, strict=True)) / len(rows)


if __name__ == "__main__":
    print(cpu_dtype() if sys.argv[1:] == ["--dtype"] else reasoner_path())
