/*
 * The consumer's varint reading, shared by protocol/_record_decode.c (records into Python objects)
 * and protocol/_record_arrow.c (records into Arrow buffers): a cursor over a batch body and the
 * zigzag varint every record field starts with. Errors are ValueError with the messages
 * protocol/record_decode.py's pure-Python walk raises as DecodeError.
 */
#ifndef WEIR_RECORD_CURSOR_H
#define WEIR_RECORD_CURSOR_H
#include <Python.h>
#include <stdint.h>

typedef struct {
    const uint8_t *pos;
    const uint8_t *end;
} Cursor;

static const char TRUNCATED[] = "truncated record";

/* Zigzag LEB128 of at most 10 bytes, as a 64-bit value; -1 with ValueError set when malformed. */
static int read_varint(Cursor *c, int64_t *out)
{
    uint64_t raw = 0;
    for (int i = 0; i < 10; i++) {
        if (c->pos >= c->end) {
            PyErr_SetString(PyExc_ValueError, TRUNCATED);
            return -1;
        }
        uint8_t byte = *c->pos++;
        raw |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return 0;
        }
    }
    PyErr_SetString(PyExc_ValueError, "varint longer than 10 bytes");
    return -1;
}

#endif
