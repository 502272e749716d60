"""The ``trac report --html`` writer: one self-contained HTML file (docs/architecture.md#command-line).

The page template, its style and script and the vendored chart library (uPlot, ``static/vendor/README.md``) are
package files, inlined into the page with its data: the file opens from disk with no network and no server, and its
Content-Security-Policy forbids every fetch. The data is JSON in a ``<script type="application/json">`` element and the
traces are base64 lines in ``<script type="text/plain">`` elements: data the browser never runs. Every ``<`` of the
JSON is written ``\\u003c``, so no text of a record can close its element; the script writes record text into the page
as text, never as markup. The same report gives the same bytes.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trac_metrics._util.files import atomic_write
from trac_metrics._util.parallel import Progress
from trac_metrics._warnings import TracWarning
from trac_metrics.features.vectors import TAIL_WINDOW
from trac_metrics.reporting.html.page_data import page_data
from trac_metrics.reporting.html.payloads import pair_payloads
from trac_metrics.reporting.html.prompts import question_prompts
from trac_metrics.reporting.html.tokens import TokenTexts, load_tokenizer, tokenizer_spec, unmatched_specs
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.report_model import ReportModel, report_model

STATIC = Path(__file__).resolve().parent / "static"
"""The page template, style, script and vendored libraries."""
STYLES = ("vendor/uPlot.min.css", "report.css")
SCRIPTS = ("vendor/uPlot.iife.min.js", "report.js")
_SLOT = re.compile(r"<!--trac:(style|script|data|traces)-->")
_UNSAFE_INLINE = re.compile(r"</(script|style)|<!--", re.IGNORECASE)


def _inline(names: Sequence[str]) -> str:
    """The package files ``names`` joined; an error when one could end the element it is inlined into."""
    parts = []
    for name in names:
        text = (STATIC / name).read_text(encoding="utf-8")
        if _UNSAFE_INLINE.search(text):
            raise ValueError(f"{name} cannot be inlined: it holds '</script', '</style' or '<!--'")
        parts.append(text)
    return "\n".join(parts)


_DOCS_SCHEMES = re.compile(r"(https?|file)://\S+")


def docs_url(given: str | None) -> str | None:
    """Where the page's definitions link (``<url>method.md#<heading>``): ``given`` (``trac report --docs-url``: an
    http(s) or file address of a ``docs/`` folder, a ``/`` added), else None: the page shows each definition in place
    and names its docs section without a link, as a checkout's docs are raw Markdown that a browser shows as source
    (docs/guide/reports.md#the-html-report-trac-report---html). Any other scheme is refused: the page would follow
    it."""
    if given is None:
        return None
    if not _DOCS_SCHEMES.fullmatch(given):
        raise ValueError(f"--docs-url {given!r}: give an http://, https:// or file:// address of the docs/ folder")
    return given if given.endswith("/") else given + "/"


def trac_version() -> str:
    """The installed trac-eval's version ("unknown" when it is not installed, e.g. run from a bare copy)."""
    try:
        return importlib.metadata.version("trac-eval")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def json_for_script(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element: compact, UTF-8, no NaN, every ``<`` escaped."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")


LATE_DATA = ("figures", "questions")
"""The parts of :func:`page_data` written after the script (``<script type="application/json" id="trac-<part>">``):
the page is drawn before the browser has read them, and the tabs that show them are built once it has."""


def render_page(data: Mapping[str, Any], traces: Sequence[Sequence[str]]) -> str:
    """The page: the template with its style, script, ``data`` (:func:`page_data`; its :data:`LATE_DATA` parts after
    the script) and each pair's trace lines."""
    late = "\n".join(
        f'<script type="application/json" id="trac-{part}">{json_for_script(data[part])}</script>' for part in LATE_DATA
    )
    slots = {
        "style": _inline(STYLES),
        "script": _inline(SCRIPTS),
        "data": json_for_script({key: value for key, value in data.items() if key not in LATE_DATA}),
        "traces": late
        + "\n"
        + "\n".join(
            f'<script type="text/plain" id="trac-traces-{index}">{chr(10).join(lines)}</script>'
            for index, lines in enumerate(traces)
        ),
    }
    template = (STATIC / "report.html").read_text(encoding="utf-8")
    return _SLOT.sub(lambda match: slots[match.group(1)], template)


def _tokenizers(
    models: Sequence[str], specs: Mapping[str, str], from_records: bool
) -> dict[str, tuple[TokenTexts | None, str | None, str]]:
    """Each model's ``(tokenizer, its name, why there is none)``, each tokenizer loaded once and held in one
    :class:`~trac_metrics.reporting.html.tokens.TokenTexts`, so the pairs it shades share its decoded texts; a
    tokenizer that is not loaded is said once, as a :class:`~trac_metrics._warnings.TracWarning` (its page note says
    it too)."""
    loaded: dict[tuple[str, bool], tuple[TokenTexts | None, str]] = {}
    chosen = {}
    for unmatched in unmatched_specs(models, specs):
        warnings.warn(
            f"--tokenizer {unmatched}=...: no run is of that model (the runs' models: {', '.join(models)})",
            TracWarning,
            stacklevel=3,
        )
    for model in models:
        name, local_only, why_not = tokenizer_spec(model, specs, from_records)
        if name is None:
            chosen[model] = (None, None, why_not)
            continue
        if (name, local_only) not in loaded:
            tokenizer, why_not = load_tokenizer(name, local_only)
            loaded[name, local_only] = (None if tokenizer is None else TokenTexts(tokenizer), why_not)
            if loaded[name, local_only][0] is None:
                warnings.warn(f"traces of {model} unshaded: {loaded[name, local_only][1]}", TracWarning, stacklevel=3)
        token_texts, why_not = loaded[name, local_only]
        chosen[model] = (token_texts, name, why_not)
    return chosen


def write_html_report(
    report: ReportData | ReportModel,
    path: str | os.PathLike[str],
    tokenizers: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    tokenizer_from_records: bool = False,
    tail_window: int = TAIL_WINDOW,
    docs: str | None = None,
) -> int:
    """Write the HTML report of ``report`` (its model, or the data to build it from: ``trac report --out --html``
    builds the model once for both) to ``path`` (atomically, its folder created) and return its size in bytes.

    Traces come from the pairs' :attr:`~trac_metrics.reporting.runs.PairRun.details` (records read with
    :func:`~trac_metrics.reporting.html.traces.primary_trace`); ``tokenizers`` maps a model to the tokenizer that
    turns its token ids into text (``""``: every model; :data:`~trac_metrics.reporting.html.tokens.NO_TOKENIZER`:
    none); a model it does not name gets none (plain text), or with ``tokenizer_from_records`` its own name's tokenizer
    from local files only (:func:`~trac_metrics.reporting.html.tokens.tokenizer_spec`). ``progress`` wraps the stream
    of pairs. ``tail_window`` is TUP's W, the tail each trace marks (docs/method.md#tail-and-low-confidence-fraction);
    ``docs`` where the definitions link (:func:`docs_url`).
    """
    model = report_model(report)
    data = model.data
    traced = [pair.model for pair in data.pairs if pair.details]  # a tokenizer only where there are traces to show
    chosen = _tokenizers(list(dict.fromkeys(traced)), tokenizers or {}, tokenizer_from_records)
    infos, lines, prompts = [], [], []
    for pair in progress(data.pairs) if progress else data.pairs:
        token_texts, name, why_not = chosen.get(pair.model, (None, None, ""))
        info, pair_lines = pair_payloads(pair, token_texts, name, why_not)
        infos.append(info)
        lines.append(pair_lines)
        prompts.append(question_prompts(pair))
    shown = page_data(model, infos, prompts)
    shown["settings"].update(version=trac_version(), docs=docs_url(docs), tail_window=tail_window)
    page = render_page(shown, lines)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    encoded = page.encode("utf-8")
    atomic_write(target, encoded)
    return len(encoded)
