"""Request and response schemas, one module per API key, named after the key (``ApiKey.FETCH``:
``fetch.py``).

``BY_KEY`` maps an api key to its module and imports the module on first use: a client that only
produces and consumes never builds the ~150 schemas of the admin, ACL and SCRAM APIs (``import
weir.client`` stays quick: tests/client/test_import_cost.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import cache
from types import ModuleType

from ..api_keys import ApiKey


@cache
def _module(api_key: int) -> ModuleType | None:
    try:
        name = f"{__name__}.{ApiKey(api_key).name.lower()}"
    except ValueError:  # a key Kafka has that we do not know
        return None
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:  # the module exists but one of its own imports failed
            raise
        return None  # a key we know by name but serve no schema for


class _SchemasByKey(Mapping[int, ModuleType]):
    """api key -> the module with its REQUEST and RESPONSE, imported when first asked for."""

    def __getitem__(self, api_key: int) -> ModuleType:
        module = _module(api_key)
        if module is None:
            raise KeyError(api_key)
        return module

    def __iter__(self) -> Iterator[int]:
        return (int(key) for key in ApiKey if _module(key) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: api key -> module with REQUEST and RESPONSE
BY_KEY: Mapping[int, ModuleType] = _SchemasByKey()
