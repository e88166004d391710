"""Code generation for ``schema.py``: each struct's class, and its reader and writer per version.

Readers and writers are generated as Python source, one function per (struct, version), with
every run of consecutive fixed-width fields read or written by one precompiled ``struct``:
about half the time of a loop of per-field closures, on every request the broker decodes and
every response either side encodes or decodes. Field types are told apart by what they have
(a ``codec``: fixed width; an ``element``: an array), so this module needs nothing of schema.py.
"""

from __future__ import annotations

import keyword
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from . import primitives as p

if TYPE_CHECKING:  # for the annotations only: this module tells field types apart by what they have
    from .schema import Field, Struct

    FieldReader: TypeAlias = Callable[[Field, int, bool], p.Reader]
    FieldWriter: TypeAlias = Callable[[Field, int, bool], p.Writer]
    #: A tagged field as the writer sees it: (tag, name, default, writer).
    TaggedWriter: TypeAlias = tuple[int, str, Any, p.Writer]

_MISSING = object()  # an array argument not given: a fresh list per instance


def _is_array(field: Field) -> bool:
    return hasattr(field.type, "element")


def _codec(field: Field) -> struct.Struct:
    """The codec of a field that ``fixed_runs`` grouped as fixed-width (a primitive with one)."""
    return cast(struct.Struct, getattr(field.type, "codec", None))


def compile_reader(struct_: Struct, version: int, flexible: bool, field_reader: FieldReader) -> p.Reader:
    """The reader of ``struct_`` at ``version``: ``read(buf, pos) -> (obj, pos)``."""
    present = [f for f in struct_.fields if f.present(version)]
    plain = [f for f in present if not f.is_tagged(version)]
    # (a field is tagged in no version unless it has a tag; the test on tag is for the checker)
    tagged = {f.tag: (f.name, field_reader(f, version, flexible))
              for f in present if f.is_tagged(version) and f.tag is not None}
    set_in_body = {f.name for f in plain}
    namespace: dict[str, Any] = {"new": object.__new__, "cls": struct_.cls, "DecodeError": p.DecodeError}
    lines = ["def read(buf, pos):", "    obj = new(cls)"]
    for run in fixed_runs(plain):
        if isinstance(run, list):  # consecutive fixed-width fields: one unpack
            codec = struct.Struct(">" + "".join(_codec(f).format[1:] for f in run))
            namespace[f"unpack{len(namespace)}"] = codec.unpack_from
            targets = "".join(f"obj.{f.name}, " for f in run)
            lines += [f"    end = pos + {codec.size}",
                      "    if end > len(buf):",
                      f"        raise DecodeError(f'truncated: need {codec.size} bytes at {{pos}}')",
                      f"    {targets}= unpack{len(namespace) - 1}(buf, pos)",
                      "    pos = end"]
        else:
            name = f"read{len(namespace)}"
            namespace[name] = field_reader(run, version, flexible)
            lines.append(f"    obj.{run.name}, pos = {name}(buf, pos)")
    for field in struct_.fields:  # absent in this version, or tagged: the default
        if field.name not in set_in_body:
            lines.append(f"    obj.{field.name} = {default_expression(field, namespace)}")
    if flexible:  # almost always no tagged fields: one zero byte, read inline
        namespace["read_tags"] = tagged_reader(tagged)
        lines += ["    if pos < len(buf) and not buf[pos]:",
                  "        pos += 1",
                  "    else:",
                  "        pos = read_tags(buf, pos, obj)"]
    lines.append("    return obj, pos")
    return compile_source("\n".join(lines), namespace, "read")


def compile_writer(struct_: Struct, version: int, flexible: bool, field_writer: FieldWriter) -> p.Writer:
    """The writer of ``struct_`` at ``version``: ``write(out, obj)``."""
    present = [f for f in struct_.fields if f.present(version)]
    plain = [f for f in present if not f.is_tagged(version)]
    tagged = sorted(((f.tag, f.name, f.default, field_writer(f, version, flexible))
                     for f in present if f.is_tagged(version) and f.tag is not None), key=lambda item: item[0])
    namespace: dict[str, Any] = {}
    lines = ["def write(out, obj):"]
    for run in fixed_runs(plain):
        if isinstance(run, list):
            codec = struct.Struct(">" + "".join(_codec(f).format[1:] for f in run))
            name = f"pack{len(namespace)}"
            namespace[name] = codec.pack
            values = ", ".join(f"1 if obj.{f.name} else 0" if getattr(f.type, "name", None) == "bool"
                               else f"obj.{f.name}" for f in run)
            lines.append(f"    out += {name}({values})")
        else:
            name = f"write{len(namespace)}"
            namespace[name] = field_writer(run, version, flexible)
            lines.append(f"    {name}(out, obj.{run.name})")
    if flexible and tagged:
        namespace["write_tags"] = tagged_writer(tagged)
        at_default = []
        for _tag, name, default, _write in tagged:
            namespace[f"tag_default_{name}"] = default
            at_default.append(f"(obj.{name} is None or obj.{name} == tag_default_{name})")
        lines += [f"    if {' and '.join(at_default)}:",
                  "        out.append(0)  # no tagged field to write",
                  "    else:",
                  "        write_tags(out, obj)"]
    elif flexible:
        lines.append("    out.append(0)  # no tagged fields")
    if len(lines) == 1:
        lines.append("    pass")
    return compile_source("\n".join(lines), namespace, "write")


def compile_source(source: str, namespace: dict[str, Any], name: str) -> Callable[..., Any]:
    exec(compile(source, f"<schema {name}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    return function


def fixed_runs(fields: Sequence[Field]) -> list[list[Field] | Field]:
    """Fields in order, consecutive fixed-width ones grouped into lists."""
    runs: list[list[Field] | Field] = []
    for field in fields:
        if getattr(field.type, "codec", None) is not None:  # a fixed-width primitive
            if runs and isinstance(runs[-1], list):
                runs[-1].append(field)
            else:
                runs.append([field])
        else:
            runs.append(field)
    return runs


def default_expression(field: Field, namespace: dict[str, Any]) -> str:
    if _is_array(field) and field.default is None:
        return "[]"  # a fresh list per instance
    name = f"default{len(namespace)}"
    namespace[name] = field.default
    return name


def tagged_reader(tagged: dict[int, tuple[str, p.Reader]]) -> Callable[[p.ReadBuffer, int, object], int]:
    def read_tags(buf: p.ReadBuffer, pos: int, obj: object) -> int:
        count, pos = p.read_uvarint(buf, pos)
        if count > p.MAX_TAGGED_FIELDS:
            raise p.DecodeError(f"{count} tagged fields exceed {p.MAX_TAGGED_FIELDS}")
        for _ in range(count):
            tag, pos = p.read_uvarint(buf, pos)
            size, pos = p.read_uvarint(buf, pos)
            known = tagged.get(tag)
            if known is not None:
                value, end = known[1](buf, pos)
                if end != pos + size:
                    raise p.DecodeError(f"tagged field {tag} size mismatch")
                setattr(obj, known[0], value)
            pos += size  # unknown tags are skipped, as Kafka requires
        if pos > len(buf):
            raise p.DecodeError("truncated tagged fields")
        return pos
    return read_tags


def tagged_writer(tagged: list[TaggedWriter]) -> p.Writer:
    def write_tags(out: bytearray, obj: Any) -> None:
        present = [(tag, name, wr) for tag, name, default, wr in tagged
                   if getattr(obj, name) not in (None, default)]
        p.write_uvarint(out, len(present))
        for tag, name, write_field in present:
            body = bytearray()
            write_field(body, getattr(obj, name))
            p.write_uvarint(out, tag)
            p.write_uvarint(out, len(body))
            out += body
    return write_tags


def make_class(name: str, fields: Sequence[Field]) -> type:
    """A slotted class for a struct's instances, with a keyword ``__init__`` filling defaults."""
    names = tuple(f.name for f in fields)
    namespace: dict[str, Any] = {"MISSING": _MISSING}
    params, body = [], []
    for field in fields:
        if not field.name.isidentifier() or keyword.iskeyword(field.name):
            raise ValueError(f"{name}: field name {field.name!r} is not a Python identifier")
        if _is_array(field) and field.default is None:
            params.append(f"{field.name}=MISSING")  # a fresh list per instance when not given
            body.append(f"    self.{field.name} = [] if {field.name} is MISSING else {field.name}")
        else:
            namespace[f"default_{field.name}"] = field.default
            params.append(f"{field.name}=default_{field.name}")
            body.append(f"    self.{field.name} = {field.name}")
    source = "\n".join([f"def __init__(self, *, {', '.join(params)}):" if params else "def __init__(self):",
                         *(body or ["    pass"])])
    __init__ = compile_source(source, namespace, "__init__")

    def __repr__(self: object) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{name}({inner})"

    def __eq__(self: object, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in names)

    return type(name, (), {"__slots__": names, "__init__": __init__, "__repr__": __repr__,
                           "__eq__": __eq__, "__hash__": None, "FIELDS": names})
