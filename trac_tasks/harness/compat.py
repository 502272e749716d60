"""What trac-eval's start-up hooks rely on in lm-eval and vLLM, the tested releases, and the defensive install.

Every hook of :mod:`trac_tasks.harness.autoload` is installed through :func:`install_hook`. It first checks, with
:mod:`inspect`, every symbol the hook relies on (``REQUIRED``: names, and the parameters the hook passes or reads);
only when all are as expected does it patch the module. When something differs, or the hook raises, it logs one
warning (the hook, the installed lm-eval and vLLM versions, ``TRAC_EVAL_DISABLE=1``) and leaves the module
untouched: plain tasks run exactly as without trac-eval, and a TrAC task stops before generation with the reason
(:func:`require_trac_hooks`, the backend check of :mod:`trac_tasks.harness.lm_eval_hooks`). A test checks ``REQUIRED``
and ``FALLBACK`` against the installed releases, so a release that changes one of them fails one clear test.

This module is imported only once lm-eval imports a hooked module; it imports nothing heavy itself.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import logging
import re
import sys
from types import ModuleType

LOGGER = logging.getLogger("lm_eval.trac_eval")
"""The logger of trac-eval's log lines (``trac_tasks.generation.progress.LOGGER``, not imported here: it pulls in
tqdm)."""

TESTED = {"lm_eval": "==0.4.13", "vllm": ">=0.32,<0.34"}
"""Releases the hooks are tested with (distribution and import name alike); pyproject's ``vllm`` extra uses the
same range. Another installed release gets a warning once per process."""

REQUIRED: dict[str, tuple[str, ...]] = {
    "lm_eval.tasks.manager": ("lm_eval.tasks.manager:TaskManager.__init__(include_path, include_defaults)",),
    "lm_eval.evaluator_utils": ("lm_eval.evaluator_utils:_compute_task_aggregations",),
    "lm_eval.utils": ("lm_eval.utils:make_table(result_dict, column)",),
    "lm_eval.evaluator": (
        "lm_eval.evaluator:evaluate(lm, task_dict, samples, cache_requests)",
        "lm_eval.evaluator:simple_evaluate(evaluation_tracker, tasks, metadata)",
        "lm_eval.api.task:Task.build_all_requests",
        "lm_eval.loggers.evaluation_tracker:EvaluationTracker.__init__(output_path)",
        "lm_eval.api.model:CachingLM",
        "lm_eval.api.task:TaskConfig(task, generation_kwargs, repeats, metadata, output_type, metric_list)",
        # TrAC on lm-eval's own tasks (--metadata trac): the task methods task_scoring wraps or calls
        "lm_eval.api.task:ConfigurableTask.construct_requests(doc, ctx)",
        "lm_eval.api.task:ConfigurableTask.apply_filters",
        "lm_eval.api.task:ConfigurableTask.process_results(doc, results)",
        "lm_eval.api.task:ConfigurableTask.aggregation",
        "lm_eval.api.task:ConfigurableTask.higher_is_better",
        "lm_eval.api.task:ConfigurableTask.doc_to_target(doc)",
        "lm_eval.api.task:ConfigurableTask.doc_to_choice(doc)",
        "lm_eval.api.task:Task.instances",
        "lm_eval.api.filter:FilterEnsemble(name, filters)",
        "lm_eval.api.filter:Filter.apply(resps, docs)",
        "lm_eval.api.instance:Instance(doc, arguments, resps, filtered_resps)",
        "lm_eval.api.metrics:mean",
    ),
    "lm_eval.models.vllm_causallms": (
        "lm_eval.models.vllm_causallms:VLLM.generate_until(requests, disable_tqdm)",
        "lm_eval.models.vllm_causallms:VLLM.modify_gen_kwargs(gen_kwargs, eos, default_max_gen_toks)",
        "lm_eval.models.vllm_causallms:VLLM.tok_encode(string)",
        "lm_eval.models.vllm_causallms:VLLM.tokenizer",
        "lm_eval.models.vllm_causallms:VLLM.eot_token_id",
        "lm_eval.models.vllm_causallms:VLLM.max_length",
        "lm_eval.models.vllm_causallms:VLLM.max_gen_toks",
        "lm_eval.models.utils:maybe_truncate(tokens, max_gen_toks, max_model_len, side, verbose)",
        "lm_eval.models.utils:postprocess_generated_text(generation, stop, think_end_token)",
        "lm_eval.api.instance:Instance(doc, task_name, doc_id, repeats)",
        "lm_eval.api.instance:Instance.args",
        "vllm:SamplingParams(max_tokens, stop, logprobs, prompt_logprobs, temperature, top_p, output_kind)",
        "vllm:TokensPrompt(prompt_token_ids)",
        "vllm:LLM.generate(prompts, sampling_params, use_tqdm, lora_request)",
        "vllm.outputs:RequestOutput(request_id, outputs, finished, prompt_logprobs, num_cached_tokens)",
        "vllm.outputs:CompletionOutput(text, token_ids, logprobs, finish_reason, stop_reason)",
        "vllm.logprobs:Logprob(logprob, decoded_token)",
    ),
    "lm_eval.models.huggingface": (
        "lm_eval.models.huggingface:HFLM.generate_until(requests, disable_tqdm)",
        "lm_eval.models.huggingface:HFLM.tok_encode(string, left_truncate_len)",
        "lm_eval.models.huggingface:HFLM.tok_decode(tokens, skip_special_tokens)",
        "lm_eval.models.huggingface:HFLM.tokenizer",
        "lm_eval.models.huggingface:HFLM.eot_token_id",
        "lm_eval.models.huggingface:HFLM.max_length",
        "lm_eval.models.huggingface:HFLM.max_gen_toks",
        "lm_eval.models.huggingface:HFLM.model",
        "lm_eval.models.huggingface:HFLM.device",
        "lm_eval.models.utils:handle_stop_sequences(until, eos)",
        "lm_eval.models.utils:normalize_gen_kwargs(gen_kwargs, default_max_gen_toks)",
        "lm_eval.models.utils:postprocess_generated_text(generation, stop, think_end_token)",
        "lm_eval.models.utils_hf:stop_sequences_criteria(tokenizer, stop_sequences, initial_decoder_input_length, "
        "batch_size)",
        "lm_eval.api.instance:Instance(doc, task_name, doc_id, repeats)",
        "lm_eval.api.instance:Instance.args",
        "transformers:GenerationConfig",
    ),
    "lm_eval.models.openai_completions": (
        "lm_eval.models.openai_completions:LocalCompletionsAPI.generate_until(requests, disable_tqdm)",
        "lm_eval.models.openai_completions:LocalCompletionsAPI._create_payload(messages, generate, gen_kwargs, seed, "
        "eos)",
        "lm_eval.models.api_models:TemplateAPI.__init__(base_url, tokenizer, tokenizer_backend, num_concurrent, "
        "max_retries, max_gen_toks, seed, max_length, add_bos_token, tokenized_requests, verify_certificate, timeout)",
        "lm_eval.models.utils:has_bos_prefix(sequence, bos_str)",
        "lm_eval.models.api_models:TemplateAPI.eos_string",
        "lm_eval.models.api_models:TemplateAPI.eot_token_id",
        "lm_eval.models.api_models:TemplateAPI.header",
        "lm_eval.models.api_models:TemplateAPI.prefix_token_id",
        "lm_eval.models.openai_completions:LocalChatCompletion",
        "lm_eval.models.utils:normalize_gen_kwargs(gen_kwargs, default_max_gen_toks)",
        "lm_eval.models.utils:maybe_truncate(tokens, max_gen_toks, max_model_len, side, verbose)",
        "lm_eval.api.instance:Instance(doc, task_name, doc_id, repeats)",
        "lm_eval.api.instance:Instance.args",
        "aiohttp:ClientSession",
        "aiohttp:TCPConnector(limit, ssl)",
        "aiohttp:ClientTimeout(total)",
        "requests:get",
    ),
}
"""Per hooked lm-eval module, what its hook relies on, as ``"module:Qual.name(parameter, ...)"``. Instance attributes
set in ``__init__`` are in :data:`INSTANCE_ATTRIBUTES`; a backend's (``VLLM.model``, ``lora_request``,
``think_end_token`` ...) cannot be checked without a model."""

INSTANCE_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "lm_eval.evaluator": ("lm_eval.api.task:ConfigurableTask._filters",),
}
"""Per hooked module, the attributes of lm-eval objects its hook reads that exist only on an instance (set in
``__init__``): a test builds a real task and checks each (the hook itself finds them missing only at run time)."""

ENTRY_POINTS: dict[str, str] = {
    "lm_eval.tasks": "lm_eval.tasks.manager:discover_plugin_task_paths",
    "lm_eval.filters": "lm_eval.api.registry:load_plugins(group, registry)",
    "lm_eval.aggregations": "lm_eval.api.registry:load_plugins(group, registry)",
}
"""The entry-point groups trac-eval declares (pyproject ``[project.entry-points."<group>"]``), each with the lm-eval
function that reads it (lm-eval main: models, filters, metrics, aggregations; PR #4015: tasks; 0.4.13 reads none).
Where lm-eval reads ``lm_eval.tasks``, it indexes trac-eval's tasks itself and the ``lm_eval.tasks.manager`` hook steps
aside (:func:`trac_tasks.harness.lm_eval_hooks.index_package_tasks`); the filter ``trac_all_samples`` and the
aggregation ``trac`` are names a task YAML can use there instead of ``!function``. No ``lm_eval.models`` or
``lm_eval.metrics`` entry: lm-eval never lets a plugin replace a built-in model name (trac-eval extends ``vllm``,
``hf`` and ``local-completions``, it adds no backend), and it calls no metric function for a task with its own
``process_results`` (every TrAC task). docs/guide/reliability.md#lm-eval-releases has the compatibility table."""

FAST_CAPTURE = (
    "vllm:SamplingParams(flat_logprobs, detokenize, skip_special_tokens, spaces_between_special_tokens)",
    "vllm.logprobs:FlatLogprobs(start_indices, end_indices, token_ids, logprobs)",
    "vllm.v1.engine.detokenizer:IncrementalDetokenizer.from_new_request(tokenizer, request)",
    "vllm.v1.engine.detokenizer:IncrementalDetokenizer.update(new_token_ids, stop_terminated)",
    "vllm.v1.engine.detokenizer:IncrementalDetokenizer.get_next_output_text(finished, delta)",
    "vllm.v1.engine.detokenizer:IncrementalDetokenizer.num_output_tokens",
)
"""What vLLM's fast output path for TrAC generations relies on (``vllm_backend.fast_capture_supported``,
docs/architecture.md#vllm-backend): flat logprobs, no detokenization in the engine loop, the text made afterwards
by vLLM's own detokenizer."""

FALLBACK: dict[str, tuple[str, ...]] = {
    "lm_eval.models.vllm_causallms": (
        "vllm:LLMEngine.add_request(request_id, prompt, params, lora_request)",
        "vllm:LLMEngine.step",
        "vllm:LLMEngine.has_unfinished_requests",
        "vllm:LLMEngine.abort_request",
        "vllm.sampling_params:RequestOutputKind.FINAL_ONLY",
        *FAST_CAPTURE,
    ),
}
"""What a hook uses when present and works without: without vLLM's step API the hook generates a chunk through
``LLM.generate``, then probes it (the probes no longer interleave with the generations); without vLLM's fast output
path (:data:`FAST_CAPTURE`) the generations are detokenized in the engine loop and their logprobs come as
per-position dicts."""

EVALUATOR_IMPORTS = ("lm_eval.tasks.manager", "lm_eval.evaluator_utils")
"""Hooked modules that ``lm_eval.evaluator`` imports: one not loaded once it has loaded was renamed or moved."""

TRAC_HOOKS = ("lm_eval.evaluator", "lm_eval.evaluator_utils")
"""The hooks every TrAC task needs besides its backend's: the up-front checks and the expansion of its metrics."""

installed: set[str] = set()
"""Hooked modules whose hook is installed in this process."""
failed: dict[str, str] = {}
"""Hooked modules whose hook is not installed, with the reason."""
_version_checked: set[str] = set()
_SYMBOL = re.compile(r"(?P<module>[\w.]+):(?P<name>[\w.]+)(?:\((?P<params>[\w,\s]*)\))?")


@functools.cache
def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (``vllm`` finds the CPU build too, see
    ``harness.autoload``), or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def warn_if_untested(distribution: str) -> None:
    """Log one warning per process when the installed ``distribution`` is outside its ``TESTED`` range."""
    from packaging.specifiers import SpecifierSet

    version = installed_version(distribution)
    if distribution in _version_checked or version is None:
        return
    _version_checked.add(distribution)
    if not SpecifierSet(TESTED[distribution]).contains(version, prereleases=True):
        LOGGER.warning(
            "trac-eval: its hooks are tested with %s%s, this is %s %s; plain tasks are not affected, TrAC "
            "tasks may stop with an incompatibility error. Set TRAC_EVAL_DISABLE=1 to turn the hooks off.",
            distribution,
            TESTED[distribution],
            distribution,
            version,
        )


def symbol_problem(symbol: str) -> str | None:
    """Why ``symbol`` (``"module:Qual.name(parameter, ...)"``) is not what a hook expects, or None when it is."""
    match = _SYMBOL.fullmatch(symbol)
    name = f"{match['module']}:{match['name']}"
    try:
        found = importlib.import_module(match["module"])
        for part in match["name"].split("."):
            found = getattr(found, part)
    except AttributeError:
        return f"{name} is missing"
    except Exception as error:  # noqa: BLE001 - a module that is missing or fails to import
        return f"{name} is missing ({type(error).__name__}: {error})"
    wanted = [param.strip() for param in (match["params"] or "").split(",") if param.strip()]
    if not wanted:
        return None
    try:
        params = _parameter_names(found)
    except (TypeError, ValueError):
        return f"{name} has no inspectable signature"
    lacking = [param for param in wanted if param not in params]
    return f"{name} has no parameter {', '.join(lacking)}" if lacking else None


def _parameter_names(found: object) -> set[str]:
    """The parameter names of a callable, or the keys of a TypedDict (``vllm.TokensPrompt``)."""
    if isinstance(found, type) and hasattr(found, "__required_keys__"):
        return set(found.__required_keys__) | set(found.__optional_keys__)
    return set(inspect.signature(found).parameters)


def reads_entry_points(group: str) -> bool:
    """Whether the installed lm-eval reads the entry-point group ``group`` (:data:`ENTRY_POINTS`)."""
    return symbol_problem(ENTRY_POINTS[group]) is None


def problems(hook: str, *, with_fallbacks: bool = False) -> list[str]:
    """What differs among the symbols the hook on module ``hook`` relies on ([] when nothing does)."""
    symbols = REQUIRED[hook] + (FALLBACK.get(hook, ()) if with_fallbacks else ())
    return [problem for problem in map(symbol_problem, symbols) if problem]


def install_hook(hook: str, module: ModuleType, target: str) -> None:
    """Run the hook ``target`` (``"package.module:function"``) on the freshly executed lm-eval module ``hook`` when
    everything it relies on is there; otherwise, or when it raises, warn once and leave ``module`` untouched (the hook
    functions patch only after every check, so nothing is half applied). Never raises."""
    try:
        for distribution in TESTED:
            if distribution in sys.modules:
                warn_if_untested(distribution)
        if hook == "lm_eval.evaluator":
            for name in EVALUATOR_IMPORTS:
                if name not in sys.modules and name not in failed:
                    _fail(name, f"lm_eval.evaluator loaded without importing {name} (renamed or moved?)")
        reasons = problems(hook)
        if not reasons:
            module_name, function = target.split(":")
            getattr(importlib.import_module(module_name), function)(module)
    except Exception as error:  # noqa: BLE001 - trac-eval must never break lm-eval's own imports
        reasons = [f"the hook raised {type(error).__name__}: {error}"]
    if reasons:
        _fail(hook, "; ".join(reasons))
    else:
        installed.add(hook)


def _versions() -> str:
    return f"lm-eval {installed_version('lm_eval')}, vLLM {installed_version('vllm') or 'not installed'}"


def _fail(hook: str, reason: str) -> None:
    failed[hook] = reason
    LOGGER.warning(
        "trac-eval: hook on %s not installed (%s): %s. Plain lm-eval tasks run unchanged; TrAC tasks will "
        "not run. Set TRAC_EVAL_DISABLE=1 to turn trac-eval's hooks off.",
        hook,
        _versions(),
        reason,
    )


def require_trac_hooks(only_failed: bool = False) -> None:
    """Raise, naming the incompatibility, unless every hook a TrAC task needs (``TRAC_HOOKS``) is installed; the
    backend's own hook is checked by whoever knows the backend. ``only_failed``: complain only about hooks whose
    installation failed (a backend called directly, without lm-eval's evaluator ever imported, needs none)."""
    missing = [hook for hook in TRAC_HOOKS if hook not in installed and (hook in failed or not only_failed)]
    if missing:
        reasons = "; ".join(f"{hook}: {failed.get(hook, 'never imported (renamed or moved?)')}" for hook in missing)
        raise RuntimeError(
            f"trac-eval: TrAC tasks cannot run, trac-eval's hooks are not installed on this lm-eval "
            f"({_versions()}; tested: lm-eval{TESTED['lm_eval']}, vLLM{TESTED['vllm']}): {reasons}"
        )
