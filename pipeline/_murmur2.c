/* The sink's keyed partition choice in C: toPositive(murmur2(key)) % partitions, as Kafka's
 * Utils.murmur2 and the Java producer's BuiltInPartitioner compute it. The Python one
 * (client/partitioner.py) serves when this is not built; pipeline/partitioning.py picks. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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

static PyMethodDef methods[] = {
    {"partition_for_key", partition_for_key, METH_VARARGS,
     "partition_for_key(key, partitions): toPositive(murmur2(key)) % partitions"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pipeline._murmur2", NULL, -1, methods};

PyMODINIT_FUNC PyInit__murmur2(void) { return PyModule_Create(&module); }
