import pytest

from statkit import median, summarize


def test_median_even_length():
    assert median([1, 2, 3, 4]) == 2.5
    assert median([10, 2]) == 6


def test_median_even_length_unsorted():
    assert median([8, 1, 6, 3]) == pytest.approx(4.5)


def test_summary_median_even_length():
    assert summarize([4, 1, 3, 2])["median"] == 2.5


def test_median_odd_length_still_middle():
    assert median([3, 9, 1, 7, 5]) == 5
