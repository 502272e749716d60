"""Reports over stored runs (docs/architecture.md#report): record files → (model, task, decoding) pairs
(:mod:`~trac_metrics.reporting.runs`), the shared evaluations and bootstraps of a report
(:mod:`~trac_metrics.reporting.report_data`), the leaderboard, analyses, figures and table rendering, the
``trac summary`` table (:mod:`~trac_metrics.reporting.summary_table`), the ``trac report`` writer
(:mod:`~trac_metrics.reporting.report_writer`) and ``trac rescore`` (:mod:`~trac_metrics.reporting.rescore`).
"""
