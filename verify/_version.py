"""The version of verify and the name it is installed under, for any module to read.

Kept apart from the package face (`verify/__init__.py`) so that low modules (results, the
registry, the worker) can read it without importing the public surface and everything it pulls in.
"""

__version__ = "0.2.0"
#: The name to `pip install` (the import package and command are `verify`; "verify" on PyPI is an
#: unrelated project).
DISTRIBUTION = "webgpu-verify"
