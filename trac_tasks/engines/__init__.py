"""The TrAC hooks of lm-eval's ``vllm``, ``hf`` and ``local-completions`` backends, the served client and the Ray
replicas of data-parallel vLLM (docs/architecture.md#trac_tasks-rooms)."""
