"""A small declarative language for Kafka message schemas.

A message is declared once, with Kafka's own version ranges per field
("3+", "0-12"), nullable ranges, tagged fields and defaults, in the spirit of
Apache Kafka's JSON message definitions. For every (message, version) the
declaration is compiled once into plain reader/writer closures, so decoding a
request is a walk over a precomputed list rather than an interpretation of the
schema. Field names are Kafka's names in snake_case, which lets the tests check
every declaration against Kafka's JSON schemas field by field.

Decoded structs are instances of a class generated per struct with
``__slots__``; a field absent from a version keeps its default.
"""

from __future__ import annotations

import struct
from typing import Any, TypeAlias

from . import primitives as p
from . import schema_codegen
from .response_pieces import write_records

MAX_VERSION = 0x7FFF
_UNSET = object()  # distinguishes "no default given" from Kafka's explicit null default


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """'3+' -> (3, MAX); '0-12' -> (0, 12); '4' -> (4, 4); None/'none' -> None."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def _in(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


# --------------------------------------------------------------------------- types


class Primitive:
    """A scalar type: fixed width, or length-prefixed (string, bytes, records)."""

    def __init__(self, name: str, default: Any, codec: struct.Struct | None = None):
        self.name = name
        self.default = default
        self.codec = codec

    def reader(self, flexible: bool, nullable: bool) -> p.Reader:
        if self.codec is not None:
            return p.read_fixed(self.codec)
        if self.name == "uuid":
            return _read_uuid
        return _length_prefixed_reader(self.name, flexible, nullable)

    def writer(self, flexible: bool, nullable: bool) -> p.Writer:
        if self.codec is not None:
            if self.name == "bool":
                pack = self.codec.pack
                def write_bool(out: bytearray, value: Any) -> None:
                    out += pack(1 if value else 0)
                return write_bool
            return p.write_fixed(self.codec)
        if self.name == "uuid":
            return _write_uuid
        return _length_prefixed_writer(self.name, flexible, nullable)

    def __repr__(self) -> str:
        return self.name


def _read_uuid(buf: p.ReadBuffer, pos: int) -> tuple[bytes, int]:
    raw, pos = p.take(buf, pos, 16)
    return bytes(raw), pos


def _write_uuid(out: bytearray, value: bytes) -> None:
    if len(value) != 16:
        raise ValueError("uuid must be 16 bytes")
    out += value


def _length_prefixed_reader(kind: str, flexible: bool, nullable: bool) -> p.Reader:
    as_text = kind == "string"
    as_view = kind == "records"
    read_uvarint = p.read_uvarint
    fixed_len = (p.INT16 if kind == "string" else p.INT32)
    unpack_len, len_size = fixed_len.unpack_from, fixed_len.size
    DecodeError = p.DecodeError

    def read(buf: p.ReadBuffer, pos: int) -> tuple[str | p.ReadBuffer | None, int]:
        if flexible:
            length, pos = read_uvarint(buf, pos)
            length -= 1
        else:
            if pos + len_size > len(buf):
                raise DecodeError(f"truncated: need {len_size} bytes at {pos}")
            length = unpack_len(buf, pos)[0]
            pos += len_size
        if length < 0:
            if not nullable:
                raise DecodeError(f"null {kind} in a non-nullable field")
            return None, pos
        end = pos + length
        if end > len(buf):
            raise DecodeError(f"truncated: need {length} bytes at {pos}")
        raw = buf[pos:end]
        if as_text:
            try:
                return str(raw, "utf-8"), end
            except UnicodeDecodeError as exc:
                raise DecodeError(f"invalid utf-8: {exc}") from None
        return (raw if as_view else bytes(raw)), end

    return read


def _length_prefixed_writer(kind: str, flexible: bool, nullable: bool) -> p.Writer:
    pack_len = (p.INT16 if kind == "string" else p.INT32).pack
    is_records = kind == "records"

    def write(out: bytearray, value: Any) -> None:  # str, bytes-like, None; or a FileRegion (records)
        if value is None:
            if not nullable:
                raise ValueError(f"null {kind} in a non-nullable field")
            if flexible:
                out.append(0)
            else:
                out += pack_len(-1)
            return
        data = value.encode("utf-8") if isinstance(value, str) else value
        if flexible:
            p.write_uvarint(out, len(data) + 1)
        else:
            out += pack_len(len(data))
        if not (is_records and write_records(out, data)):  # a file region goes in by reference
            out += data

    return write


INT8 = Primitive("int8", 0, p.INT8)
INT16 = Primitive("int16", 0, p.INT16)
UINT16 = Primitive("uint16", 0, p.UINT16)
INT32 = Primitive("int32", 0, p.INT32)
INT64 = Primitive("int64", 0, p.INT64)
FLOAT64 = Primitive("float64", 0.0, p.FLOAT64)
BOOL = Primitive("bool", False, p.INT8)
STRING = Primitive("string", "")
BYTES = Primitive("bytes", b"")
RECORDS = Primitive("records", None)
UUID = Primitive("uuid", p.ZERO_UUID)


class Array:
    def __init__(self, element: Primitive | Struct) -> None:
        self.element = element

    def __repr__(self) -> str:
        return f"[]{self.element!r}"


class Field:
    """One field of a struct, with Kafka's version ranges."""

    def __init__(self, name: str, type: FieldType, versions: str = "0+", *, nullable: str | None = None,
                 tag: int | None = None, tagged: str | None = None, default: Any = _UNSET) -> None:
        self.name = name
        self.type = type
        self.versions = parse_versions(versions)
        self.nullable = parse_versions(nullable)
        self.tag = tag
        self.tagged = parse_versions(tagged) if tag is not None else None
        if default is not _UNSET:
            self.default = default
        elif isinstance(type, Primitive):
            self.default = type.default
        else:
            self.default = None  # arrays are filled with [] per instance, structs stay None

    def present(self, version: int) -> bool:
        return _in(self.versions, version)

    def is_tagged(self, version: int) -> bool:
        return _in(self.tagged, version)

    def is_nullable(self, version: int) -> bool:
        return _in(self.nullable, version)


class Struct:
    """A named list of fields; generates a slotted class for its instances."""

    def __init__(self, name: str, *fields: Field) -> None:
        self.name = name
        self.fields = fields
        self.cls = schema_codegen.make_class(name, fields)
        # keyed by (version, flexible), and by version alone for a Message (decode, encode_into)
        self._readers: dict[tuple[int, bool] | int, p.Reader] = {}
        self._writers: dict[tuple[int, bool] | int, p.Writer] = {}

    def __call__(self, **values: Any) -> Any:
        """An instance of the struct's generated class (Any to the checker, which cannot see it)."""
        return self.cls(**values)

    def __repr__(self) -> str:
        return self.name

    # -- compilation ---------------------------------------------------------

    def reader(self, version: int, flexible: bool) -> p.Reader:
        key = (version, flexible)
        compiled = self._readers.get(key)
        if compiled is None:
            compiled = self._readers[key] = self._compile_reader(version, flexible)
        return compiled

    def writer(self, version: int, flexible: bool) -> p.Writer:
        key = (version, flexible)
        compiled = self._writers.get(key)
        if compiled is None:
            compiled = self._writers[key] = self._compile_writer(version, flexible)
        return compiled

    def _compile_reader(self, version: int, flexible: bool) -> p.Reader:
        return schema_codegen.compile_reader(self, version, flexible, _field_reader)

    def _compile_writer(self, version: int, flexible: bool) -> p.Writer:
        return schema_codegen.compile_writer(self, version, flexible, _field_writer)


FieldType: TypeAlias = Primitive | Struct | Array


def _field_reader(field: Field, version: int, flexible: bool) -> p.Reader:
    nullable = field.is_nullable(version)
    kind = field.type
    if isinstance(kind, Primitive):
        return kind.reader(flexible, nullable)
    if isinstance(kind, Struct):
        return _nullable_struct_reader(kind.reader(version, flexible)) if nullable else kind.reader(version, flexible)
    element = kind.element
    read_element = (element.reader(version, flexible) if isinstance(element, Struct)
                    else element.reader(flexible, False))
    read_count = p.read_fixed(p.INT32)  # of a non-flexible array

    def read_array(buf: p.ReadBuffer, pos: int) -> tuple[list[Any] | None, int]:
        if flexible:
            raw, pos = p.read_uvarint(buf, pos)
            count = raw - 1
        else:
            count, pos = read_count(buf, pos)
        if count < 0:
            if not nullable:
                raise p.DecodeError(f"null array {field.name} in a non-nullable field")
            return None, pos
        if count > len(buf) - pos:  # every element takes at least one byte
            raise p.DecodeError(f"array {field.name} claims {count} elements")
        if count > p.MAX_ARRAY_ELEMENTS:
            raise p.DecodeError(f"array {field.name} of {count} elements exceeds {p.MAX_ARRAY_ELEMENTS}")
        items: list[Any] = []
        append = items.append
        for _ in range(count):
            item, pos = read_element(buf, pos)
            append(item)
        return items, pos

    return read_array


class FrozenArray(list[Any]):
    """An array value that many responses share and nothing changes once built (Metadata's
    partition entries of a topic): each field writer encodes it once and then copies the bytes.

    Not for elements that carry records (a file region goes into a response by reference).
    """

    __slots__ = ("encodings",)

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.encodings: dict[p.Writer, bytes] = {}


def _field_writer(field: Field, version: int, flexible: bool) -> p.Writer:
    nullable = field.is_nullable(version)
    kind = field.type
    if isinstance(kind, Primitive):
        return kind.writer(flexible, nullable)
    if isinstance(kind, Struct):
        return _nullable_struct_writer(kind.writer(version, flexible)) if nullable else kind.writer(version, flexible)
    element = kind.element
    write_element = (element.writer(version, flexible) if isinstance(element, Struct)
                     else element.writer(flexible, False))
    pack_count = p.INT32.pack

    def write_array(out: bytearray, items: list[Any] | None) -> None:
        if type(items) is FrozenArray:
            encoded = items.encodings.get(write_array)  # this writer is this field at one version
            if encoded is None:
                scratch = bytearray()
                write_elements(scratch, items)
                encoded = items.encodings[write_array] = bytes(scratch)
            out += encoded
            return
        write_elements(out, items)

    def write_elements(out: bytearray, items: list[Any] | None) -> None:
        if items is None:
            if not nullable:
                raise ValueError(f"null array {field.name} in a non-nullable field")
            if flexible:
                out.append(0)
            else:
                out += pack_count(-1)
            return
        if flexible:
            p.write_uvarint(out, len(items) + 1)
        else:
            out += pack_count(len(items))
        for item in items:
            write_element(out, item)

    return write_array


# A nullable struct field (e.g. DescribeTopicPartitions' Cursor) is preceded by an int8 marker, as
# Kafka's generated code writes it: -1 for null, 1 for present.
def _nullable_struct_reader(read_struct: p.Reader) -> p.Reader:
    read_marker = p.read_fixed(p.INT8)

    def read(buf: p.ReadBuffer, pos: int) -> tuple[Any, int]:
        marker, pos = read_marker(buf, pos)
        if marker < 0:
            return None, pos
        return read_struct(buf, pos)
    return read


def _nullable_struct_writer(write_struct: p.Writer) -> p.Writer:
    def write(out: bytearray, value: Any) -> None:
        if value is None:
            out += p.INT8.pack(-1)
        else:
            out += p.INT8.pack(1)
            write_struct(out, value)
    return write


class Message(Struct):
    """A top-level request or response body of one API key."""

    def __init__(self, name: str, api_key: int, versions: str, flexible: str | None, *fields: Field) -> None:
        super().__init__(name, *fields)
        self.api_key = api_key
        self.versions = parse_versions(versions)
        self.flexible = parse_versions(flexible)

    def is_flexible(self, version: int) -> bool:
        return _in(self.flexible, version)

    def decode(self, version: int, buf: p.ReadBuffer, pos: int = 0, *, exact: bool = True) -> Any:
        """Decode a body from ``pos``; with ``exact`` it must fill ``buf`` to the end.

        Apache Kafka ignores bytes after a request body, and librdkafka 2.16's
        admin Metadata v12 "all topics" request does carry three, so the broker
        decodes requests with ``exact=False``.
        """
        read = self._readers.get(version)  # also cached by version alone: the flexible flag follows from it
        if read is None:
            read = self._readers[version] = self.reader(version, self.is_flexible(version))
        obj, end = read(buf, pos)
        if exact and end != len(buf):
            raise p.DecodeError(f"{self.name} v{version}: {len(buf) - end} trailing bytes")
        return obj

    def encode_into(self, out: bytearray, version: int, obj: Any) -> None:
        write = self._writers.get(version)
        if write is None:
            write = self._writers[version] = self.writer(version, self.is_flexible(version))
        write(out, obj)

    def encode(self, version: int, obj: Any) -> bytes:
        out = bytearray()
        self.encode_into(out, version, obj)
        return bytes(out)
