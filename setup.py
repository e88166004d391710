"""Builds the optional C record walk (protocol/_record_scan.c); metadata lives in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds and
protocol/record_scan.py serves with its pure-Python walk.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("protocol._record_scan", ["protocol/_record_scan.c"],
                             optional=True, extra_compile_args=["-O2"])])
