"""The HTML report (``trac report --html FILE``): one self-contained page with the leaderboard, the figures and every
question's trace (docs/architecture.md#report).

- :mod:`~trac_metrics.reporting.html.traces`: the primary trace kept of each question while the records are read;
- :mod:`~trac_metrics.reporting.html.tokens`: token ids → text pieces with the model's tokenizer;
- :mod:`~trac_metrics.reporting.html.prompts`: each question's prompt, from lm-eval's samples files;
- :mod:`~trac_metrics.reporting.html.payloads`: each question's trace and prompt, compressed, loaded on demand;
- :mod:`~trac_metrics.reporting.html.page_data`: the numbers the page shows, from the report's data;
- :mod:`~trac_metrics.reporting.html.page`: the page (template, style, script, vendored uPlot) and its writer.
"""

from trac_metrics.reporting.html.page import write_html_report
from trac_metrics.reporting.html.traces import primary_trace

__all__ = ["primary_trace", "write_html_report"]
