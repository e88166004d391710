"""Builds the optional C extensions; metadata lives in pyproject.toml.

- protocol/_record_scan.c: the broker's record walk (validation);
- protocol/_record_decode.c: the consumer's record walk;
- protocol/_record_encode.c: the producer's record encoder (and the sink's, from Arrow columns);
- pipeline/_murmur2.c: the exactly-once sink's keyed partitioner.
Both of the last two read Arrow columns through protocol/_arrow_column.h.

``optional=True``: without a C compiler the install still succeeds and each has a pure-Python
counterpart (protocol/record_scan.py, record_decode.py, record_builder.py, client/partitioner.py).
"""

from setuptools import Extension, setup


def _extension(name: str, source: str) -> Extension:
    return Extension(name, [source], optional=True, extra_compile_args=["-O2"],
                     depends=["protocol/_arrow_column.h"])


setup(ext_modules=[_extension("protocol._record_scan", "protocol/_record_scan.c"),
                   _extension("protocol._record_decode", "protocol/_record_decode.c"),
                   _extension("protocol._record_encode", "protocol/_record_encode.c"),
                   _extension("pipeline._murmur2", "pipeline/_murmur2.c")])
