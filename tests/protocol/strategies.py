"""Hypothesis strategies derived from our own schema declarations."""

from hypothesis import strategies as st

from weir.protocol.schema import (BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, UINT16, UUID, Array,
                             Struct)

_SCALARS = {
    INT8: st.integers(-2**7, 2**7 - 1),
    INT16: st.integers(-2**15, 2**15 - 1),
    UINT16: st.integers(0, 2**16 - 1),
    INT32: st.integers(-2**31, 2**31 - 1),
    INT64: st.integers(-2**63, 2**63 - 1),
    FLOAT64: st.floats(allow_nan=False),
    BOOL: st.booleans(),
    STRING: st.text(max_size=20),
    BYTES: st.binary(max_size=40),
    RECORDS: st.binary(max_size=80),
    UUID: st.binary(min_size=16, max_size=16),
}


def _value(kind, version, nullable):
    if isinstance(kind, Array):
        element = (instances(kind.element, version) if isinstance(kind.element, Struct)
                   else _SCALARS[kind.element])
        values = st.lists(element, max_size=3)
    elif isinstance(kind, Struct):
        values = instances(kind, version)
    else:
        values = _SCALARS[kind]
    return st.none() | values if nullable else values


def instances(struct: Struct, version: int):
    """Instances with every field present at ``version`` drawn; absent fields keep defaults."""
    fields = {f.name: _value(f.type, version, f.is_nullable(version)) for f in struct.fields if f.present(version)}
    return st.fixed_dictionaries(fields).map(lambda values: struct(**values))
