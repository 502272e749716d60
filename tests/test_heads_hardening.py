"""Saved heads are data, written atomically and read against a schema.

- Writes: a write that fails half-way (a full disk, a file-size limit) leaves the old file byte-identical and no
  temporary file behind.
- Reads: every malformed head file is one line on stderr and exit status 2 from ``trac score`` (never a
  traceback), naming the file and the field; a head file never imports or runs anything.
- Property tests (hypothesis): random valid heads round-trip exactly; random valid ``trac fit`` heads score; random
  mutations of a fitted head into invalid ones are refused in one line.
"""

from __future__ import annotations

import copy
import errno
import io
import json
import math
import os
import resource
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_factory import pair_specs, write_runs

from trac_metrics._util import files
from trac_metrics.cli import main
from trac_metrics.features import PCE_FEATURE_NAMES
from trac_metrics.features.evidence import EvidenceOptions
from trac_metrics.heads import HEAD_FIELDS, FittedHead, HeadFormatError
from trac_metrics.heads.saved_heads import METADATA_FIELDS, fit_online_head, load_head
from trac_metrics.reporting.runs import load_pairs

# ----------------------------------------------------------------------------------------------- atomic writes


class _FullDisk:
    """A file handle whose first write puts ``n_bytes`` on the disk and then fails with ENOSPC."""

    def __init__(self, handle: Any, n_bytes: int) -> None:
        self.handle, self.n_bytes = handle, n_bytes

    def write(self, data: bytes) -> int:
        self.handle.write(data[: self.n_bytes])
        self.handle.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.handle.close()


def fill_disk_after(monkeypatch: pytest.MonkeyPatch, n_bytes: int = 10, complete_files: int = 0) -> None:
    """Make the writes of :mod:`trac_metrics._util.files` run out of disk space after ``n_bytes``, from the file after
    the first ``complete_files`` on."""
    opened = iter(range(10**9))

    def full_disk_open(*args: Any, **kwargs: Any) -> Any:
        handle = open(*args, **kwargs)  # noqa: SIM115 (closed by the caller's with block)
        return handle if next(opened) < complete_files else _FullDisk(handle, n_bytes)

    monkeypatch.setattr(files, "open", full_disk_open, raising=False)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` (temporary files included) with its content."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "table.csv"
    files.atomic_write(target, "old,content\n")
    fill_disk_after(monkeypatch)
    for data in ("new,content that is longer\n", b"\x89PNG new"):
        with pytest.raises(OSError, match="No space left on device") as error:
            files.atomic_write(target, data)
        assert error.value.errno == errno.ENOSPC and error.value.filename == str(target)
        assert folder_bytes(tmp_path) == {"table.csv": b"old,content\n"}
    with pytest.raises(OSError):
        files.atomic_write(tmp_path / "new.csv", "x" * 100)
    assert folder_bytes(tmp_path) == {"table.csv": b"old,content\n"}
    monkeypatch.undo()
    files.atomic_write(target, b"complete")
    assert folder_bytes(tmp_path) == {"table.csv": b"complete"}


def test_a_failed_head_save_keeps_the_old_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head = FittedHead(("a",), (0.0,), (), (0.5,), (2.0,), (1.5,), -0.25, metadata={"note": "old"})
    path = tmp_path / "head.json"
    head.save(path)
    before = folder_bytes(tmp_path)
    fill_disk_after(monkeypatch, n_bytes=40)
    with pytest.raises(OSError, match="No space left"):
        FittedHead(("a", "b"), (0.0, 1.0), (), (0.5, 0.1), (2.0, 1.0), (1.5, 2.5), 0.0).save(path)
    assert folder_bytes(tmp_path) == before and FittedHead.load(path) == head


def test_trac_fit_under_a_file_size_limit_keeps_the_old_head(runs: Path, tmp_path: Path) -> None:
    """A real partial write: the kernel refuses bytes beyond RLIMIT_FSIZE (EFBIG), as a full disk refuses them."""
    head_path = tmp_path / "head.json"
    command = [sys.executable, "-m", "trac_metrics.cli", "fit", str(runs), "--out", str(head_path), "--method", "pce"]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    before = folder_bytes(tmp_path)
    limit = len(before["head.json"]) // 2

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    result = subprocess.run(
        [*command, "--method", "trac"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=limit_file_size,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"trac fit: [Errno {errno.EFBIG}] {os.strerror(errno.EFBIG)}: '{head_path}'"
    assert folder_bytes(tmp_path) == before


# ----------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One stored run (one model, one task, 40 questions, K = 2)."""
    (folder,) = write_runs(tmp_path_factory.mktemp("runs"), pair_specs(["m1"], ["t1"], 40, seed=1), k=2, seed=2)
    return folder


@pytest.fixture(scope="module")
def fitted(runs: Path) -> dict[str, Any]:
    """A trac head with an abstention threshold, as ``trac fit`` saves it."""
    pairs = load_pairs([runs])
    return fit_online_head(pairs, "trac", calibration=pairs, target_risk=0.5).to_dict()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("heads")


@pytest.fixture(scope="module")
def marker_code(workdir: Path) -> tuple[str, Path]:
    """An equivalence spec whose module, if it were ever imported, creates a marker file."""
    marker = workdir / "code_ran"
    module = workdir / "evil.py"
    module.write_text(f"open({str(marker)!r}, 'w').close()\n\ndef f(a, b, kind):\n    return True\n")
    return f"{module}:f", marker


def score(head_path: Path, runs: Path, *options: str) -> tuple[int, str, str]:
    """``trac score HEAD RUNS`` in this process: exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(["score", str(head_path), str(runs), *options])
            status = 0
        except SystemExit as exit_info:
            status = exit_info.code
    return status, out.getvalue(), err.getvalue()


def refused(head_path: Path, runs: Path, *options: str) -> str:
    """The one stderr line of a ``trac score`` that must end with exit status 2."""
    status, _, err = score(head_path, runs, *options)
    assert status == 2 and "Traceback" not in err, err
    (line,) = err.splitlines()
    assert line.startswith("trac score: ")
    return line


# ----------------------------------------------------------------------------------------------- malformed files


def with_change(payload: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``payload`` with the field at ``path`` set to ``value`` (deleted when value is DROP)."""
    changed = copy.deepcopy(payload)
    parent = changed
    for key in path[:-1]:
        parent = parent[key]
    if value is DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return changed


DROP = object()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda head: "[" * 200_000, "not a JSON head file: nested too deeply"),
        (lambda head: b"\xff\xfe{}", "not valid JSON"),
        (lambda head: json.dumps(head)[:-40], "not valid JSON"),
        (lambda head: [1, 2], "expected a JSON object (a FittedHead), got a list of 2: [1, 2]"),
        (
            lambda head: with_change(head, ("feature_names",), 5),
            "field 'feature_names': expected a list of strings, got 5",
        ),
        (lambda head: with_change(head, ("intercept",), [1]), "field 'intercept': expected a number, got a list of 1"),
        (lambda head: with_change(head, ("metadata",), [1, 2]), "field 'metadata': expected a JSON object, got a list"),
        (
            lambda head: with_change(head, ("metadata", "training_questions"), DROP),
            "lacks the field 'metadata.training_questions'",
        ),
        (
            lambda head: with_change(head, ("metadata", "threshold"), "0.5"),
            "field 'metadata.threshold': expected null or a number in [0, 1], got '0.5'",
        ),
        (
            lambda head: with_change(head, ("metadata", "threshold"), math.nan),
            "field 'metadata.threshold': expected null or a number in [0, 1], got nan",
        ),
        (
            lambda head: with_change(head, ("metadata", "target_risk"), None),
            "field 'metadata.target_risk': expected a number in [0, 1], as the head has a threshold, got None",
        ),
        (
            lambda head: with_change(head, ("feature_names",), [*head["feature_names"][:-1], "other"]),
            "field 'feature_names': expected the columns of a trac head with n_bins=8",
        ),
        (
            lambda head: with_change(head, ("metadata", "evidence_options", "n_bins"), 4),
            "field 'feature_names': expected the columns of a trac head with n_bins=4",
        ),
        (
            lambda head: with_change(head, ("metadata", "evidence_options", "n_bins"), 10**12),
            "field 'feature_names': expected the columns of a trac head with n_bins=1000000000000",
        ),
        (lambda head: with_change(head, ("coef",), head["coef"][:-1]), "field 'coef': expected 32 numbers"),
        (
            lambda head: with_change(head, ("coef",), [math.inf, *head["coef"][1:]]),
            "field 'coef': expected finite numbers, got a list of 32: [inf,",
        ),
        (lambda head: with_change(head, ("scaler_scale",), [0.0] * 32), "field 'scaler_scale': expected positive"),
        (
            lambda head: with_change(head, ("indicator_features",), [3, 1]),
            "field 'indicator_features': expected increasing",
        ),
        (
            lambda head: with_change(head, ("metadata", "method"), "sc_modal"),
            "field 'metadata.method': expected one of ('trac', 'pce', 'tup', 'cf') "
            "(the head was not written by trac fit)",
        ),
        (
            lambda head: with_change(head, ("metadata", "training_pairs", 0, "decoding"), {"temperature": [0.7]}),
            "field 'metadata.training_pairs[0].decoding': expected a JSON object of finite numbers, strings or nulls",
        ),
        (
            lambda head: with_change(head, ("metadata", "evidence_options", "low_threshold"), "-2"),
            "field 'metadata.evidence_options': low_threshold must be a finite number, got '-2'",
        ),
        (lambda head: with_change(head, ("version",), True), "field 'version': expected 1"),
        (lambda head: with_change(head, ("metadata", "unexpected"), 1), "unknown field 'metadata.unexpected'"),
    ],
)
def test_each_malformed_head_file_is_one_line_naming_the_file_and_the_field(
    fitted: dict[str, Any], runs: Path, tmp_path: Path, change: Any, message: str
) -> None:
    content = change(fitted)
    path = tmp_path / "head.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    line = refused(path, runs)
    assert line.startswith(f"trac score: {path}: ") and message in line, line
    with pytest.raises(HeadFormatError):
        load_head(path)


def test_the_fitted_head_itself_scores(fitted: dict[str, Any], runs: Path, tmp_path: Path) -> None:
    path = tmp_path / "head.json"
    path.write_text(json.dumps(fitted))
    status, out, _ = score(path, runs)
    assert status == 0 and "trac head fitted on 40 questions" in out


# ----------------------------------------------------------------------------------------------- no code runs


def test_a_head_file_never_runs_the_code_it_names(
    fitted: dict[str, Any], runs: Path, tmp_path: Path, marker_code: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, marker = marker_code
    monkeypatch.delitem(sys.modules, "this", raising=False)
    path = tmp_path / "head.json"
    for stored in (spec, "this:s"):
        path.write_text(json.dumps(with_change(fitted, ("metadata", "evidence_options", "equivalence"), stored)))
        assert load_head(path).metadata["evidence_options"]["equivalence"] == stored  # loading is data only
        assert refused(path, runs) == (
            f"trac score: the head was fitted with --equivalence {stored!r} but scoring "
            "was given the built-in equivalence: give trac score the equivalence the head "
            "was fitted with (a head file never names code to run by itself)"
        )
        assert "this" not in sys.modules and not marker.exists()
        other = f"{tmp_path / 'other.py'}:g"
        assert f"but scoring was given --equivalence {other!r}" in refused(path, runs, "--equivalence", other)
        assert not marker.exists()
    status, out, _ = score(path, runs, "--equivalence", "this:s")  # asked for on the command line: it is used
    assert "this" in sys.modules and "Beautiful is better than ugly" in out and status == 2


def test_score_needs_the_equivalence_a_head_was_fitted_with(runs: Path, tmp_path: Path) -> None:
    checks = tmp_path / "checks.py"
    checks.write_text("def exact(answer, other, kind):\n    return answer == other\n")
    spec, head_path = f"{checks}:exact", tmp_path / "head.json"
    with redirect_stdout(io.StringIO()):
        main(["fit", str(runs), "--out", str(head_path), "--method", "pce", "--equivalence", spec])
    assert FittedHead.load(head_path).metadata["evidence_options"]["equivalence"] == spec
    assert f"fitted with --equivalence {spec!r} but scoring was given the built-in" in refused(head_path, runs)
    status, out, _ = score(head_path, runs, "--equivalence", spec)
    assert status == 0 and "pce head fitted on 40 questions" in out
    plain = tmp_path / "plain.json"
    with redirect_stdout(io.StringIO()):
        main(["fit", str(runs), "--out", str(plain), "--method", "pce"])
    assert f"fitted with the built-in equivalence but scoring was given --equivalence {spec!r}" in refused(
        plain, runs, "--equivalence", spec
    )


# ----------------------------------------------------------------------------------------------- properties

FINITE = st.floats(allow_nan=False, allow_infinity=False)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | FINITE | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=12,
)


@st.composite
def heads(
    draw: st.DrawFn,
    n_features: int | None = None,
    numbers: st.SearchStrategy[float] = FINITE,
    metadata: st.SearchStrategy[dict[str, Any]] | None = None,
) -> FittedHead:
    """A valid FittedHead: random sizes, missingness indicators, parameters and JSON metadata."""
    n = draw(st.integers(1, 6)) if n_features is None else n_features
    indicators = sorted(draw(st.sets(st.integers(0, n - 1))))
    columns = n + len(indicators)
    vector = lambda size, values=numbers: tuple(draw(st.lists(values, min_size=size, max_size=size)))  # noqa: E731
    return FittedHead(
        feature_names=tuple(draw(st.lists(st.text(max_size=6), min_size=n, max_size=n))),
        impute_means=vector(n),
        indicator_features=tuple(indicators),
        scaler_mean=vector(columns),
        scaler_scale=vector(columns, numbers.filter(lambda value: value > 0)),
        coef=vector(columns),
        intercept=draw(numbers),
        metadata=draw(
            metadata if metadata is not None else st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=4)
        ),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=heads())
def test_valid_heads_round_trip_exactly(head: FittedHead, workdir: Path) -> None:
    path = workdir / "round_trip.json"
    head.save(path)
    loaded = FittedHead.load(path)
    assert loaded == head and loaded.to_dict() == head.to_dict()
    assert json.loads(path.read_text(encoding="utf-8")) == head.to_dict()


SHARES = st.floats(0.0, 1.0)
PAIR_SUMMARIES = st.lists(
    st.fixed_dictionaries(
        {
            "model": st.text(max_size=6),
            "task": st.text(max_size=6),
            "decoding": st.dictionaries(st.text(max_size=5), st.none() | st.text(max_size=4) | FINITE, max_size=3),
            "questions": st.integers(1, 10**6),
            "accuracy": SHARES,
        }
    ),
    min_size=1,
    max_size=3,
)


@st.composite
def online_metadata(draw: st.DrawFn) -> dict[str, Any]:
    """Metadata of a pce head as ``trac fit`` writes it, with or without a threshold."""
    calibrated = draw(st.booleans())
    return {
        "method": "pce",
        "evidence_options": EvidenceOptions().to_dict(),
        "training_pairs": draw(PAIR_SUMMARIES),
        "training_questions": draw(st.integers(1, 10**6)),
        "threshold": draw(SHARES) if calibrated else None,
        "target_risk": draw(st.floats(0.0, 0.99)) if calibrated else None,
        "calibration_coverage": draw(SHARES) if calibrated else None,
        "calibration_risk": draw(SHARES) if calibrated else None,
        "calibration_pairs": draw(PAIR_SUMMARIES) if calibrated else None,
    }


@pytest.mark.filterwarnings("ignore")  # extreme random parameters overflow to NaN scores: written as null
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=heads(n_features=len(PCE_FEATURE_NAMES), numbers=st.floats(-100, 100), metadata=online_metadata()))
def test_valid_trac_fit_heads_score(head: FittedHead, runs: Path, workdir: Path) -> None:
    head = replace(head, feature_names=PCE_FEATURE_NAMES)
    path, scores = workdir / "online.json", workdir / "scores.jsonl"
    head.save(path)
    status, out, err = score(path, runs, "--out", str(scores))
    assert status == 0, err
    assert f"pce head fitted on {head.metadata['training_questions']} questions" in out
    lines = [json.loads(line, parse_constant=refuse_constant) for line in scores.read_text().splitlines()]
    assert len(lines) == 40 and all(line["score"] is None or 0 <= line["score"] <= 1 for line in lines)


def refuse_constant(name: str) -> None:
    """json.loads hook: NaN / Infinity are not JSON."""
    raise AssertionError(f"{name} written into a JSON file")


# Fields of a fitted trac head and, per kind of field, values that kind never accepts.
NON_LISTS = ["x", 1, 1.5, True, None, {}]
NON_NUMBERS = ["x", True, None, [], {}, [1]]
WRONG_VALUES = {
    "constant": ["x", 2, [], {}, True],
    "strings": [*NON_LISTS, [1], [None], [["a"]]],
    "numbers": [*NON_LISTS, ["x"], [True], [None], [[1.0]]],
    "integers": [*NON_LISTS, [1.5], ["0"], [True]],
    "number": NON_NUMBERS,
    "count": [*NON_NUMBERS, 0, -1, 1.5],
    "share": [*NON_NUMBERS, -0.5, 1.5],
    "object": ["x", 1, True, None, [], [1]],
    "string": [1, True, None, [], {}],
    "pairs": [*NON_LISTS, [], [1], [{}]],
}
OPTIONS, PAIR = ("metadata", "evidence_options"), ("metadata", "training_pairs", 0)
FIELD_KINDS: dict[tuple[Any, ...], str] = {
    ("kind",): "constant",
    ("version",): "constant",
    ("feature_names",): "strings",
    ("impute_means",): "numbers",
    ("indicator_features",): "integers",
    ("scaler_mean",): "numbers",
    ("scaler_scale",): "numbers",
    ("coef",): "numbers",
    ("intercept",): "number",
    ("metadata",): "object",
    ("metadata", "method"): "constant",
    OPTIONS: "object",
    (*OPTIONS, "answer_kind"): "constant",
    (*OPTIONS, "equivalence"): "constant",
    (*OPTIONS, "n_bins"): "count",
    (*OPTIONS, "tail_window"): "count",
    (*OPTIONS, "low_threshold"): "number",
    ("metadata", "training_pairs"): "pairs",
    ("metadata", "training_questions"): "count",
    ("metadata", "threshold"): "share",
    ("metadata", "target_risk"): "share",
    ("metadata", "calibration_coverage"): "share",
    ("metadata", "calibration_risk"): "share",
    ("metadata", "calibration_pairs"): "pairs",
    (*PAIR, "model"): "string",
    (*PAIR, "task"): "string",
    (*PAIR, "decoding"): "object",
    (*PAIR, "questions"): "count",
    (*PAIR, "accuracy"): "share",
}
NUMBER_FIELDS = [path for path, kind in FIELD_KINDS.items() if kind in ("number", "share")] + [
    (name, 0) for name in ("impute_means", "scaler_mean", "scaler_scale", "coef")
]
LIST_FIELDS = ["feature_names", "impute_means", "indicator_features", "scaler_mean", "scaler_scale", "coef"]
PLACEHOLDER = "@@replaced@@"


def assert_all_fields_covered() -> None:
    assert {path[-1] for path in FIELD_KINDS if len(path) == 1} == set(HEAD_FIELDS)
    assert {path[-1] for path in FIELD_KINDS if path[:-1] == ("metadata",)} == set(METADATA_FIELDS)


@st.composite
def broken_head_files(draw: st.DrawFn, payload: dict[str, Any], code_spec: str) -> str | bytes:
    """The JSON text (or bytes) of ``payload`` changed in one way that makes it an invalid head file."""
    text = lambda changed, token=None: json.dumps(changed).replace(f'"{PLACEHOLDER}"', token or "")  # noqa: E731
    fields = sorted(FIELD_KINDS, key=str)
    how = draw(
        st.sampled_from(
            [
                "drop",
                "wrong type",
                "not finite",
                "length",
                "deep",
                "top level",
                "truncated",
                "extra field",
                "code",
                "not utf-8",
            ]
        )
    )
    if how == "drop":
        return text(with_change(payload, draw(st.sampled_from(fields)), DROP))
    if how == "wrong type":
        path = draw(st.sampled_from(fields))
        return text(with_change(payload, path, draw(st.sampled_from(WRONG_VALUES[FIELD_KINDS[path]]))))
    if how == "not finite":
        token = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]))
        return text(with_change(payload, draw(st.sampled_from(sorted(NUMBER_FIELDS, key=str))), PLACEHOLDER), token)
    if how == "length":
        name = draw(st.sampled_from(LIST_FIELDS))
        values = payload[name]
        extra = "extra" if name == "feature_names" else len(payload["feature_names"])
        shorter = values[:-1] if values and draw(st.booleans()) else [*values, extra]
        return text(with_change(payload, (name,), shorter))
    if how == "deep":
        depth = draw(st.sampled_from([2, 100, 5000, 200_000]))
        return text(with_change(payload, draw(st.sampled_from(fields)), PLACEHOLDER), "[" * depth + "]" * depth)
    if how == "top level":
        return draw(st.sampled_from(["[]", "5", "null", '"head"', "true", json.dumps([payload]), ""]))
    if how == "truncated":
        whole = json.dumps(payload)
        return whole[: draw(st.integers(0, len(whole) - 2))]
    if how == "extra field":
        where = draw(st.sampled_from([(), ("metadata",), OPTIONS, PAIR]))
        changed = copy.deepcopy(payload)
        target = changed
        for key in where:
            target = target[key]
        target["unexpected"] = draw(JSON_VALUES)
        return text(changed)
    if how == "code":
        spec = draw(st.sampled_from([code_spec, "this:s", "os:system"]))
        return text(with_change(payload, (*OPTIONS, "equivalence"), spec))
    return b"\xff" + json.dumps(payload).encode()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_broken_head_files_are_refused_in_one_line(
    data: st.DataObject, fitted: dict[str, Any], runs: Path, workdir: Path, marker_code: tuple[str, Path]
) -> None:
    assert_all_fields_covered()
    spec, marker = marker_code
    content = data.draw(broken_head_files(fitted, spec))
    path = workdir / "broken.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    had_this = "this" in sys.modules
    line = refused(path, runs)
    assert str(path) in line or "equivalence" in line
    assert not marker.exists() and ("this" in sys.modules) == had_this
