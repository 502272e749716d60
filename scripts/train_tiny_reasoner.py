"""Train the tiny reasoner shipped in ``trac_tasks/data/tiny_reasoner/`` from its seed.

A Llama-architecture model of a few million parameters with its own byte-level BPE tokenizer (``<think>`` /
``</think>`` special tokens, a ChatML template) learns the multi-step arithmetic word problems of
``trac_tasks/data/arithmetic_problems.py`` in the format of a thinking model. The model card
(``trac_tasks/data/tiny_reasoner/README.md``) states the data, size, training, accuracy and what it is not.

    python scripts/train_tiny_reasoner.py                    # rebuild the shipped folder (CPU: about 40 minutes)
    python scripts/train_tiny_reasoner.py --out /tmp/r --steps 200   # a quick smaller run

Deterministic for a given seed, device and thread count (torch's CPU kernels may order float sums differently with
another thread count; the held-out accuracy is what a rebuild must reproduce, within the tolerance the model card
states). On a CUDA GPU it runs there (``--device cuda``), with the same data.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
import time
from pathlib import Path

import jinja2

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trac_tasks.data import tiny_reasoner  # noqa: E402
from trac_tasks.data.arithmetic_problems import ANSWER_LEADS, INSTRUCTION, training_problems  # noqa: E402
from trac_tasks.data.demo_data import demo_rows  # noqa: E402
from trac_tasks.data.failure_modes import Setting, training_pairs  # noqa: E402

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_TEMPLATE = jinja2.Template(CHAT_TEMPLATE)
HEAD_DIM = 32  # one of the head sizes vLLM's CPU attention accepts (32, 64, 80, ...)


def chat_text(question: str, response: str) -> tuple[str, str]:
    """(prompt as :data:`CHAT_TEMPLATE` renders it with the generation prompt, reply ending in ``<|im_end|>``)."""
    messages = [{"role": "user", "content": INSTRUCTION + question}]
    return _TEMPLATE.render(messages=messages, add_generation_prompt=True), response + "<|im_end|>"


def build_tokenizer(seed: int, vocab_size: int):
    """Byte-level BPE trained on generated dialogues; every digit its own token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tokenizer.decoder = decoders.ByteLevel()
    forms = [(lead, summary) for lead in ANSWER_LEADS for summary in (False, True)]
    corpus = [
        "".join(chat_text(p.question, p.reply(*forms[index % len(forms)])))
        for index, p in enumerate(itertools.islice(training_problems(seed + 1), 20_000))
    ]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<think>", "</think>"],
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def build_model(tokenizer, args):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden,
        intermediate_size=args.hidden * 3,
        num_hidden_layers=args.layers,
        num_attention_heads=args.hidden // HEAD_DIM,
        num_key_value_heads=args.hidden // HEAD_DIM,
        head_dim=HEAD_DIM,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


def batches(tokenizer, seed: int, batch_size: int, setting: Setting, pool: int = 16):
    """Endless batches of (input ids, labels) of ``setting``'s training pairs (``failure_modes.training_pairs``; the
    shipped model's mix of answer sections for ``slips``); the loss covers the reply only. Rows are drawn ``pool``
    batches at a time and grouped by length (less padding), the batches of a pool in a seeded random order."""
    rng = random.Random(seed + 2)
    stream = training_pairs(setting, seed + 3, rng)
    while True:
        rows = []
        for question, response in itertools.islice(stream, batch_size * pool):
            prompt, reply = chat_text(question, response)
            prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            reply_ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
            rows.append((prompt_ids + reply_ids, len(prompt_ids)))
        rows.sort(key=lambda row: len(row[0]))
        groups = [rows[i : i + batch_size] for i in range(0, len(rows), batch_size)]
        rng.shuffle(groups)
        yield from (_padded(tokenizer, group) for group in groups)


def _padded(tokenizer, rows: list[tuple[list[int], int]]):
    """(input ids, labels) of ``rows`` right-padded to the longest; labels -100 on the prompt and the padding."""
    import torch

    width = max(len(ids) for ids, _ in rows)
    inputs = torch.full((len(rows), width), tokenizer.pad_token_id)
    labels = torch.full((len(rows), width), -100)
    for row, (ids, prompt_length) in enumerate(rows):
        inputs[row, : len(ids)] = torch.tensor(ids)
        labels[row, prompt_length : len(ids)] = torch.tensor(ids[prompt_length:])
    return inputs, labels


def train(args) -> None:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    tokenizer = build_tokenizer(args.seed, args.vocab)
    model = build_model(tokenizer, args).to(args.device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{n_params / 1e6:.2f} M parameters, vocabulary {len(tokenizer)}", flush=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.98))
    warmup = max(1, args.steps // 20)

    def rate(step: int) -> float:
        return min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, step / args.steps)))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    start, tokens = time.time(), 0
    model.train()
    for step, (inputs, labels) in zip(
        range(args.steps), batches(tokenizer, args.seed, args.batch_size, Setting.parse(args.setting))
    ):
        inputs, labels = inputs.to(args.device), labels.to(args.device)
        loss = model(input_ids=inputs, attention_mask=(inputs != tokenizer.pad_token_id).long(), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        tokens += int((labels != -100).sum())
        if args.checkpoint_every and step and step % args.checkpoint_every == 0:
            tiny_reasoner.save_model(model, tokenizer, Path(f"{args.out}.step{step}"), {"step": step, **vars(args)})
        if step % args.log_every == 0 or step == args.steps - 1:
            elapsed = time.time() - start
            print(
                f"step {step:5d}  loss {loss.item():.4f}  {tokens / elapsed:,.0f} reply tokens/s  {elapsed:.0f} s",
                flush=True,
            )
    elapsed = time.time() - start
    out = Path(args.out)
    # what the model card's figures come from: every setting, the size, the training time, then the greedy accuracy
    training = {**vars(args), "parameters": n_params, "train_seconds": round(elapsed), "torch": torch.__version__}
    tiny_reasoner.save_model(model.eval().to("cpu"), tokenizer, out, training)
    training["greedy_demo_accuracy"] = tiny_reasoner.greedy_accuracy(out, demo_rows())
    tiny_reasoner.save_training_record(out, training)
    print(
        f"saved to {out} after {elapsed:.0f} s of training; greedy accuracy on the 100 demo questions "
        f"{training['greedy_demo_accuracy']:.2f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=str(tiny_reasoner.SHIPPED_DIR), help="model folder to write")
    parser.add_argument("--seed", type=int, default=tiny_reasoner.TRAINING_SEED)
    parser.add_argument("--steps", type=int, default=tiny_reasoner.TRAINING_STEPS)
    parser.add_argument(
        "--setting",
        default="slips",
        help="the failure-mode setting of the training data (trac_tasks/data/failure_modes.py): slips (the shipped "
        "model), drift:M, drift_large:Q, misconception:Q, distractor:Q",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--hidden", type=int, default=128, help="model width (a multiple of the head size 32)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=768)
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU threads (1: reproducible, and fastest on a busy machine)"
    )
    parser.add_argument("--device", default="cuda" if _cuda() else "cpu")
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--checkpoint-every", type=int, default=0, help="also save <out>.step<N> every N steps")
    train(parser.parse_args(argv))


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    main()
