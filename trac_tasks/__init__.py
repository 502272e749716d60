"""trac_tasks: the only code that touches lm-eval and the inference engines, in four rooms
(docs/architecture.md#trac_tasks-rooms):

- ``harness``: the lm-eval integration (start-up hook, lm-eval hooks, compatibility list, task functions);
- ``generation``: the engine-independent runner (switches, scheduling, probes, capture, thinking markers, progress);
- ``engines``: the hooks of lm-eval's ``vllm``, ``hf`` and ``local-completions`` backends and the Ray replicas;
- ``data``: the dataset loaders the task YAMLs name, the bundled demo set and the tiny offline model.

Importing the package is cheap (it is imported at interpreter start through ``trac_eval.pth``): it only registers
the finder that keeps the flat module paths of earlier releases importable (``trac_tasks.dataset_loaders`` in a
user's YAML, ``trac_tasks._autoload`` in an old ``.pth`` file) as the same module objects as their new paths.
"""

from __future__ import annotations

import importlib
import sys
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec

MOVED_MODULES = {
    "_autoload": "harness.autoload",
    "lm_eval_hooks": "harness.lm_eval_hooks",
    "compat": "harness.compat",
    "task_functions": "harness.task_functions",
    "runner": "generation.runner",
    "chunk": "generation.chunk",
    "probe": "generation.probe",
    "capture": "generation.capture",
    "thinking": "generation.thinking",
    "progress": "generation.progress",
    "config": "generation.config",
    "vllm_backend": "engines.vllm_backend",
    "hf_backend": "engines.hf_backend",
    "served_backend": "engines.served_backend",
    "completions_client": "engines.completions_client",
    "data_parallel": "engines.data_parallel",
    "dataset_loaders": "data.dataset_loaders",
    "demo_data": "data.demo_data",
    "tiny_model": "data.tiny_model",
}
"""Module name of an earlier release (under ``trac_tasks``) -> its path now."""


class _MovedModuleLoader(Loader):
    """Imports the module's new path and puts that module object under the old name (the import system returns
    whatever ``sys.modules`` holds after ``exec_module``)."""

    def __init__(self, new_name: str) -> None:
        self._new_name = new_name

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module) -> None:  # noqa: ANN001 - Loader protocol
        sys.modules[module.__name__] = importlib.import_module(self._new_name)


class _MovedModuleFinder(MetaPathFinder):
    """Finds ``trac_tasks.<old name>`` for the names in :data:`MOVED_MODULES` and nothing else."""

    def find_spec(self, fullname: str, path=None, target=None) -> ModuleSpec | None:  # noqa: ANN001
        package, _, name = fullname.partition(".")
        if package != __name__ or name not in MOVED_MODULES:
            return None
        return ModuleSpec(fullname, _MovedModuleLoader(f"{__name__}.{MOVED_MODULES[name]}"))


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
