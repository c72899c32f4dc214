import math

import pytest

from statkit import mean, median, mode, stdev, variance


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_median_odd_length():
    assert median([5, 1, 3]) == 3
    assert median([7]) == 7


def test_median_unsorted_input_is_not_modified():
    values = [9, 2, 5]
    assert median(values) == 5
    assert values == [9, 2, 5]


def test_mode_prefers_smallest_on_tie():
    assert mode([1, 2, 2, 3, 3]) == 2


def test_variance_and_stdev():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(32 / 7)
    assert stdev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7))


@pytest.mark.parametrize("fn", [mean, median, mode, variance])
def test_empty_input_is_an_error(fn):
    with pytest.raises(ValueError):
        fn([])
