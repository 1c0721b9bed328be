/* The string index's kernels (pipelines/string_index.py), each run with the GIL released.
 *
 * A batch hashes hundreds of thousands of terms: the keys of its answer changes for the gold
 * merges, the values of the columns it builds hash indexes of, a walk's vertices; and it finds
 * and inserts as many hashes in open-addressing tables. In numpy a string's hash took some 200 ns
 * (a pass over the array per 8-byte word) and a probe chain a pass per step, all holding the GIL
 * the batch's other threads wait on; here each is a few nanoseconds, on the calling thread alone.
 *
 * The hash: each 8-byte word of the string (read unaligned, the last one zero-padded) is
 * multiplied into a running state and rotated, and the state and the length are mixed at the end
 * (splitmix64's finaliser). It is only a hint: callers compare the values a hash points at.
 *
 * The tables (HashTable): two arrays of a power-of-two size, each slot's hash and row (-1: empty),
 * probed linearly from a hash's low bits. Rows whose hashes collide each take a slot of their own.
 * A table is written by one thread at a time (its owners see to that); readers of a table being
 * written would see it half done, so none are made.
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

/* One 8-byte word of a string multiplied into the running state. */
static inline uint64_t step(uint64_t h, uint64_t w) {
    return rotl(h ^ (w * 0x87C37B91114253D5ULL), 31) * 0x4CF5AD432745937FULL;
}

static uint64_t hash_bytes(const unsigned char *p, uint64_t n) {
    uint64_t h = 0x6C616B6567726170ULL ^ (n * 0x9E3779B97F4A7C15ULL);
    uint64_t w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = step(h, w);
    }
    if (n) {
        w = 0;
        memcpy(&w, p, n);
        h = step(h, w);
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

/* How many hashes ahead a probe loop fetches its slot: a table of millions of slots is far larger
 * than the caches, so each probe is a miss to memory (about 100 ns), and fetching ahead overlaps
 * them (inserting a million hashes took 100 ms one miss at a time). */
#define PREFETCH 16

/* A table's two arrays and their size, checked: a power of two of slots, as many hashes as rows. */
static int table_of(Py_buffer *hash, Py_buffer *row, Py_ssize_t *size) {
    *size = row->len / (Py_ssize_t)sizeof(int64_t);
    if (*size == 0 || (*size & (*size - 1)) || hash->len != row->len) {
        PyErr_SetString(PyExc_ValueError, "hash table: the slots must be a power of two, as many hashes as rows");
        return 0;
    }
    return 1;
}

/* table_insert(hash, row, hashes, rows): each of ``rows`` (of ``hashes``) into a slot of its own.
 * The caller keeps the table under half full, so a free slot is always found. */
static PyObject *table_insert(PyObject *self, PyObject *args) {
    Py_buffer hash, row, hashes, rows;
    if (!PyArg_ParseTuple(args, "w*w*y*y*", &hash, &row, &hashes, &rows))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t size, count = rows.len / (Py_ssize_t)sizeof(int64_t);
    if (!table_of(&hash, &row, &size))
        goto done;
    if (hashes.len != rows.len) {
        PyErr_SetString(PyExc_ValueError, "table_insert: as many hashes as rows");
        goto done;
    }
    uint64_t *slot_hash = (uint64_t *)hash.buf;
    int64_t *slot_row = (int64_t *)row.buf;
    const uint64_t *h = (const uint64_t *)hashes.buf;
    const int64_t *r = (const int64_t *)rows.buf;
    uint64_t mask = (uint64_t)size - 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i + PREFETCH < count) {     /* the slots are random: fetch ahead, not one miss at a time */
            __builtin_prefetch(&slot_row[h[i + PREFETCH] & mask], 1);
            __builtin_prefetch(&slot_hash[h[i + PREFETCH] & mask], 1);
        }
        uint64_t s = h[i] & mask;
        while (slot_row[s] >= 0)
            s = (s + 1) & mask;
        slot_row[s] = r[i];
        slot_hash[s] = h[i];
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&hash);
    PyBuffer_Release(&row);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&rows);
    return result;
}

/* table_find(hash, row, wanted, rows, owners, slots): the rows whose hash is one of ``wanted``,
 * each with the position in ``wanted`` of its hash and its slot, written to the three int64
 * buffers as long as they have room; returns how many there are (a caller whose buffers were too
 * short calls again with room for that many). */
static PyObject *table_find(PyObject *self, PyObject *args) {
    Py_buffer hash, row, wanted, rows, owners, slots;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*w*", &hash, &row, &wanted, &rows, &owners, &slots))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t size, count = wanted.len / (Py_ssize_t)sizeof(uint64_t);
    Py_ssize_t room = rows.len / (Py_ssize_t)sizeof(int64_t), found = 0;
    if (!table_of(&hash, &row, &size))
        goto done;
    if (owners.len < rows.len || slots.len < rows.len) {
        PyErr_SetString(PyExc_ValueError, "table_find: the three outputs must be as long");
        goto done;
    }
    const uint64_t *slot_hash = (const uint64_t *)hash.buf;
    const int64_t *slot_row = (const int64_t *)row.buf;
    const uint64_t *w = (const uint64_t *)wanted.buf;
    int64_t *out_rows = (int64_t *)rows.buf, *out_owners = (int64_t *)owners.buf, *out_slots = (int64_t *)slots.buf;
    uint64_t mask = (uint64_t)size - 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i + PREFETCH < count) {
            __builtin_prefetch(&slot_row[w[i + PREFETCH] & mask], 0);
            __builtin_prefetch(&slot_hash[w[i + PREFETCH] & mask], 0);
        }
        for (uint64_t s = w[i] & mask; slot_row[s] >= 0; s = (s + 1) & mask) {
            if (slot_hash[s] != w[i])
                continue;
            if (found < room) {
                out_rows[found] = slot_row[s];
                out_owners[found] = i;
                out_slots[found] = (int64_t)s;
            }
            found++;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(found);
done:
    PyBuffer_Release(&hash);
    PyBuffer_Release(&row);
    PyBuffer_Release(&wanted);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&owners);
    PyBuffer_Release(&slots);
    return result;
}

static PyMethodDef methods[] = {
    {"hash_strings", hash_strings, METH_VARARGS,
     "hash_strings(offsets, data, first, count, wide, out): each string's 64-bit hash into out."},
    {"table_insert", table_insert, METH_VARARGS,
     "table_insert(hash, row, hashes, rows): rows of hashes into free slots of the table."},
    {"table_find", table_find, METH_VARARGS,
     "table_find(hash, row, wanted, rows, owners, slots): the rows of the wanted hashes; returns their number."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", "The string index's kernels.", -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
