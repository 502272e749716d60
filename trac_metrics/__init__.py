"""trac_metrics: TrAC features, heads, cross-fitting and selective-prediction metrics on stored generations.

Pure numpy / scikit-learn / pandas: this package never imports lm-eval or an inference engine, so it can be
used on records written by any generator. See docs/method.md for the definitions every module implements and
docs/architecture.md#module-map for the layout.
"""

from trac_metrics._warnings import TracWarning

__all__ = ["TracWarning"]
