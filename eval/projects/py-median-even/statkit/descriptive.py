"""Single-number descriptions of a sample."""

import math
from collections import Counter


def _require_data(values, name):
    data = list(values)
    if not data:
        raise ValueError(f"{name}() of an empty sequence")
    return data


def mean(values):
    """The arithmetic mean."""
    data = _require_data(values, "mean")
    return sum(data) / len(data)


def median(values):
    """The middle value of the sorted sample."""
    data = sorted(_require_data(values, "median"))
    mid = len(data) // 2
    return data[mid]


def mode(values):
    """The most common value; the smallest one when several are tied."""
    data = _require_data(values, "mode")
    counts = Counter(data)
    best = max(counts.values())
    return min(value for value, count in counts.items() if count == best)


def variance(values):
    """The sample variance (n - 1 in the denominator)."""
    data = _require_data(values, "variance")
    if len(data) < 2:
        raise ValueError("variance() needs at least two values")
    m = mean(data)
    return sum((x - m) ** 2 for x in data) / (len(data) - 1)


def stdev(values):
    """The sample standard deviation."""
    return math.sqrt(variance(values))
