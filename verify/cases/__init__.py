"""Hypothesis strategies that draw cases for each kernel family."""

from verify.cases.case import Case

__all__ = ["Case"]
