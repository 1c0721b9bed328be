/* String hashing over Arrow buffers, without the GIL (pipelines/string_index.py).
 *
 * A batch hashes hundreds of thousands of terms: the keys of its answer changes for the gold
 * merges, the values of the columns it builds hash indexes of, a walk's vertices. In numpy that
 * took some 200 ns a string (a pass over the array per 8-byte word) while holding the GIL the
 * batch's other threads wait on; here it is a few nanoseconds a string, on the calling thread
 * alone, so the others go on.
 *
 * The hash: each 8-byte word of the string (read unaligned, the last one zero-padded) is
 * multiplied into a running state and rotated, and the state and the length are mixed at the end
 * (splitmix64's finaliser). It is only a hint: callers compare the values a hash points at.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t hash_bytes(const unsigned char *p, uint64_t n) {
    uint64_t h = 0x6C616B6567726170ULL ^ (n * 0x9E3779B97F4A7C15ULL);
    uint64_t w;
    while (n >= 8) {
        memcpy(&w, p, 8);
        h = rotl(h ^ (w * 0x87C37B91114253D5ULL), 31) * 0x4CF5AD432745937FULL;
        p += 8;
        n -= 8;
    }
    if (n) {
        w = 0;
        memcpy(&w, p, n);
        h = rotl(h ^ (w * 0x87C37B91114253D5ULL), 31) * 0x4CF5AD432745937FULL;
    }
    return mix(h);
}

/* hash_strings(offsets, data, first, count, wide, out): the hash of each of ``count`` strings of
 * an Arrow string or binary array, the i-th spanning data[offsets[first + i]:offsets[first + i + 1]]
 * (offsets int64 if ``wide``, else int32), written to ``out`` (count uint64s). Nulls are the
 * caller's to mark. */
static PyObject *hash_strings(PyObject *self, PyObject *args) {
    Py_buffer offsets, data, out;
    Py_ssize_t first, count;
    int wide;
    if (!PyArg_ParseTuple(args, "y*y*nnpw*", &offsets, &data, &first, &count, &wide, &out))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t width = wide ? 8 : 4;
    if (first < 0 || count < 0 || (first + count + 1) * width > offsets.len
            || count * (Py_ssize_t)sizeof(uint64_t) > out.len) {
        PyErr_SetString(PyExc_ValueError, "hash_strings: buffers too short for the strings asked");
        goto done;
    }
    const unsigned char *bytes = (const unsigned char *)data.buf;
    uint64_t *hashes = (uint64_t *)out.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t lo, hi;
        if (wide) {
            lo = ((const int64_t *)offsets.buf)[first + i];
            hi = ((const int64_t *)offsets.buf)[first + i + 1];
        } else {
            lo = ((const int32_t *)offsets.buf)[first + i];
            hi = ((const int32_t *)offsets.buf)[first + i + 1];
        }
        if (lo < 0 || hi < lo || hi > data.len) {
            bad = 1;
            break;
        }
        hashes[i] = hash_bytes(bytes + lo, (uint64_t)(hi - lo));
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "hash_strings: an offset points outside the data");
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"hash_strings", hash_strings, METH_VARARGS,
     "hash_strings(offsets, data, first, count, wide, out): each string's 64-bit hash into out."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_strings", "String hashing over Arrow buffers.", -1, methods};

PyMODINIT_FUNC PyInit__strings(void) { return PyModule_Create(&module); }
