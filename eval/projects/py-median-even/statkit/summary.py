"""A dictionary summary of a sample, as the reporting jobs print it."""

from .descriptive import mean, median, stdev


def summarize(values):
    data = list(values)
    if not data:
        return {"count": 0}
    summary = {
        "count": len(data),
        "min": min(data),
        "max": max(data),
        "mean": mean(data),
        "median": median(data),
    }
    if len(data) > 1:
        summary["stdev"] = stdev(data)
    return summary
