"""How ``weir-admin`` prints: aligned tables for people, JSON for machines."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO, TypeAlias

from .admin import Admin

#: A command as the parser runs it (``args.run``).
Command: TypeAlias = Callable[[Admin, argparse.Namespace], Awaitable[None]]


class UsageError(Exception):
    """A command line the tool cannot act on (exit code 2)."""


def emit(args: argparse.Namespace, data: object, headers: list[str], rows: Sequence[Sequence[object]]) -> None:
    """Print a command's result: ``data`` as JSON with ``--json``, else the table."""
    if args.json:
        print_json(data)
    else:
        print_table(headers, rows)


def jsonable(value: Any) -> Any:
    """Plain JSON values from the admin results (dataclasses, NamedTuples, enums, dicts with tuple keys)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: jsonable(v) for k, v in value._asdict().items()}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return value


def print_json(value: Any, out: TextIO = sys.stdout) -> None:
    json.dump(jsonable(value), out, indent=2, sort_keys=False)
    out.write("\n")


def print_table(headers: list[str], rows: Sequence[Sequence[object]], out: TextIO = sys.stdout) -> None:
    """Columns padded to their widest cell, as Kafka's tools print them."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    for row in [headers] + cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() + "\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)) and not hasattr(value, "_asdict"):
        return ",".join(_cell(v) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_asdict") and len(value) == 2:
        return f"{value[0]}-{value[1]}"  # a TopicPartition
    return str(value)
