"""Package layout and the optional C extensions; metadata lives in pyproject.toml.

The repository keeps its top-level folders (``broker/``, ``protocol/``, ``client/``,
``pipeline/``); installed, they are ``weir.broker`` and so on, and the wheel holds
only ``weir/``, so a user's own ``client.py`` or ``pipeline/`` never shadows ours.
In the source tree, ``weir/broker``, ``weir/protocol``, ``weir/client`` and ``weir/pipeline``
are relative symlinks to those folders (committed), so mypy, pyright and editors resolve
``weir.*`` without an install; the wheel and sdist are built from the mapping below, never
from the links (they hold each file once).

C extensions:
- protocol/_record_scan.c: the broker's record walk (validation);
- protocol/_record_decode.c: the consumer's record walk;
- protocol/_record_arrow.c: the same walk into Arrow column buffers (``Consumer.getmany_arrow``);
- protocol/_record_encode.c: the producer's record encoder (and the sink's, from Arrow columns);
- client/_murmur2.c: the keyed partitioner (per key for the producer, per Arrow column for the sink).
Both of the last two read Arrow columns through protocol/_arrow_column.h.

``optional=True``: without a C compiler the install still succeeds and each has a pure-Python
counterpart (protocol/record_scan.py, record_decode.py, record_builder.py, client/partitioner.py).
"""

from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent
SUBPACKAGES = ("broker", "protocol", "client", "pipeline")


def _packages() -> tuple[list[str], dict[str, str]]:
    """Every package below the mapped folders, named under ``weir``, and the folder of each root."""
    packages, package_dir = ["weir", "weir.testing"], {"weir": "weir"}
    for folder in SUBPACKAGES:
        package_dir[f"weir.{folder}"] = folder
        for init in sorted((HERE / folder).rglob("__init__.py")):
            relative = init.parent.relative_to(HERE / folder)
            packages.append(".".join(("weir", folder, *relative.parts)))
    return packages, package_dir


def _extension(name: str, source: str) -> Extension:
    return Extension(name, [source], optional=True, extra_compile_args=["-O2"],
                     depends=["protocol/_arrow_column.h", "protocol/_record_cursor.h"])


PACKAGES, PACKAGE_DIR = _packages()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR,
      ext_modules=[_extension("weir.protocol._record_scan", "protocol/_record_scan.c"),
                   _extension("weir.protocol._record_decode", "protocol/_record_decode.c"),
                   _extension("weir.protocol._record_arrow", "protocol/_record_arrow.c"),
                   _extension("weir.protocol._record_encode", "protocol/_record_encode.c"),
                   _extension("weir.client._murmur2", "client/_murmur2.c")])
