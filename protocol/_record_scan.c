/*
 * The record walk of Kafka's log validator, in C: the one per-record loop on the
 * broker's produce path. protocol/record_scan.py holds the same walk in Python
 * (used when this extension is not built) and documents the contract; tests
 * check that both agree on every input.
 *
 * scan(records, count) walks `count` v2 records that must exactly fill
 * `records` (the batch body after its 61-byte header, decompressed), and
 * returns (min_timestamp_delta, max_timestamp_delta, null_keys,
 * offset_deltas_sequential), or raises ValueError with the message Kafka's
 * InvalidRecordException carries for the same fault.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    const uint8_t *pos;
    const uint8_t *end;
} Cursor;

enum { OK = 0, UNDERFLOW = -1, TOO_LONG = -2 };

/* Zigzag LEB128 of at most `max_bytes` bytes (5 for an int, 10 for a long), as Kafka's ByteUtils. */
static int read_zigzag(Cursor *c, int max_bytes, int64_t *out)
{
    uint64_t raw = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (c->pos >= c->end)
            return UNDERFLOW;
        uint8_t byte = *c->pos++;
        raw |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            if (max_bytes == 5) {
                uint32_t narrow = (uint32_t)raw;
                *out = (int32_t)((narrow >> 1) ^ (~(narrow & 1) + 1));
            } else {
                *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            }
            return OK;
        }
        shift += 7;
    }
    return TOO_LONG;
}

/* Skip a length-prefixed blob; a negative length means null (Kafka reads any negative size as null). */
static int skip_blob(Cursor *c, int64_t *size)
{
    int status = read_zigzag(c, 5, size);
    if (status != OK)
        return status;
    if (*size > 0) {
        if (*size > c->end - c->pos)
            return UNDERFLOW;
        c->pos += *size;
    }
    return OK;
}

static PyObject *structure_error(void)
{
    PyErr_SetString(PyExc_ValueError, "Found invalid record structure");
    return NULL;
}

static PyObject *scan(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*n", &view, &count))
        return NULL;
    Cursor c = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    int64_t min_delta = INT64_MAX, max_delta = INT64_MIN;
    Py_ssize_t null_keys = 0;
    int sequential = 1;
    PyObject *result = NULL;

    for (Py_ssize_t index = 0; index < count; index++) {
        int64_t length, timestamp_delta, offset_delta, key_size, value_size, headers;
        if (read_zigzag(&c, 5, &length) != OK)
            goto structure;
        Py_ssize_t remaining = c.end - c.pos;
        if (length < 0 || length > remaining) {
            PyErr_Format(PyExc_ValueError,
                         "Invalid record size: expected %lld bytes in record payload, but instead the buffer "
                         "has only %zd remaining bytes.", (long long)length, remaining);
            goto done;
        }
        const uint8_t *start = c.pos;
        if (c.pos >= c.end)
            goto structure;
        c.pos++; /* attributes: unused in v2 records */
        if (read_zigzag(&c, 10, &timestamp_delta) != OK || read_zigzag(&c, 5, &offset_delta) != OK)
            goto structure;
        if (skip_blob(&c, &key_size) != OK || skip_blob(&c, &value_size) != OK)
            goto structure;
        if (read_zigzag(&c, 5, &headers) != OK)
            goto structure;
        if (headers < 0) {
            PyErr_Format(PyExc_ValueError, "Found invalid number of record headers %lld", (long long)headers);
            goto done;
        }
        if (headers > c.end - c.pos) {
            PyErr_Format(PyExc_ValueError,
                         "Found invalid number of record headers. The number of record headers exceeds the "
                         "remaining bytes %zd", (Py_ssize_t)(c.end - c.pos));
            goto done;
        }
        for (int64_t h = 0; h < headers; h++) {
            int64_t header_key_size, header_value_size;
            if (read_zigzag(&c, 5, &header_key_size) != OK)
                goto structure;
            if (header_key_size < 0) {
                PyErr_Format(PyExc_ValueError, "Invalid negative header key size %lld",
                             (long long)header_key_size);
                goto done;
            }
            if (header_key_size > c.end - c.pos)
                goto structure;
            c.pos += header_key_size;
            if (skip_blob(&c, &header_value_size) != OK)
                goto structure;
        }
        if (c.pos - start != length) {
            PyErr_Format(PyExc_ValueError,
                         "Invalid record size: expected to read %lld bytes in record payload, but instead read %zd",
                         (long long)length, (Py_ssize_t)(c.pos - start));
            goto done;
        }
        if (offset_delta != index)
            sequential = 0;
        if (key_size < 0)
            null_keys++;
        if (timestamp_delta < min_delta)
            min_delta = timestamp_delta;
        if (timestamp_delta > max_delta)
            max_delta = timestamp_delta;
    }
    if (c.pos != c.end) {
        PyErr_SetString(PyExc_ValueError, "Incorrect declared batch size, records still remaining in file");
        goto done;
    }
    if (count == 0)
        min_delta = max_delta = 0;
    result = Py_BuildValue("LLnO", (long long)min_delta, (long long)max_delta, null_keys,
                           sequential ? Py_True : Py_False);
    goto done;
structure:
    structure_error();
done:
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Walk v2 records; see protocol/record_scan.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_record_scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__record_scan(void)
{
    return PyModule_Create(&module);
}
