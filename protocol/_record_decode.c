/*
 * The consumer's record walk, in C: a decompressed v2 batch body into one
 * (offset, timestamp, key, value, headers) tuple a record. protocol/record_decode.py
 * holds the same walk in Python (used when this extension is not built) and
 * documents the contract; a property test checks that both agree on every input.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>

#include "_record_cursor.h"

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

/* decode_into: the same walk, building the consumer's record objects themselves (no tuple between).
 * The record type is any class with __slots__ named as in RECORD_FIELDS (client/types.py's
 * ConsumerRecord, a slotted dataclass): instances are allocated and their slots filled directly,
 * without running __init__ -- per record that is most of what the consumer's Python loop cost. */
static const char *RECORD_FIELDS[] = {"topic", "partition", "offset", "timestamp", "timestamp_type",
                                      "key", "value", "headers", "leader_epoch"};
enum { F_TOPIC, F_PARTITION, F_OFFSET, F_TIMESTAMP, F_TIMESTAMP_TYPE, F_KEY, F_VALUE, F_HEADERS, F_EPOCH, N_FIELDS };

static PyTypeObject *bound_type;  /* the record type the offsets below belong to (a strong reference) */
static Py_ssize_t slot_offsets[N_FIELDS];

/* Learn where each field lives in instances of `type`; -1 with TypeError unless every field is an object slot. */
static int bind_record_type(PyTypeObject *type)
{
    if (type == bound_type)
        return 0;
    Py_ssize_t offsets[N_FIELDS];
    for (int i = 0; i < N_FIELDS; i++) {
        PyObject *descr = PyDict_GetItemString(type->tp_dict, RECORD_FIELDS[i]);  /* borrowed */
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
                || ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "%s has no object slot %s", type->tp_name, RECORD_FIELDS[i]);
            return -1;
        }
        offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    Py_INCREF(type);
    Py_XSETREF(bound_type, type);
    memcpy(slot_offsets, offsets, sizeof offsets);
    return 0;
}

#define SLOT(obj, field) (*(PyObject **)((char *)(obj) + slot_offsets[field]))

static PyObject *decode_into(PyObject *module, PyObject *args)
{
    PyObject *out, *log_append_time, *topic, *partition, *timestamp_type, *leader_epoch;
    PyTypeObject *type;
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp, position;
    if (!PyArg_ParseTuple(args, "O!O!y*nLLOLOOOO", &PyList_Type, &out, &PyType_Type, &type, &view, &count,
                          &base_offset, &base_timestamp, &log_append_time, &position, &topic, &partition,
                          &timestamp_type, &leader_epoch))
        return NULL;
    PyObject *result = NULL;
    int out_of_range = 0;
    if (bind_record_type(type) < 0)
        goto done;
    Cursor c = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, timestamp_delta, offset_delta, offset, timestamp = 0;
        if (read_varint(&c, &length) < 0)
            goto done;
        const uint8_t *start = c.pos;
        if (c.pos >= c.end) {
            PyErr_SetString(PyExc_ValueError, TRUNCATED);
            goto done;
        }
        c.pos++; /* attributes: unused in v2 records */
        if (read_varint(&c, &timestamp_delta) < 0 || read_varint(&c, &offset_delta) < 0)
            goto done;
        PyObject *key = read_blob(&c);
        if (key == NULL)
            goto done;
        PyObject *value = read_blob(&c);
        if (value == NULL) {
            Py_DECREF(key);
            goto done;
        }
        PyObject *headers = read_headers(&c);
        if (headers == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto done;
        }
        if (c.pos - start != length) {
            PyErr_SetString(PyExc_ValueError, "record length does not match its fields");
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto done;
        }
        /* An offset or timestamp past int64 is no batch a broker writes: refused once the whole
         * body is walked (so a malformed record later on is reported first, as the Python twin
         * does), where the tuple walk (decode) would hand out the Python int. */
        if (__builtin_add_overflow(base_offset, offset_delta, &offset)
                || (log_append_time == Py_None
                    && __builtin_add_overflow(base_timestamp, timestamp_delta, &timestamp))) {
            out_of_range = 1;
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            continue;
        }
        if (offset < position) {  /* before the fetch position: walked, not shown */
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            continue;
        }
        PyObject *record = type->tp_alloc(type, 0);
        PyObject *offset_obj = PyLong_FromLongLong(offset);
        PyObject *timestamp_obj = log_append_time == Py_None ? PyLong_FromLongLong(timestamp)
                                                             : Py_NewRef(log_append_time);
        if (record == NULL || offset_obj == NULL || timestamp_obj == NULL) {
            Py_XDECREF(record);
            Py_XDECREF(offset_obj);
            Py_XDECREF(timestamp_obj);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto done;
        }
        SLOT(record, F_TOPIC) = Py_NewRef(topic);
        SLOT(record, F_PARTITION) = Py_NewRef(partition);
        SLOT(record, F_OFFSET) = offset_obj;
        SLOT(record, F_TIMESTAMP) = timestamp_obj;
        SLOT(record, F_TIMESTAMP_TYPE) = Py_NewRef(timestamp_type);
        SLOT(record, F_KEY) = key;
        SLOT(record, F_VALUE) = value;
        SLOT(record, F_HEADERS) = headers;
        SLOT(record, F_EPOCH) = Py_NewRef(leader_epoch);
        /* Left out of the cyclic garbage collector, as msgspec's gc=False structs: a consumer holds
         * hundreds of thousands of these at once and collections that walked them took a quarter of
         * its CPU (perf). Their fields are str, int, bytes and a list of (str, bytes) pairs, which
         * form no cycle; only a caller who made one through them (a record put in its own headers)
         * would leak it. */
        PyObject_GC_UnTrack(headers);
        if (PyType_IS_GC(type))
            PyObject_GC_UnTrack(record);
        int appended = PyList_Append(out, record);
        Py_DECREF(record);
        if (appended < 0)
            goto done;
    }
    if (out_of_range)
        PyErr_SetString(PyExc_ValueError, "offset or timestamp out of range");
    else
        result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, "Decode v2 records into tuples; see protocol/record_decode.py."},
    {"decode_into", decode_into, METH_VARARGS,
     "Append v2 records at or after a position to a list as record objects; see protocol/record_decode.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_record_decode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__record_decode(void)
{
    return PyModule_Create(&module);
}
