"""trac_metrics: TrAC features, heads, cross-fitting and selective-prediction metrics on stored generations.

Pure numpy / scikit-learn / pandas: this package never imports lm-eval or an inference engine, so it can be
used on records written by any generator. Its subpackages follow the pipeline (docs/architecture.md#module-map):
``records`` → ``features`` (evidence, feature vectors, baselines) → ``heads`` (the head, cross-fitting, one
task's evaluation, saved heads) → ``selective`` (metrics, bootstrap) → ``reporting``; ``methods`` declares every
uncertainty method once, and ``cli`` is the ``trac`` command. See docs/method.md for the definitions every module
implements.
"""

from trac_metrics._warnings import TracWarning

__all__ = ["TracWarning"]
