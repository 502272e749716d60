"""The parts of the report model (docs/architecture.md#report): every number ``trac report`` and its HTML page show,
computed once from the report's :class:`~trac_metrics.reporting.report_data.ReportData` and assembled by
:func:`trac_metrics.reporting.report_model.build_report_model`.

- :mod:`~trac_metrics.reporting.model.methods`: the methods shown, their labels and leaderboard blocks;
- :mod:`~trac_metrics.reporting.model.statistics`: pair-equal macros with their intervals, per-pair values, paired
  differences and ranked summaries;
- :mod:`~trac_metrics.reporting.model.pairs`: each pair's own intervals, figure points and question rows.
"""
