/*
 * The consumer's record walk into Arrow columns: v2 batch bodies appended to the buffers of
 * key (binary), value (binary), offset (int64), timestamp (int64 ms), timestamp_type (int8) and
 * headers (list<struct<key: string, value: binary>>), with no Python object per record.
 * protocol/record_arrow.py turns the finished buffers into a pyarrow.RecordBatch (zero-copy: each
 * buffer is an object exporting the memory this walk filled) and holds the pure-Python twin.
 *
 *   columns = RecordColumns()
 *   columns.add(body, count, base_offset, base_timestamp, log_append_time, timestamp_type, position, limit)
 *       -> the offset after the last record taken, or -1 when none was (records before ``position`` are
 *          walked and not taken; at most ``limit`` rows are held in all, and the walk stops there)
 *   columns.reserve(nbytes)  -- room for this many more bytes of values, allocated at once
 *   columns.rows
 *   columns.finish() -> dict of the buffers and null counts (see record_arrow.py)
 *
 * Malformed input raises ValueError (UnicodeDecodeError for a header name that is not UTF-8), as
 * protocol/_record_decode.c does; the columns are not to be used after an error.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_record_cursor.h"

/* ------------------------------------------------------------------ a cache of large blocks
 *
 * A consumer allocates a few blocks of megabytes per answer (the frame the socket fills, the value
 * column) and frees them a moment later. Fresh from the allocator (mmap above glibc's threshold) each
 * costs a page fault and a cleared page per 4 KiB: perf put 42% of an Arrow consumer's time in the
 * kernel. Freed blocks of at least CACHED_MIN bytes are kept (up to CACHED_BLOCKS) and handed out
 * again; the cache holds at most CACHED_BLOCKS x the largest block a consumer uses. */
#define CACHED_MIN (1 << 20)
#define CACHED_BLOCKS 4

static struct {
    uint8_t *p;
    Py_ssize_t cap;
} cached[CACHED_BLOCKS];

/* A block of at least ``size`` bytes (its capacity in *cap), from the cache when one fits. */
static uint8_t *block_take(Py_ssize_t size, Py_ssize_t *cap)
{
    int best = -1;
    for (int i = 0; i < CACHED_BLOCKS; i++)
        if (cached[i].p && cached[i].cap >= size && (best < 0 || cached[i].cap < cached[best].cap))
            best = i;
    if (best >= 0) {
        uint8_t *p = cached[best].p;
        *cap = cached[best].cap;
        cached[best].p = NULL;
        return p;
    }
    *cap = size;
    return PyMem_RawMalloc((size_t)(size ? size : 1));
}

static void block_give(uint8_t *p, Py_ssize_t cap)
{
    if (p == NULL)
        return;
    if (cap >= CACHED_MIN) {
        int smallest = -1;
        for (int i = 0; i < CACHED_BLOCKS; i++) {
            if (cached[i].p == NULL) {
                cached[i].p = p;
                cached[i].cap = cap;
                return;
            }
            if (smallest < 0 || cached[i].cap < cached[smallest].cap)
                smallest = i;
        }
        if (cached[smallest].cap < cap) { /* keep the larger ones */
            uint8_t *evicted = cached[smallest].p;
            cached[smallest].p = p;
            cached[smallest].cap = cap;
            p = evicted;
        }
    }
    PyMem_RawFree(p);
}

/* ------------------------------------------------------------------ growable buffers */

typedef struct {
    uint8_t *p;
    Py_ssize_t len, cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    uint8_t *p;
    if (cap >= CACHED_MIN) { /* a large block: from the cache when one fits, the old one given back */
        p = block_take(cap, &cap);
        if (p != NULL && b->p != NULL) {
            memcpy(p, b->p, (size_t)b->len);
            block_give(b->p, b->cap);
        }
    } else {
        p = PyMem_RawRealloc(b->p, (size_t)cap);
    }
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, Py_ssize_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

static inline int buf_i32(Buf *b, int64_t v)
{
    if (v > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "more than 2 GiB in one Arrow binary column");
        return -1;
    }
    int32_t x = (int32_t)v;
    return buf_put(b, &x, 4);
}

static inline int buf_i64(Buf *b, int64_t v) { return buf_put(b, &v, 8); }

/* Bit ``row`` of a validity bitmap set when ``valid``; the buffer's length is kept in bytes. */
static inline int bit_put(Buf *b, Py_ssize_t row, int valid)
{
    Py_ssize_t need = row / 8 + 1;
    if (need > b->len) {
        if (buf_reserve(b, need - b->len) < 0)
            return -1;
        memset(b->p + b->len, 0, (size_t)(need - b->len));
        b->len = need;
    }
    if (valid)
        b->p[row >> 3] |= (uint8_t)(1u << (row & 7));
    return 0;
}

/* ------------------------------------------------------------------ a finished buffer, owned */

typedef struct {
    PyObject_HEAD
    uint8_t *p;
    Py_ssize_t len, cap;
    Py_ssize_t exports;
    int writable;
} OwnedBuffer;

static int owned_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    OwnedBuffer *b = (OwnedBuffer *)self;
    static uint8_t empty[8];
    if (PyBuffer_FillInfo(view, self, b->p ? b->p : empty, b->len, !b->writable, flags) < 0)
        return -1;
    b->exports++;
    return 0;
}

static void owned_releasebuffer(PyObject *self, Py_buffer *view) { ((OwnedBuffer *)self)->exports--; }

static void owned_dealloc(PyObject *self)
{
    block_give(((OwnedBuffer *)self)->p, ((OwnedBuffer *)self)->cap);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs owned_as_buffer = {owned_getbuffer, owned_releasebuffer};

static PyTypeObject OwnedBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "weir.protocol._record_arrow.OwnedBuffer",
    .tp_basicsize = sizeof(OwnedBuffer),
    .tp_dealloc = owned_dealloc,
    .tp_as_buffer = &owned_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory a RecordColumns filled (read-only), or a frame to receive into (writable), exported "
              "through the buffer protocol; a large one goes back to the block cache when freed.",
};

/* The buffer's memory handed to a new OwnedBuffer (shrunk to its length); the Buf is left empty. */
static PyObject *owned_from(Buf *b)
{
    OwnedBuffer *o = PyObject_New(OwnedBuffer, &OwnedBufferType);
    if (o == NULL)
        return NULL;
    if (b->p && b->len < b->cap && b->cap < CACHED_MIN) {
        uint8_t *p = PyMem_RawRealloc(b->p, (size_t)(b->len ? b->len : 1));
        if (p) {
            b->p = p;
            b->cap = b->len ? b->len : 1;
        }
    }
    o->p = b->p;
    o->len = b->len;
    o->cap = b->cap;
    o->exports = 0;
    o->writable = 0;
    b->p = NULL;
    b->len = b->cap = 0;
    return (PyObject *)o;
}

/* ------------------------------------------------------------------ the columns */

enum {
    KEY_VALID, KEY_OFFSETS, KEY_DATA, VALUE_VALID, VALUE_OFFSETS, VALUE_DATA, OFFSETS, TIMESTAMPS, TIMESTAMP_TYPES,
    HEADER_OFFSETS, HEADER_KEY_OFFSETS, HEADER_KEY_DATA, HEADER_VALUE_VALID, HEADER_VALUE_OFFSETS,
    HEADER_VALUE_DATA, N_BUFS
};
static const char *BUF_NAMES[N_BUFS] = {
    "key_validity", "key_offsets", "key_data", "value_validity", "value_offsets", "value_data", "offset",
    "timestamp", "timestamp_type", "header_offsets", "header_key_offsets", "header_key_data",
    "header_value_validity", "header_value_offsets", "header_value_data"};

typedef struct {
    PyObject_HEAD
    Buf b[N_BUFS];
    Py_ssize_t rows, headers, key_nulls, value_nulls, header_value_nulls;
    int started;
} RecordColumns;

static int columns_start(RecordColumns *c)
{
    if (c->started)
        return 0;
    c->started = 1; /* every offsets buffer opens with its 0 */
    return buf_i32(&c->b[KEY_OFFSETS], 0) || buf_i32(&c->b[VALUE_OFFSETS], 0) || buf_i32(&c->b[HEADER_OFFSETS], 0)
        || buf_i32(&c->b[HEADER_KEY_OFFSETS], 0) || buf_i32(&c->b[HEADER_VALUE_OFFSETS], 0) ? -1 : 0;
}

static void columns_dealloc(PyObject *self)
{
    RecordColumns *c = (RecordColumns *)self;
    for (int i = 0; i < N_BUFS; i++)
        block_give(c->b[i].p, c->b[i].cap);
    Py_TYPE(self)->tp_free(self);
}


/* A length-prefixed blob: *ptr NULL for a negative length (null). */
static int read_blob(Cursor *c, const uint8_t **ptr, Py_ssize_t *len)
{
    int64_t size;
    if (read_varint(c, &size) < 0)
        return -1;
    if (size < 0) {
        *ptr = NULL;
        *len = 0;
        return 0;
    }
    if (size > c->end - c->pos) {
        PyErr_SetString(PyExc_ValueError, TRUNCATED);
        return -1;
    }
    *ptr = c->pos;
    *len = (Py_ssize_t)size;
    c->pos += size;
    return 0;
}

/* One nullable binary value into (validity, offsets, data) at ``row``. */
static int put_binary(Buf *valid, Buf *offsets, Buf *data, Py_ssize_t row, const uint8_t *ptr, Py_ssize_t len,
                      Py_ssize_t *nulls)
{
    if (ptr == NULL)
        (*nulls)++;
    if (bit_put(valid, row, ptr != NULL) < 0 || buf_put(data, ptr, len) < 0)
        return -1;
    return buf_i32(offsets, data->len);
}

static PyObject *columns_add(PyObject *self, PyObject *args)
{
    RecordColumns *c = (RecordColumns *)self;
    Py_buffer view;
    Py_ssize_t count, limit;
    long long base_offset, base_timestamp, position;
    PyObject *log_append_time;
    int timestamp_type;
    if (!PyArg_ParseTuple(args, "y*nLLOiLn", &view, &count, &base_offset, &base_timestamp, &log_append_time,
                          &timestamp_type, &position, &limit))
        return NULL;
    long long append_time = 0;
    if (log_append_time != Py_None) {
        append_time = PyLong_AsLongLong(log_append_time);
        if (append_time == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    PyObject *result = NULL;
    long long next = -1;
    if (columns_start(c) < 0)
        goto done;
    Cursor cur = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    for (Py_ssize_t i = 0; i < count && c->rows < limit; i++) {
        int64_t length, timestamp_delta, offset_delta, header_count;
        if (read_varint(&cur, &length) < 0)
            goto done;
        const uint8_t *start = cur.pos;
        if (cur.pos >= cur.end) {
            PyErr_SetString(PyExc_ValueError, TRUNCATED);
            goto done;
        }
        cur.pos++; /* attributes: unused in v2 records */
        const uint8_t *key, *value;
        Py_ssize_t key_len, value_len;
        if (read_varint(&cur, &timestamp_delta) < 0 || read_varint(&cur, &offset_delta) < 0
                || read_blob(&cur, &key, &key_len) < 0 || read_blob(&cur, &value, &value_len) < 0
                || read_varint(&cur, &header_count) < 0)
            goto done;
        int64_t offset, timestamp = append_time;
        if (__builtin_add_overflow(base_offset, offset_delta, &offset)
                || (log_append_time == Py_None
                    && __builtin_add_overflow(base_timestamp, timestamp_delta, &timestamp))) {
            PyErr_SetString(PyExc_ValueError, "offset or timestamp out of range");
            goto done;
        }
        int take = offset >= position;
        Py_ssize_t row = c->rows;
        for (int64_t h = 0; h < header_count; h++) {
            const uint8_t *name, *hvalue;
            Py_ssize_t name_len, hvalue_len;
            if (read_blob(&cur, &name, &name_len) < 0)
                goto done;
            /* as the record walk: the name must be UTF-8 (checked before its value is read) */
            if (name != NULL) {
                PyObject *check = PyUnicode_DecodeUTF8((const char *)name, name_len, "strict");
                if (check == NULL)
                    goto done;
                Py_DECREF(check);
            }
            if (read_blob(&cur, &hvalue, &hvalue_len) < 0)
                goto done;
            if (take) {
                Py_ssize_t h_row = c->headers++;
                if (buf_put(&c->b[HEADER_KEY_DATA], name, name_len) < 0
                        || buf_i32(&c->b[HEADER_KEY_OFFSETS], c->b[HEADER_KEY_DATA].len) < 0
                        || put_binary(&c->b[HEADER_VALUE_VALID], &c->b[HEADER_VALUE_OFFSETS],
                                      &c->b[HEADER_VALUE_DATA], h_row, hvalue, hvalue_len, &c->header_value_nulls) < 0)
                    goto done;
            }
        }
        if (cur.pos - start != length) {
            PyErr_SetString(PyExc_ValueError, "record length does not match its fields");
            goto done;
        }
        if (!take)
            continue;
        int8_t type = (int8_t)timestamp_type;
        if (put_binary(&c->b[KEY_VALID], &c->b[KEY_OFFSETS], &c->b[KEY_DATA], row, key, key_len, &c->key_nulls) < 0
                || put_binary(&c->b[VALUE_VALID], &c->b[VALUE_OFFSETS], &c->b[VALUE_DATA], row, value, value_len,
                              &c->value_nulls) < 0
                || buf_i64(&c->b[OFFSETS], offset) < 0 || buf_i64(&c->b[TIMESTAMPS], timestamp) < 0
                || buf_put(&c->b[TIMESTAMP_TYPES], &type, 1) < 0
                || buf_i32(&c->b[HEADER_OFFSETS], c->headers) < 0)
            goto done;
        c->rows++;
        next = offset + 1;
    }
    result = PyLong_FromLongLong(next);
done:
    PyBuffer_Release(&view);
    return result;
}

static PyObject *columns_reserve(PyObject *self, PyObject *arg)
{
    RecordColumns *c = (RecordColumns *)self;
    Py_ssize_t bytes = PyLong_AsSsize_t(arg);
    if (bytes == -1 && PyErr_Occurred())
        return NULL;
    Buf *data = &c->b[VALUE_DATA];
    if (bytes > data->cap - data->len && buf_reserve(data, bytes) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *columns_finish(PyObject *self, PyObject *unused)
{
    RecordColumns *c = (RecordColumns *)self;
    if (columns_start(c) < 0)
        return NULL;
    PyObject *out = Py_BuildValue("{s:n,s:n,s:n,s:n,s:n}", "rows", c->rows, "headers", c->headers,
                                  "key_nulls", c->key_nulls, "value_nulls", c->value_nulls,
                                  "header_value_nulls", c->header_value_nulls);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < N_BUFS; i++) {
        PyObject *buffer = owned_from(&c->b[i]);
        if (buffer == NULL || PyDict_SetItemString(out, BUF_NAMES[i], buffer) < 0) {
            Py_XDECREF(buffer);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(buffer);
    }
    c->rows = c->headers = c->key_nulls = c->value_nulls = c->header_value_nulls = 0;
    c->started = 0;
    return out;
}

static PyObject *columns_rows(PyObject *self, void *closure)
{
    return PyLong_FromSsize_t(((RecordColumns *)self)->rows);
}

static PyMethodDef columns_methods[] = {
    {"add", columns_add, METH_VARARGS, "Append a v2 batch body's records; see the top of _record_arrow.c."},
    {"reserve", columns_reserve, METH_O,
     "Room for this many more bytes of values (an answer's size: one allocation, not a doubling series)."},
    {"finish", columns_finish, METH_NOARGS, "The buffers filled so far, handed over; the columns start empty again."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef columns_getset[] = {
    {"rows", columns_rows, NULL, "Records held.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RecordColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "weir.protocol._record_arrow.RecordColumns",
    .tp_basicsize = sizeof(RecordColumns),
    .tp_dealloc = columns_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Arrow column buffers filled from v2 record batch bodies; see protocol/record_arrow.py.",
    .tp_methods = columns_methods,
    .tp_getset = columns_getset,
    .tp_new = PyType_GenericNew,
};

/* frame(size): a writable buffer of ``size`` bytes, uninitialized, from the block cache when it is large. */
static PyObject *frame(PyObject *module, PyObject *arg)
{
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred())
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "negative frame size");
        return NULL;
    }
    Buf b = {NULL, 0, 0};
    b.p = block_take(size, &b.cap);
    if (b.p == NULL)
        return PyErr_NoMemory();
    b.len = size;
    PyObject *o = owned_from(&b);
    if (o == NULL)
        block_give(b.p, b.cap);
    else
        ((OwnedBuffer *)o)->writable = 1;
    return o;
}

static PyMethodDef module_methods[] = {
    {"frame", frame, METH_O, "A writable buffer of this many bytes (uninitialized), reusing freed large blocks."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_record_arrow", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__record_arrow(void)
{
    if (PyType_Ready(&OwnedBufferType) < 0 || PyType_Ready(&RecordColumnsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&RecordColumnsType);
    if (PyModule_AddObject(m, "RecordColumns", (PyObject *)&RecordColumnsType) < 0) {
        Py_DECREF(&RecordColumnsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
