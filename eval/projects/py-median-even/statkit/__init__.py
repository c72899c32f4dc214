"""Descriptive statistics helpers."""

from .descriptive import mean, median, mode, stdev, variance
from .summary import summarize

__all__ = ["mean", "median", "mode", "stdev", "variance", "summarize"]
