"""An error answer to any request, built from the request by its schemas (Kafka's ``getErrorResponse``).

Kafka writes ``getErrorResponse`` by hand for every request class; here one walk over the
response schema does it for every API. The answer mirrors the request: each response array
whose elements carry an error (a field ``error_code`` or ``*_error_code``) gets one element per
element of the request array it answers, with the request's identity fields copied (topic name,
partition index, group id, transactional id, coordinator key...), and the error is written at
the innermost level so mirrored: per partition where the answer is per partition, else per
topic or group, else once for the whole request. With ``whole_request`` it is written at the
outermost level that carries an error instead (Fetch's session errors: the top-level field and
no partitions). The request's arrays are matched to the response's by name first, else the first
array of the request at that level (Fetch's ``topics`` over ``forgotten_topics_data``).

Everything else keeps the value Kafka gives an unanswered field: -1 for offsets, timestamps,
ids and epochs (``base_offset``, ``high_watermark``, ``producer_id``, ``node_id``...), null for
nullable strings (``error_message``), empty arrays, zero otherwise.

``split`` cuts the part of a request that names one topic (and partition) out of it, so that
an error can be answered for that part while the rest of the request is handled; ``merge``
puts the two answers back together.
"""

from __future__ import annotations

import copy
from typing import Any

from .schema import INT64, STRING, Array, Primitive, Struct

#: Fields that say what an element answers: copied from the request element it mirrors.
_ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("name", "topic", "topic_name"),
    "topic": ("topic", "name", "topic_name"),
    "topic_name": ("topic_name", "topic", "name"),
    "index": ("index", "partition", "partition_index"),
    "partition": ("partition", "partition_index", "index"),
    "partition_index": ("partition_index", "partition", "index"),
    "group_id": ("group_id",),
    "transactional_id": ("transactional_id",),
    "key": ("key",),
    "topic_id": ("topic_id",),
    "member_id": ("member_id",),
    "group_instance_id": ("group_instance_id",),
}
TOPIC_FIELDS = ("name", "topic", "topic_name")
PARTITION_FIELDS = ("index", "partition", "partition_index")
#: Numbers that are "none" as -1 in an answer Kafka could not give (besides every INT64 field).
_NONE_AS_MINUS_ONE = ("producer_epoch", "node_id", "leader_id", "leader_epoch", "generation_id", "member_epoch",
                      "committed_leader_epoch", "preferred_read_replica", "coordinator_epoch")


def is_error_field(name: str) -> bool:
    return name == "error_code" or name.endswith("_error_code")


def carries_error(struct: Struct, version: int, _seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``struct`` or anything in its arrays has an error field at ``version``."""
    for field in struct.fields:
        if not field.present(version):
            continue
        if is_error_field(field.name):
            return True
        kind = field.type
        if (isinstance(kind, Array) and isinstance(kind.element, Struct) and kind.element.name not in _seen
                and carries_error(kind.element, version, _seen | {struct.name})):
            return True
    return False


def error_response(response: Struct, version: int, request: Any, code: int, *, whole_request: bool = False) -> Any:
    """The answer to ``request`` (a decoded body) with ``code`` wherever that answer carries its error."""
    return _build(response, version, request, code, whole_request)


def _build(struct: Struct, version: int, source: Any, code: int, whole_request: bool) -> Any:
    values: dict[str, Any] = {}
    error_fields = []
    mirrored_any = False
    own_error = any(is_error_field(f.name) for f in struct.fields if f.present(version))
    for field in struct.fields:
        if not field.present(version):
            continue
        kind = field.type
        if is_error_field(field.name):
            error_fields.append(field.name)
        elif isinstance(kind, Array):
            element = kind.element
            if isinstance(element, Struct) and not (whole_request and own_error) and carries_error(element, version):
                items = [_build(element, version, item, code, whole_request)
                         for item in _source_array(source, field.name)]
                values[field.name] = items
                mirrored_any = mirrored_any or bool(items)
        elif isinstance(kind, Struct):
            if not field.is_nullable(version) and not field.is_tagged(version):
                values[field.name] = _build(kind, version, None, code, whole_request)
        else:
            values[field.name] = _unanswered(field, kind, version, source)
    if not mirrored_any:
        for name in error_fields:
            values[name] = code
    return struct(**values)


def _unanswered(field: Any, kind: Primitive, version: int, source: Any) -> Any:
    """A primitive field of an error answer: the request's identity, else Kafka's 'none'."""
    for candidate in _ALIASES.get(field.name, ()):
        if source is not None and not isinstance(source, (str, int, bytes)) and hasattr(source, candidate):
            return getattr(source, candidate)
    if isinstance(source, (str, int)) and not isinstance(source, bool) and field.name in _ALIASES:
        # an element of an array of names or numbers (DescribeGroups' groups, a partition list)
        if isinstance(source, str) == (kind is STRING):
            return source
    if field.default != kind.default:  # the schema names the unset value (-1 for most offsets)
        return field.default
    if kind is INT64 or field.name in _NONE_AS_MINUS_ONE:
        return -1
    if kind is STRING and field.is_nullable(version):
        return None
    return kind.default


def _source_array(source: Any, name: str) -> list[Any]:
    """The request array a response array answers: same name, else the request's first array."""
    if source is None or isinstance(source, (str, int, bytes)):
        return []
    same = getattr(source, name, None)
    if isinstance(same, list):
        return same
    for slot in _slots(source):
        value = getattr(source, slot, None)
        if isinstance(value, list):
            return value
    return []


def _slots(obj: Any) -> tuple[str, ...]:
    return tuple(getattr(type(obj), "__slots__", ()))


# ---------------------------------------------------------------- one topic (and partition) of a request

def _topic_of(item: Any) -> str | None:
    for name in TOPIC_FIELDS:
        value = getattr(item, name, None)
        if isinstance(value, str):
            return value
    return None


def _partition_of(item: Any) -> int | None:
    if isinstance(item, int) and not isinstance(item, bool):
        return item
    for name in PARTITION_FIELDS:
        value = getattr(item, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _topic_arrays(request: Any) -> list[str]:
    """The request's top-level arrays whose elements name a topic."""
    return [slot for slot in _slots(request)
            if isinstance(items := getattr(request, slot, None), list) and items and _topic_of(items[0]) is not None]


def split(request: Any, topic: str, partition: int | None) -> tuple[Any, Any] | None:
    """``(matched, rest)``: copies of ``request`` holding only the named topic (partition) and
    everything else; None when the request does not name it. ``rest`` is None when nothing is left."""
    matched, rest = copy.copy(request), copy.copy(request)
    found = left = False
    for slot in _topic_arrays(request):
        taken, kept = [], []
        for item in getattr(request, slot):
            if _topic_of(item) != topic:
                kept.append(item)
                continue
            if partition is None:
                taken.append(item)
                continue
            inner = _partition_array(item)
            if inner is None:
                kept.append(item)
                continue
            hit = [p for p in getattr(item, inner) if _partition_of(p) == partition]
            miss = [p for p in getattr(item, inner) if _partition_of(p) != partition]
            if hit:
                taken.append(_with(item, inner, hit))
            if miss:
                kept.append(_with(item, inner, miss))
        setattr(matched, slot, taken)
        setattr(rest, slot, kept)
        found = found or bool(taken)
        left = left or bool(kept)
    if not found:
        return None
    return matched, (rest if left else None)


def _partition_array(item: Any) -> str | None:
    for slot in _slots(item):
        value = getattr(item, slot, None)
        if isinstance(value, list) and value and _partition_of(value[0]) is not None:
            return slot
    return None


def _with(item: Any, slot: str, values: list[Any]) -> Any:
    changed = copy.copy(item)
    setattr(changed, slot, values)
    return changed


def merge(answer: Any, injected: Any) -> Any:
    """``answer`` (the handler's, for the rest of a request) with the elements of ``injected``
    (the error answer for the part cut out by ``split``) added: into the element of the same
    topic where there is one, else as elements of their own."""
    for slot in _slots(injected):
        extra = getattr(injected, slot, None)
        ours = getattr(answer, slot, None)
        if not isinstance(extra, list) or not isinstance(ours, list) or not extra:
            continue
        by_topic = {_topic_of(item): item for item in ours if _topic_of(item) is not None}
        for item in extra:
            twin = by_topic.get(_topic_of(item))
            inner = _partition_array(item) if twin is not None else None
            if twin is not None and inner is not None and isinstance(getattr(twin, inner, None), list):
                getattr(twin, inner).extend(getattr(item, inner))
            else:
                ours.append(item)
    return answer
