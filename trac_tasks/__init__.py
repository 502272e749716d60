"""trac_tasks: the only code that touches lm-eval and the inference engines, in four rooms
(docs/architecture.md#trac_tasks-rooms):

- ``harness``: the lm-eval integration (start-up hook, lm-eval hooks, compatibility list, task functions);
- ``generation``: the engine-independent runner (switches, scheduling, probes, capture, thinking markers, progress);
- ``engines``: the hooks of lm-eval's ``vllm``, ``hf`` and ``local-completions`` backends and the Ray replicas;
- ``data``: the dataset loaders the task YAMLs name, the bundled demo set and the tiny offline model.

Importing the package is cheap and does nothing: it is imported at interpreter start through ``trac_eval.pth``.
"""
