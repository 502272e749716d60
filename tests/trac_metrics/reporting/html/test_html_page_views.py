"""The HTML report's views in a real browser (docs/guide/reports.md#the-html-report-trac-report---html), on a page
of one run: traces holding characters beyond U+FFFF before their end-of-thinking marker, shown as plain text
(``--tokenizer none``); document ids and metadata integers beyond 2**53; chat-template prompts that share one
instruction; definitions linked to a ``--docs-url``."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator

import pytest
from html_browser import loaded, opened
from html_report_runs import MARKER, STAMP, confidently_wrong_from_records, rewrite_records, write_tokenized_runs
from playwright.sync_api import BrowserContext, Page, expect

from trac_metrics._warnings import TracWarning
from trac_metrics.cli import main
from trac_metrics.methods import get
from trac_metrics.records import iter_records

pytestmark = pytest.mark.xdist_group("html_report_browser")

N_QUESTIONS = 12
ASTRAL = "𝐀𝐁𝐂 😀 𝑥 "
"""Characters beyond U+FFFF (math letters, an emoji): one Python character each, two UTF-16 code units."""
HUGE = 2**53 + 1
"""9007199254740993: the first integer a browser's JSON reads rounded (as 9007199254740992)."""
INSTRUCTION = "Solve the following problem. Think step by step, then put the final answer in a box."
DOCS = "https://example.org/trac/docs/"


def chat_prompt(doc: int) -> str:
    """A ChatML prompt: a system message, the user's shared instruction and question, the generation prompt."""
    return (
        "<|im_start|>system\nYou are a careful solver.<|im_end|>\n"
        f"<|im_start|>user\n{INSTRUCTION}\nQuestion {doc}: how much are {doc % 97} pastries?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer) -> dict:
    """One model × one task: every trace begins with :data:`ASTRAL`, document ``d`` is ``HUGE + 2d`` with the metadata
    integer ``id`` of the same value."""

    def change(record) -> dict:
        doc = HUGE + 2 * record.doc_id
        return {"doc_id": doc, "text": ASTRAL + record.text, "metadata": {**record.metadata, "id": doc}}

    root = tmp_path_factory.mktemp("one_run")
    runs = root / "runs"
    write_tokenized_runs(runs, tiny_tokenizer, ["model-a"], ["task-x"], N_QUESTIONS, k=2)
    rewrite_records(runs, "model-a", change)
    samples = runs / "model-a" / "model-a" / f"samples_task-x_{STAMP}.123456.jsonl"
    samples.parent.mkdir(parents=True)
    docs = [HUGE + 2 * doc for doc in range(N_QUESTIONS)]
    samples.write_text(
        "".join(
            json.dumps({"doc_id": doc, "arguments": {"gen_args_0": {"arg_0": chat_prompt(doc)}}}) + "\n" for doc in docs
        )
    )
    html = root / "one_run.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        main(["report", str(runs), "--html", str(html), "--tokenizer", "none", "--resamples", "20", "--docs-url", DOCS])
    (path,) = runs.glob("model-a/trac_records/*.jsonl")
    primaries = {record.doc_id: record for record in iter_records(path) if record.repeat == 0}
    return {"html": html, "runs": runs, "primaries": primaries}


def open_document(context: BrowserContext, one_run: dict, doc: int) -> Iterator[Page]:
    position = sorted(one_run["primaries"]).index(doc)
    return opened(context, f"{one_run['html'].as_uri()}#tab=questions&open=0:{position}", one_run["html"])


def test_the_end_of_thinking_badge_sits_at_the_marker_after_characters_beyond_u_ffff(context, one_run) -> None:
    """Issue 50: the page cuts a plain trace at the marker's offset as the browser counts it (UTF-16 code units)."""
    doc = HUGE + 2 * 5
    text = one_run["primaries"][doc].text
    assert text.startswith(ASTRAL) and text.count(MARKER) == 1
    with open_document(context, one_run, doc) as page:
        page.wait_for_selector(loaded("#question-view"), state="attached")
        before, after = page.eval_on_selector(
            "#question-view .trace",
            "box => { const eot = box.querySelector('.eot');"
            " return [eot.previousSibling.textContent, eot.nextSibling.textContent]; }",
        )
    assert before + after == text
    assert after.startswith(MARKER) and before == text[: text.index(MARKER)]


def test_integers_beyond_two_to_the_53_are_shown_and_filtered_exactly(context, one_run) -> None:
    """Issue 50: a document id and a metadata integer of 9007199254740993 read as written, not rounded."""
    with open_document(context, one_run, HUGE) as page:
        page.wait_for_selector(loaded("#question-view"), state="attached")
        assert page.inner_text("#question-view h3").endswith(f"document {HUGE}")
        metadata = page.eval_on_selector_all(
            "#question-view dl.metadata dt",
            "terms => terms.map(term => [term.textContent, term.nextSibling.textContent])",
        )
        assert ["id", str(HUGE)] in metadata
        page.select_option("#filter-field", "id")
        page.fill("#filter-field-value", str(HUGE))
        expect(page.locator("#question-list tbody tr")).to_have_count(1)
        assert page.inner_text("#question-list tbody tr td:nth-child(3)") == str(HUGE)
        page.fill("#filter-field-value", str(HUGE - 1))  # what a rounding page would have matched too
        expect(page.locator("#question-list tbody tr")).to_have_count(0)


def test_the_question_column_leaves_out_the_instruction_every_question_shares(context, one_run) -> None:
    """Issue 47: the instruction is said once above the list; each row shows its own question."""
    with opened(context, f"{one_run['html'].as_uri()}#tab=questions", one_run["html"]) as page:
        assert page.inner_text("#shared-instructions q") == INSTRUCTION
        shown = page.eval_on_selector_all(
            "#question-list tbody tr",
            "rows => rows.map(row => [row.children[2].textContent, row.children[3].textContent])",
        )
    assert len(shown) == N_QUESTIONS
    assert all(text == f"Question {doc}: how much are {int(doc) % 97} pastries?" for doc, text in shown), shown


def test_the_prompt_box_shows_the_users_message_and_the_chat_template_behind_a_toggle(context, one_run) -> None:
    with open_document(context, one_run, HUGE) as page:
        page.wait_for_selector(loaded("#question-view"), state="attached")
        assert page.locator("#question-view pre.prompt").all_inner_texts() == [
            f"{INSTRUCTION}\nQuestion {HUGE}: how much are {HUGE % 97} pastries?"
        ]
        assert "<|im_start|>" not in page.inner_text("#question-view .prompt-box")  # nor the system message
        assert "careful solver" not in page.inner_text("#question-view .prompt-box")
        page.click("#question-view details.raw-prompt summary")
        assert page.text_content("#question-view pre.raw-prompt") == chat_prompt(HUGE)


def marks(page: Page, selector: str) -> list[str]:
    return page.eval_on_selector_all(f"{selector} mark", "marks => marks.map(mark => mark.textContent)")


def test_search_hits_are_marked_in_the_list_and_in_the_opened_question(context, one_run) -> None:
    """Issue 47: a plain search marks its hits whatever their case; a typed regular expression marks what it
    matches."""
    with opened(context, f"{one_run['html'].as_uri()}#tab=questions", one_run["html"]) as page:
        page.fill("#question-search", "PASTRIES")
        expect(page.locator("#question-list mark")).to_have_count(N_QUESTIONS)
        assert marks(page, "#question-list") == ["pastries"] * N_QUESTIONS
        page.locator("#question-list tbody tr").first.click()
        page.wait_for_selector(loaded("#question-view"), state="attached")
        assert marks(page, "#question-view pre.prompt") == ["pastries"]
        low = [doc for doc in one_run["primaries"] if doc % 97 % 10 < 5]  # the count's last digit 0-4
        assert 0 < len(low) < N_QUESTIONS
        page.fill("#question-search", r"/how \w+ are \d*[0-4] /")
        page.press("#question-search", "Enter")
        expect(page.locator("#question-list tbody tr")).to_have_count(len(low))
        found = marks(page, "#question-list")
        assert sorted(found) == sorted(f"how much are {doc % 97} " for doc in low)


def test_confidently_wrong_says_why_it_lists_no_question(context, one_run) -> None:
    """Issue 47: a method whose most confident answers are all correct lists none and says so; the other filters
    emptying the list are named as the cause."""
    page_data = json.loads(
        one_run["html"].read_text(encoding="utf-8").split('id="trac-data">')[1].split("</script>")[0]
    )
    methods = page_data["leaderboard_methods"]
    label = {method["name"]: method["label"] for method in page_data["methods"]}
    chosen = {method: confidently_wrong_from_records(one_run["runs"], method) for method in methods}
    never = [method for method in methods if not chosen[method]]
    sometimes = [method for method in methods if chosen[method]]
    assert never and sometimes  # the seeded runs have both kinds
    with opened(context, f"{one_run['html'].as_uri()}#tab=questions&cw=1", one_run["html"]) as page:
        for method in never:
            page.select_option("#confidence-method", method)
            expect(page.locator("#question-count")).to_have_text("0 question(s)")
            note = page.inner_text("#confidently-wrong-note")
            assert note.startswith("None: all ") and f"of {label[method]}'s confidence" in note
        page.select_option("#confidence-method", sometimes[0])
        expect(page.locator("#question-count")).to_have_text(f"{len(chosen[sometimes[0]])} question(s)")
        assert page.inner_text("#confidently-wrong-note") == ""
        page.select_option("#filter-label", "correct")
        expect(page.locator("#question-count")).to_have_text("0 question(s)")
        assert "the other filters leave none" in page.inner_text("#confidently-wrong-note")


def test_side_by_side_with_one_run_says_there_is_nothing_to_compare(context, one_run) -> None:
    """Issue 47: one run is never put beside itself."""
    with opened(context, f"{one_run['html'].as_uri()}#tab=compare", one_run["html"]) as page:
        assert "every task of this report has one run" in page.inner_text("#compare-none")
        assert page.locator("#panel-compare select").count() == 0
    with open_document(context, one_run, HUGE) as page:
        page.wait_for_selector(loaded("#question-view"), state="attached")
        assert page.locator("#question-view .compare-button").count() == 0


def test_definitions_link_their_section_of_the_given_docs_address(context, one_run) -> None:
    with opened(context, one_run["html"].as_uri(), one_run["html"]) as page:
        header = page.locator("#pair-table thead th[data-key=trac]")
        header.locator("button.help").click()
        assert header.locator(".help-box a").get_attribute("href") == DOCS + get("trac").doc.removeprefix("docs/")
        assert page.locator("#report-footer a").get_attribute("href") == DOCS + "method.md"
