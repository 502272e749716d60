"""trac_tasks: the only code that touches lm-eval and the inference engines.

Task discovery (``_autoload``, ``lm_eval_hooks``), the capture + probe hooks of the vLLM and HF backends, and the
functions and dataset loaders the YAML files in ``task_configs`` call. Importing the package itself is cheap: it is
imported at interpreter start through ``trac_eval.pth``.
"""
