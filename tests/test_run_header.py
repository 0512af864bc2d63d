"""perfmodel.lab.run_header: what validate reads from a run log's header is checked once, by hand-picked cases."""

import json

import pytest

from perfmodel.lab.run_header import MAX_COUNT, ValidateError, check_config, count
from trainers.log import RunLogError, read_run_log


@pytest.mark.parametrize("value", [4, 4.0, MAX_COUNT])
def test_a_count_is_a_positive_integer(value):
    assert count({"batch": value}, "batch", None, "log") == int(value)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "4", None, [], {}, float("nan"), float("inf"), 1e300,
                                   MAX_COUNT + 2])
def test_anything_else_is_one_error_naming_the_key(value):
    with pytest.raises(ValidateError, match="log: batch must be a positive integer"):
        count({"batch": value}, "batch", None, "log")


def test_an_absent_count_takes_its_default():
    assert count({}, "ranks", 1, "log") == 1
    with pytest.raises(ValidateError):
        count({}, "batch", None, "log")


@pytest.mark.parametrize("cfg,key", [([], "config"), ({"batch": 0}, "batch"), ({"daso_b": 0}, "daso_b"),
                                     ({"bucket_mb": None}, "bucket_mb"), ({"bucket_mb": -1}, "bucket_mb"),
                                     ({"overlap": "yes"}, "overlap"), ({"model": []}, "model"),
                                     ({"tern_lanes": ""}, "tern_lanes")])
def test_config_values_of_the_wrong_kind_are_refused(cfg, key):
    with pytest.raises(ValidateError, match=key):
        check_config(cfg, "log")


def test_config_values_the_trainers_write_pass():
    cfg = {"model": "lenet", "batch": 32, "threads": 1, "daso_b": None, "daso_w": None, "bucket_mb": 25.0,
           "overlap": True, "tern_fp32_last": False, "tern_lanes": "auto", "accumulate": 2}
    assert check_config(cfg, "log") is cfg


def test_a_record_whose_type_is_not_text_is_a_log_error(tmp_path):
    f = tmp_path / "run.jsonl"
    f.write_text(json.dumps({"type": "header", "schema": 1}) + "\n" + json.dumps({"type": ["step"]}) + "\n")
    with pytest.raises(RunLogError, match="line 2's type is not text"):
        read_run_log(f)
