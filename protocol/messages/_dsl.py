"""Names the message modules use to declare schemas."""

from ..schema import (BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, UINT16, UUID, Array, Field,
                      Message, Struct)

__all__ = ["BOOL", "BYTES", "FLOAT64", "INT8", "INT16", "INT32", "INT64", "INT32_MIN", "RECORDS", "STRING", "UINT16",
           "UUID", "Array", "Field", "Message", "Struct"]

INT32_MIN = -2147483648
