"""Builds the optional C record walks (protocol/_record_scan.c, protocol/_record_decode.c); metadata lives in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds and
protocol/record_scan.py serves with its pure-Python walk.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("protocol._record_scan", ["protocol/_record_scan.c"],
                             optional=True, extra_compile_args=["-O2"]),
                   # the consumer's record walk; protocol/record_decode.py has the Python one
                   Extension("protocol._record_decode", ["protocol/_record_decode.c"],
                             optional=True, extra_compile_args=["-O2"]),
                   # the exactly-once sink's keyed partitioner; client/partitioner.py has the Python one
                   Extension("pipeline._murmur2", ["pipeline/_murmur2.c"],
                             optional=True, extra_compile_args=["-O2"])])
