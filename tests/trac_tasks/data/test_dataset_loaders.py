"""The dataset loaders the task YAMLs name (trac_tasks.data.dataset_loaders): clear errors naming the file."""

from __future__ import annotations

import pytest

from trac_tasks.data.dataset_loaders import local_jsonl


def test_local_jsonl_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        local_jsonl(data_file="nope.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{oops\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        local_jsonl(data_file=str(bad))
