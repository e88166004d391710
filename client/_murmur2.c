/* The keyed partition choice in C: toPositive(murmur2(key)) % partitions, as Kafka's
 * Utils.murmur2 and the Java producer's BuiltInPartitioner compute it, per key (the producer)
 * and per Arrow key column (the Spark sink). client/partitioner.py holds the Python reference,
 * which serves when this is not built. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../protocol/_arrow_column.h"

static uint32_t murmur2(const unsigned char *data, Py_ssize_t length) {
    const uint32_t m = 0x5bd1e995u;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    Py_ssize_t tail = length & ~(Py_ssize_t)3;
    for (Py_ssize_t i = 0; i < tail; i += 4) {
        uint32_t k = (uint32_t)data[i] | ((uint32_t)data[i + 1] << 8) | ((uint32_t)data[i + 2] << 16) |
                     ((uint32_t)data[i + 3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (length - tail) {
    case 3: h ^= (uint32_t)data[tail + 2] << 16; /* fall through */
    case 2: h ^= (uint32_t)data[tail + 1] << 8;  /* fall through */
    case 1: h ^= data[tail]; h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

static PyObject *partition_for_key(PyObject *self, PyObject *args) {
    Py_buffer key;
    long partitions;
    if (!PyArg_ParseTuple(args, "y*l", &key, &partitions))
        return NULL;
    if (partitions <= 0) {
        PyBuffer_Release(&key);
        PyErr_SetString(PyExc_ValueError, "partitions must be positive");
        return NULL;
    }
    uint32_t h = murmur2((const unsigned char *)key.buf, key.len);
    PyBuffer_Release(&key);
    return PyLong_FromLong((long)((h & 0x7fffffffu) % (uint32_t)partitions));
}

/*
 * partition_rows(keys, length, partitions, turn) -> (list of row numbers per partition, turn)
 * The rows of an Arrow key column (see protocol/_arrow_column.h) grouped by partition, each group
 * an int32 array (bytes) in row order: keyed rows by murmur2, null keys round-robin (turn + 1, + 2, ...;
 * ``turn`` is the last one used, returned updated). client/partitioner.py holds the reference.
 */
static PyObject *partition_rows(PyObject *self, PyObject *args)
{
    PyObject *keys_spec, *result = NULL, *groups = NULL;
    Py_ssize_t length;
    long partitions;
    long long turn;
    if (!PyArg_ParseTuple(args, "OnlL", &keys_spec, &length, &partitions, &turn))
        return NULL;
    if (partitions <= 0) {
        PyErr_SetString(PyExc_ValueError, "partitions must be positive");
        return NULL;
    }
    ArrowColumn keys;
    if (column_open(keys_spec, length, &keys) < 0)
        return NULL;
    int32_t *chosen = PyMem_Malloc((size_t)(length ? length : 1) * sizeof(int32_t));
    Py_ssize_t *sizes = PyMem_Calloc((size_t)partitions, sizeof(Py_ssize_t));
    int32_t **fill = PyMem_Calloc((size_t)partitions, sizeof(int32_t *));
    if (!chosen || !sizes || !fill) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t row = 0; row < length; row++) {
        const uint8_t *key;
        Py_ssize_t key_len;
        int present = column_get(&keys, row, &key, &key_len);
        if (present < 0)
            goto done;
        if (present)
            chosen[row] = (int32_t)((murmur2(key, key_len) & 0x7fffffffu) % (uint32_t)partitions);
        else
            chosen[row] = (int32_t)(++turn % partitions);
        sizes[chosen[row]]++;
    }
    groups = PyList_New(partitions);
    if (groups == NULL)
        goto done;
    for (long p = 0; p < partitions; p++) {
        PyObject *group = PyBytes_FromStringAndSize(NULL, sizes[p] * (Py_ssize_t)sizeof(int32_t));
        if (group == NULL)
            goto done;
        PyList_SET_ITEM(groups, p, group);
        fill[p] = (int32_t *)PyBytes_AS_STRING(group);
    }
    for (Py_ssize_t row = 0; row < length; row++)
        *fill[chosen[row]]++ = (int32_t)row;
    result = Py_BuildValue("OL", groups, turn);
done:
    Py_XDECREF(groups);
    PyMem_Free(chosen);
    PyMem_Free(sizes);
    PyMem_Free(fill);
    column_close(&keys);
    return result;
}

static PyMethodDef methods[] = {
    {"partition_rows", partition_rows, METH_VARARGS,
     "partition_rows(keys, length, partitions, turn): Arrow rows grouped by partition"},
    {"partition_for_key", partition_for_key, METH_VARARGS,
     "partition_for_key(key, partitions): toPositive(murmur2(key)) % partitions"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_murmur2", NULL, -1, methods};

PyMODINIT_FUNC PyInit__murmur2(void) { return PyModule_Create(&module); }
