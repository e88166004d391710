/*
 * The consumer's record walk, in C: a decompressed v2 batch body into one
 * (offset, timestamp, key, value, headers) tuple a record. protocol/record_decode.py
 * holds the same walk in Python (used when this extension is not built) and
 * documents the contract; a property test checks that both agree on every input.
 */
#define PY_SSIZE_T_CLEAN
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

/* A length-prefixed blob as bytes, or None for a negative length; NULL on error. */
static PyObject *read_blob(Cursor *c)
{
    int64_t size;
    if (read_varint(c, &size) < 0)
        return NULL;
    if (size < 0)
        Py_RETURN_NONE;
    if (size > c->end - c->pos) {
        PyErr_SetString(PyExc_ValueError, TRUNCATED);
        return NULL;
    }
    PyObject *blob = PyBytes_FromStringAndSize((const char *)c->pos, (Py_ssize_t)size);
    c->pos += size;
    return blob;
}

/* a + b as a Python int, exact even where int64 would overflow. */
static PyObject *add_exact(int64_t a, int64_t b)
{
    int64_t sum;
    if (!__builtin_add_overflow(a, b, &sum))
        return PyLong_FromLongLong(sum);
    PyObject *x = PyLong_FromLongLong(a), *y = PyLong_FromLongLong(b), *result = NULL;
    if (x && y)
        result = PyNumber_Add(x, y);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return result;
}

static PyObject *read_headers(Cursor *c)
{
    int64_t count;
    if (read_varint(c, &count) < 0)
        return NULL;
    PyObject *headers = PyList_New(0);
    if (headers == NULL)
        return NULL;
    for (int64_t i = 0; i < count; i++) {
        PyObject *name = read_blob(c);
        if (name == NULL)
            goto fail;
        PyObject *text = name == Py_None ? PyUnicode_FromStringAndSize("", 0)
                                         : PyUnicode_DecodeUTF8(PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name), "strict");
        Py_DECREF(name);
        if (text == NULL)
            goto fail;
        PyObject *value = read_blob(c);
        if (value == NULL) {
            Py_DECREF(text);
            goto fail;
        }
        PyObject *pair = PyTuple_Pack(2, text, value);
        Py_DECREF(text);
        Py_DECREF(value);
        if (pair == NULL || PyList_Append(headers, pair) < 0) {
            Py_XDECREF(pair);
            goto fail;
        }
        Py_DECREF(pair);
    }
    return headers;
fail:
    Py_DECREF(headers);
    return NULL;
}

static PyObject *decode(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp;
    PyObject *log_append_time;
    if (!PyArg_ParseTuple(args, "y*nLLO", &view, &count, &base_offset, &base_timestamp, &log_append_time))
        return NULL;
    Cursor c = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    PyObject *out = PyList_New(0);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, timestamp_delta, offset_delta;
        if (read_varint(&c, &length) < 0)
            goto fail;
        const uint8_t *start = c.pos;
        if (c.pos >= c.end) {
            PyErr_SetString(PyExc_ValueError, TRUNCATED);
            goto fail;
        }
        c.pos++; /* attributes: unused in v2 records */
        if (read_varint(&c, &timestamp_delta) < 0 || read_varint(&c, &offset_delta) < 0)
            goto fail;
        PyObject *key = read_blob(&c);
        if (key == NULL)
            goto fail;
        PyObject *value = read_blob(&c);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *headers = read_headers(&c);
        if (headers == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        PyObject *offset = NULL, *timestamp = NULL, *record = NULL;
        if (c.pos - start != length) {
            PyErr_SetString(PyExc_ValueError, "record length does not match its fields");
        } else {
            offset = add_exact(base_offset, offset_delta);
            if (log_append_time == Py_None) {
                timestamp = add_exact(base_timestamp, timestamp_delta);
            } else {
                Py_INCREF(log_append_time);
                timestamp = log_append_time;
            }
            if (offset && timestamp)
                record = PyTuple_Pack(5, offset, timestamp, key, value, headers);
        }
        Py_XDECREF(offset);
        Py_XDECREF(timestamp);
        Py_DECREF(key);
        Py_DECREF(value);
        Py_DECREF(headers);
        if (record == NULL || PyList_Append(out, record) < 0) {
            Py_XDECREF(record);
            goto fail;
        }
        Py_DECREF(record);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, "Decode v2 records into tuples; see protocol/record_decode.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_record_decode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__record_decode(void)
{
    return PyModule_Create(&module);
}
