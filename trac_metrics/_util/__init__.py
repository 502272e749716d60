"""Helpers shared by the stages: atomic file writes (:mod:`~trac_metrics._util.files`), memory checks before large
requests (:mod:`~trac_metrics._util.limits`) and an order-preserving process map
(:mod:`~trac_metrics._util.parallel`)."""
