"""The error model: every tolerance the toolkit applies is derived here.

Notation follows Higham, *Accuracy and Stability of Numerical Algorithms* (2002), §2-3:
``u`` is the unit roundoff of a format (2**-p for p significand bits, implicit bit included),
``gamma(n, u) = n*u / (1 - n*u)`` bounds the relative error of n chained roundings.
"""
