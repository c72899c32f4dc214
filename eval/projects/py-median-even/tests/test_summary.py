from statkit import summarize


def test_summary_of_empty_sample():
    assert summarize([]) == {"count": 0}


def test_summary_of_single_value_has_no_stdev():
    assert summarize([4]) == {"count": 1, "min": 4, "max": 4, "mean": 4.0, "median": 4}


def test_summary_fields():
    summary = summarize([3, 1, 4, 1, 5])
    assert summary["count"] == 5
    assert summary["min"] == 1
    assert summary["max"] == 5
    assert summary["median"] == 3
    assert "stdev" in summary
