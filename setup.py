"""The optional C extension; everything else about the package is in pyproject.toml.

odradek/wire/_speedups.c walks the records of produced batches (see odradek/wire/records.py).
It is `optional`: where there is no C compiler or no Python headers, setuptools warns and the
install goes on without it, and records.py uses its Python walkers instead. An editable
install (`pip install -e .`, as tools/venv.sh does) builds it into the source tree.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("odradek.wire._speedups", ["odradek/wire/_speedups.c"], optional=True),
    ],
)
