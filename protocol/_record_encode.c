/*
 * The producer's record encoder, in C: one v2 record appended to a batch body
 * (a bytearray) in a single resize, and BatchBody, an open batch's records and
 * counters, whose try_append is the producer's whole per-record encoding step. protocol/record_builder.py holds the same
 * encoding in Python (used when this extension is not built) and documents the
 * contract; a property test checks that both write identical bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_arrow_column.h"

/* Bytes of the zigzag LEB128 encoding of v. */
static Py_ssize_t varint_size(int64_t v)
{
    uint64_t raw = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    Py_ssize_t size = 1;
    while (raw >= 0x80) {
        raw >>= 7;
        size++;
    }
    return size;
}

static uint8_t *put_varint(uint8_t *out, int64_t v)
{
    uint64_t raw = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    while (raw >= 0x80) {
        *out++ = (uint8_t)(raw | 0x80);
        raw >>= 7;
    }
    *out++ = (uint8_t)raw;
    return out;
}

/* A blob (bytes-like, or None for a null one) held for the length of one append. */
typedef struct {
    Py_buffer view;
    int held;      /* view must be released */
    int is_null;
} Blob;

static int blob_open(PyObject *obj, Blob *blob)
{
    blob->held = 0;
    blob->is_null = obj == Py_None;
    if (blob->is_null)
        return 0;
    if (PyObject_GetBuffer(obj, &blob->view, PyBUF_SIMPLE) < 0)
        return -1;
    blob->held = 1;
    return 0;
}

static void blob_close(Blob *blob)
{
    if (blob->held)
        PyBuffer_Release(&blob->view);
    blob->held = 0;
}

static Py_ssize_t blob_size(const Blob *blob)
{
    return blob->is_null ? 1 : varint_size(blob->view.len) + blob->view.len;
}

static uint8_t *put_blob(uint8_t *out, const Blob *blob)
{
    if (blob->is_null)
        return put_varint(out, -1);
    out = put_varint(out, blob->view.len);
    memcpy(out, blob->view.buf, (size_t)blob->view.len);
    return out + blob->view.len;
}

/*
 * Grow ``body`` (a bytearray) to ``size`` bytes, its memory doubling up to ``capacity`` bytes (a
 * BatchBody's batch size limit; 0: bytearray's own growth). bytearray grows by an eighth and gives
 * memory back while it holds under half of it, so a 256 KiB batch filled record by record was
 * reallocated and copied about eight times over; doubling copies it about once, and a batch that
 * stays small holds little. Within the memory held only the length changes. The fields read are
 * CPython's PyByteArrayObject, as its own resize reads them; an exported or shifted buffer takes
 * PyByteArray_Resize alone (which refuses an exported one).
 */
static int body_grow(PyObject *body, Py_ssize_t size, Py_ssize_t capacity)
{
    PyByteArrayObject *bytes = (PyByteArrayObject *)body;
    if (capacity <= 0 || bytes->ob_exports != 0 || bytes->ob_start != bytes->ob_bytes || size < Py_SIZE(body))
        return PyByteArray_Resize(body, size);
    if (size >= bytes->ob_alloc) {  /* room for size bytes and bytearray's trailing NUL */
        Py_ssize_t target = bytes->ob_alloc * 2;
        if (target > capacity)
            target = capacity;
        if (target < size)
            target = size;
        if (PyByteArray_Resize(body, target) < 0)
            return -1;
    }
    Py_SET_SIZE(body, size);
    bytes->ob_bytes[size] = '\0';
    return 0;
}

/*
 * Append one v2 record to ``body`` unless it would take more than ``room`` bytes (room < 0: no limit).
 * Returns the bytes added, NOT_ROOM when it did not fit (nothing written), or -1 with an exception set.
 */
#define NOT_ROOM (-2)
static Py_ssize_t encode_record(PyObject *body, long long timestamp_delta, long long offset_delta, PyObject *key,
                                PyObject *value, PyObject *headers, Py_ssize_t room, Py_ssize_t capacity)
{
    Py_ssize_t result = -1;
    PyObject *header_seq = NULL;
    Blob key_blob = {.held = 0}, value_blob = {.held = 0};
    Blob *header_values = NULL;
    const char **header_names = NULL;
    Py_ssize_t *header_name_sizes = NULL;
    Py_ssize_t header_count = 0, opened_values = 0;

    if (blob_open(key, &key_blob) < 0 || blob_open(value, &value_blob) < 0)
        goto done;
    if (headers != Py_None) {
        header_seq = PySequence_Fast(headers, "headers must be a sequence of (name, value) pairs");
        if (header_seq == NULL)
            goto done;
        header_count = PySequence_Fast_GET_SIZE(header_seq);
    }
    if (header_count) {
        header_values = PyMem_Calloc((size_t)header_count, sizeof(Blob));
        header_names = PyMem_Calloc((size_t)header_count, sizeof(char *));
        header_name_sizes = PyMem_Calloc((size_t)header_count, sizeof(Py_ssize_t));
        if (!header_values || !header_names || !header_name_sizes) {
            PyErr_NoMemory();
            goto done;
        }
    }

    /* the record's length: attributes, deltas, key, value, headers */
    Py_ssize_t length = 1 + varint_size(timestamp_delta) + varint_size(offset_delta)
                        + blob_size(&key_blob) + blob_size(&value_blob) + varint_size(header_count);
    for (Py_ssize_t i = 0; i < header_count; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(header_seq, i);
        PyObject *name, *header_value;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "a header is a (name, value) pair");
            goto done;
        }
        name = PyTuple_GET_ITEM(pair, 0);
        header_value = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "a header name is a str");
            goto done;
        }
        header_names[i] = PyUnicode_AsUTF8AndSize(name, &header_name_sizes[i]);
        if (header_names[i] == NULL || blob_open(header_value, &header_values[i]) < 0)
            goto done;
        opened_values = i + 1;
        length += varint_size(header_name_sizes[i]) + header_name_sizes[i] + blob_size(&header_values[i]);
    }

    Py_ssize_t before = PyByteArray_GET_SIZE(body);
    Py_ssize_t added = varint_size(length) + length;
    if (room >= 0 && added > room) {
        result = NOT_ROOM;
        goto done;
    }
    if (body_grow(body, before + added, capacity) < 0)
        goto done;
    uint8_t *out = (uint8_t *)PyByteArray_AS_STRING(body) + before;
    out = put_varint(out, length);
    *out++ = 0;  /* attributes: unused in v2 records */
    out = put_varint(out, timestamp_delta);
    out = put_varint(out, offset_delta);
    out = put_blob(out, &key_blob);
    out = put_blob(out, &value_blob);
    out = put_varint(out, header_count);
    for (Py_ssize_t i = 0; i < header_count; i++) {
        out = put_varint(out, header_name_sizes[i]);
        memcpy(out, header_names[i], (size_t)header_name_sizes[i]);
        out += header_name_sizes[i];
        out = put_blob(out, &header_values[i]);
    }
    result = added;

done:
    blob_close(&key_blob);
    blob_close(&value_blob);
    for (Py_ssize_t i = 0; i < opened_values; i++)
        blob_close(&header_values[i]);
    PyMem_Free(header_values);
    PyMem_Free(header_names);
    PyMem_Free(header_name_sizes);
    Py_XDECREF(header_seq);
    return result;
}

/* append_record(body, timestamp_delta, offset_delta, key, value, headers) -> bytes added */
static PyObject *append_record(PyObject *self, PyObject *args)
{
    PyObject *body, *key, *value, *headers;
    long long timestamp_delta, offset_delta;
    if (!PyArg_ParseTuple(args, "O!LLOOO", &PyByteArray_Type, &body, &timestamp_delta, &offset_delta,
                          &key, &value, &headers))
        return NULL;
    Py_ssize_t added = encode_record(body, timestamp_delta, offset_delta, key, value, headers, -1, 0);
    return added < 0 ? NULL : PyLong_FromSsize_t(added);
}

/*
 * BatchBody: the records of one open batch (record_builder.BatchBodyPython is the reference): the
 * encoded body, its first and largest timestamps, its record count and the batch's size were it
 * built now. try_append encodes a record and checks the size limit in one call, the producer's
 * per-record step.
 */
typedef struct {
    PyObject_HEAD
    PyObject *body;  /* bytearray */
    long long base_timestamp, max_timestamp;
    Py_ssize_t count, size;
    Py_ssize_t capacity;  /* body_grow's doubling stops here */
} BatchBody;

/* BatchBody(size, capacity=0): ``size`` the batch's bytes before any record (its header), ``capacity``
   the bytes of records its memory grows to by doubling (the batch size limit; see body_grow) */
static int batch_body_init(BatchBody *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"size", "capacity", NULL};
    Py_ssize_t size, capacity = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|n", names, &size, &capacity))
        return -1;
    PyObject *body = PyByteArray_FromStringAndSize(NULL, 0);
    if (body == NULL)
        return -1;
    Py_XSETREF(self->body, body);
    self->base_timestamp = self->max_timestamp = -1;
    self->count = 0;
    self->size = size;
    self->capacity = capacity;
    return 0;
}

static void batch_body_dealloc(BatchBody *self)
{
    Py_CLEAR(self->body);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* try_append(timestamp, key, value, headers, limit) -> bytes added, or -1 when the body holds records
   and the batch would pass ``limit`` bytes (limit < 0: no limit) with this one (nothing written) */
static PyObject *batch_body_try_append(BatchBody *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "try_append(timestamp, key, value, headers, limit)");
        return NULL;
    }
    long long timestamp = PyLong_AsLongLong(args[0]);
    if (timestamp == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(args[4]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    long long base = self->count ? self->base_timestamp : timestamp;
    Py_ssize_t room = self->count && limit >= 0 ? (limit > self->size ? limit - self->size : 0) : -1;
    Py_ssize_t added = encode_record(self->body, timestamp - base, (long long)self->count, args[1], args[2],
                                     args[3], room, self->capacity);
    if (added == NOT_ROOM)
        return PyLong_FromLong(-1);
    if (added < 0)
        return NULL;
    self->base_timestamp = base;
    if (timestamp > self->max_timestamp)
        self->max_timestamp = timestamp;
    self->count++;
    self->size += added;
    return PyLong_FromSsize_t(added);
}

static PyMethodDef batch_body_methods[] = {
    {"try_append", (PyCFunction)(void (*)(void))batch_body_try_append, METH_FASTCALL,
     "Encode one record unless the batch would pass limit bytes; see protocol/record_builder.py."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef batch_body_members[] = {
    {"body", T_OBJECT_EX, offsetof(BatchBody, body), READONLY, "the encoded records (a bytearray)"},
    {"base_timestamp", T_LONGLONG, offsetof(BatchBody, base_timestamp), 0, "the first record's timestamp"},
    {"max_timestamp", T_LONGLONG, offsetof(BatchBody, max_timestamp), 0, "the largest timestamp"},
    {"count", T_PYSSIZET, offsetof(BatchBody, count), 0, "records in the body"},
    {"size", T_PYSSIZET, offsetof(BatchBody, size), 0, "bytes of the batch if built now, uncompressed"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject BatchBodyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "weir.protocol._record_encode.BatchBody",
    .tp_basicsize = sizeof(BatchBody),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "BatchBody(size, capacity=0): one open batch's encoded records; see protocol/record_builder.py.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)batch_body_init,
    .tp_dealloc = (destructor)batch_body_dealloc,
    .tp_methods = batch_body_methods,
    .tp_members = batch_body_members,
};

static Py_ssize_t column_blob_size(const uint8_t *ptr, Py_ssize_t len)
{
    return ptr == NULL ? 1 : varint_size(len) + len;
}

static uint8_t *put_column_blob(uint8_t *out, const uint8_t *ptr, Py_ssize_t len)
{
    if (ptr == NULL)
        return put_varint(out, -1);
    out = put_varint(out, len);
    memcpy(out, ptr, (size_t)len);
    return out + len;
}

/*
 * append_arrow(body, timestamp_delta, offset_delta, keys, values, length, rows, start, size, limit)
 *   -> (next position in rows, bytes added)
 * Appends the records of rows[start:] (rows: int32 row numbers of the Arrow columns ``keys`` and
 * ``values``, each ``length`` rows, see _arrow_column.h), with no headers and one timestamp delta,
 * offset deltas counting up from ``offset_delta``; stops after the record that brings the batch's
 * ``size`` to ``limit`` or more (as BatchBuilder.append and a size check after it would). One resize.
 */
static PyObject *append_arrow(PyObject *self, PyObject *args)
{
    PyObject *body, *keys_spec, *values_spec;
    long long timestamp_delta, offset_delta;
    Py_ssize_t length, start, size, limit;
    Py_buffer rows_view;
    if (!PyArg_ParseTuple(args, "O!LLOOny*nnn", &PyByteArray_Type, &body, &timestamp_delta, &offset_delta,
                          &keys_spec, &values_spec, &length, &rows_view, &start, &size, &limit))
        return NULL;
    PyObject *result = NULL;
    ArrowColumn keys, values;
    int keys_open = 0, values_open = 0;
    const int32_t *rows = (const int32_t *)rows_view.buf;
    Py_ssize_t row_count = rows_view.len / (Py_ssize_t)sizeof(int32_t);
    if (column_open(keys_spec, length, &keys) < 0)
        goto done;
    keys_open = 1;
    if (column_open(values_spec, length, &values) < 0)
        goto done;
    values_open = 1;
    if (start < 0 || start > row_count) {
        PyErr_SetString(PyExc_ValueError, "start outside rows");
        goto done;
    }
    Py_ssize_t timestamp_size = varint_size(timestamp_delta), total = 0, end = start;
    int64_t delta = offset_delta;
    while (end < row_count) {  /* first pass: how many records, how many bytes */
        int32_t row = rows[end];
        const uint8_t *key, *value;
        Py_ssize_t key_len, value_len;
        if (row < 0 || row >= length) {
            PyErr_SetString(PyExc_ValueError, "row number outside the columns");
            goto done;
        }
        if (column_get(&keys, row, &key, &key_len) < 0 || column_get(&values, row, &value, &value_len) < 0)
            goto done;
        Py_ssize_t record = 1 + timestamp_size + varint_size(delta) + column_blob_size(key, key_len)
                            + column_blob_size(value, value_len) + 1;
        Py_ssize_t framed = varint_size(record) + record;
        total += framed;
        size += framed;
        delta++;
        end++;
        if (size >= limit)
            break;
    }
    Py_ssize_t before = PyByteArray_GET_SIZE(body);
    if (PyByteArray_Resize(body, before + total) < 0)
        goto done;
    uint8_t *out = (uint8_t *)PyByteArray_AS_STRING(body) + before;
    delta = offset_delta;
    for (Py_ssize_t i = start; i < end; i++) {  /* second pass: write them (offsets checked above) */
        const uint8_t *key, *value;
        Py_ssize_t key_len, value_len;
        column_get(&keys, rows[i], &key, &key_len);
        column_get(&values, rows[i], &value, &value_len);
        Py_ssize_t record = 1 + timestamp_size + varint_size(delta) + column_blob_size(key, key_len)
                            + column_blob_size(value, value_len) + 1;
        out = put_varint(out, record);
        *out++ = 0;  /* attributes */
        out = put_varint(out, timestamp_delta);
        out = put_varint(out, delta);
        out = put_column_blob(out, key, key_len);
        out = put_column_blob(out, value, value_len);
        *out++ = 0;  /* no headers */
        delta++;
    }
    result = Py_BuildValue("nn", end, total);
done:
    if (keys_open)
        column_close(&keys);
    if (values_open)
        column_close(&values);
    PyBuffer_Release(&rows_view);
    return result;
}

static PyMethodDef methods[] = {
    {"append_record", append_record, METH_VARARGS,
     "Append one v2 record to a batch body; see protocol/record_builder.py."},
    {"append_arrow", append_arrow, METH_VARARGS,
     "Append the records of Arrow key/value columns to a batch body; see protocol/record_builder.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_record_encode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__record_encode(void)
{
    if (PyType_Ready(&BatchBodyType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "BatchBody", (PyObject *)&BatchBodyType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
