/*
 * An Arrow binary-like column (binary, string, large_binary, large_string) read in place from its
 * buffers, so the sink encodes and partitions Spark's Arrow batches without a Python object per row.
 * Shared by protocol/_record_encode.c and pipeline/_murmur2.c. The column comes from Python as
 * None (every row null) or (validity buffer or None, offsets buffer, data buffer or None, array
 * offset, 64-bit offsets?): see protocol/record_builder.py arrow_column().
 */
#ifndef WEIR_ARROW_COLUMN_H
#define WEIR_ARROW_COLUMN_H
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    Py_buffer validity, offsets, data;
    int has_validity, has_offsets, has_data;
    int all_null;
    int wide;
    Py_ssize_t offset;
} ArrowColumn;

static void column_close(ArrowColumn *c)
{
    if (c->has_validity)
        PyBuffer_Release(&c->validity);
    if (c->has_offsets)
        PyBuffer_Release(&c->offsets);
    if (c->has_data)
        PyBuffer_Release(&c->data);
    c->has_validity = c->has_offsets = c->has_data = 0;
}

/* Opens the column for rows [0, length); checks the buffers are long enough for them. */
static int column_open(PyObject *spec, Py_ssize_t length, ArrowColumn *c)
{
    memset(c, 0, sizeof(*c));
    if (spec == Py_None) {
        c->all_null = 1;
        return 0;
    }
    PyObject *validity, *offsets, *data;
    int wide;
    if (!PyArg_ParseTuple(spec, "OOOnp;an Arrow column is (validity, offsets, data, offset, wide)", &validity,
                          &offsets, &data, &c->offset, &wide))
        return -1;
    c->wide = wide;
    if (c->offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "negative Arrow offset or length");
        return -1;
    }
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &c->validity, PyBUF_SIMPLE) < 0)
            goto fail;
        c->has_validity = 1;
        if (c->validity.len < (c->offset + length + 7) / 8) {
            PyErr_SetString(PyExc_ValueError, "Arrow validity buffer too short");
            goto fail;
        }
    }
    if (PyObject_GetBuffer(offsets, &c->offsets, PyBUF_SIMPLE) < 0)
        goto fail;
    c->has_offsets = 1;
    if (c->offsets.len < (c->offset + length + 1) * (wide ? 8 : 4)) {
        PyErr_SetString(PyExc_ValueError, "Arrow offsets buffer too short");
        goto fail;
    }
    if (data != Py_None) {
        if (PyObject_GetBuffer(data, &c->data, PyBUF_SIMPLE) < 0)
            goto fail;
        c->has_data = 1;
    }
    return 0;
fail:
    column_close(c);
    return -1;
}

/* Row ``row``: 0 and *ptr NULL when null, 1 with *ptr / *len when not, -1 (exception set) on bad offsets. */
static inline int column_get(const ArrowColumn *c, Py_ssize_t row, const uint8_t **ptr, Py_ssize_t *len)
{
    *ptr = NULL;
    *len = 0;
    if (c->all_null)
        return 0;
    Py_ssize_t i = c->offset + row;
    if (c->has_validity && !((((const uint8_t *)c->validity.buf)[i >> 3] >> (i & 7)) & 1))
        return 0;
    int64_t start, end;
    if (c->wide) {
        memcpy(&start, (const char *)c->offsets.buf + i * 8, 8);
        memcpy(&end, (const char *)c->offsets.buf + (i + 1) * 8, 8);
    } else {
        int32_t s, e;
        memcpy(&s, (const char *)c->offsets.buf + i * 4, 4);
        memcpy(&e, (const char *)c->offsets.buf + (i + 1) * 4, 4);
        start = s;
        end = e;
    }
    Py_ssize_t data_len = c->has_data ? c->data.len : 0;
    if (start < 0 || end < start || end > data_len) {
        PyErr_SetString(PyExc_ValueError, "Arrow offsets outside the data buffer");
        return -1;
    }
    *ptr = c->has_data ? (const uint8_t *)c->data.buf + start : (const uint8_t *)"";
    *len = (Py_ssize_t)(end - start);
    return 1;
}

#endif
