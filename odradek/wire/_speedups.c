/* odradek.wire._speedups: the record walkers of odradek/wire/records.py, in C.
 *
 * Produce checks that a batch's header agrees with the records it holds (recordsCount,
 * lastOffsetDelta, and the records exactly filling the batch). The Python walkers that do it
 * cost about 1.5 us a record; these do the same walk for a few nanoseconds a record. They are
 * optional: without a compiler the build skips this file and records.py keeps its Python
 * walkers, which stay the reference these must match result for result, error for error
 * (tests/unit/wire/test_speedups.py runs both over the same inputs).
 *
 * What is parsed: the records section of a Kafka RecordBatch v2, uncompressed (the bytes
 * after the 61-byte batch header, or the decompressed block of a compressed batch), a run of
 * records laid out as
 *
 *     length          varint   bytes of the record after this field
 *     attributes      int8     (unused)
 *     timestampDelta  varlong
 *     offsetDelta     varint
 *     keyLength       varint   -1 = null key
 *     key             keyLength bytes
 *     valueLength     varint   -1 = null value
 *     value           valueLength bytes
 *     headersCount    varint
 *     headers         headersCount x (keyLength varint, key, valueLength varint, value)
 *
 * A varint is a zigzag-encoded base-128 number, least significant group first, a set top bit
 * meaning "more bytes follow": at most 5 bytes and 32 significant bits. Only the fields the
 * check needs are read: the length of every record; with walk_records also the offsetDelta
 * (when checked) and the key length (when keys are required); timestampDelta is skipped
 * byte by byte, values and headers are not looked at.
 *
 * Bounds: nothing at or past `end` is ever read, and `end` is at most the buffer's length.
 * The Python walkers are always called with end = len(data), where running past `end` is an
 * IndexError; the cases where they catch it are the V_END results below. Positions are kept
 * in int64_t so that position + a 32-bit length cannot overflow even where Py_ssize_t is 32
 * bits. The GIL is held throughout and the buffer stays exported until the walk is over, so a
 * bytearray cannot be resized under it.
 *
 * Both functions return (index, pos, need, error, arg), which records.py turns into the
 * Python walkers' (index, pos, need) or, when error is not 0, their exception:
 *   index  records walked, counting on from the `index` given
 *   pos    where the first record not walked starts (or end, when all were)
 *   need   bytes needed from pos to complete that record (1 when even its length is
 *          incomplete), for a caller that feeds the data in chunks
 *   error  one of the WALK_* codes, 0 for none; arg its detail (see records.py's _WALK_*)
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Must equal records.py's _WALK_* constants: tests/unit/wire/test_speedups.py has a case
 * for each, with the exception it must give. */
enum {
    WALK_OK = 0,
    WALK_BAD_LENGTH = 1,
    WALK_TOO_MANY = 2,
    WALK_BAD_VARINT = 3,
    WALK_TRUNCATED = 4,
    WALK_BAD_DELTA = 5,
    WALK_KEY_TOO_LONG = 6,
    WALK_FIELDS_TOO_LONG = 7,
};

/* A record's smallest length: attributes, timestampDelta, offsetDelta, keyLength,
 * valueLength and headersCount take a byte each at least. */
#define MIN_RECORD_LENGTH 6

enum { V_OK, V_END, V_BAD };

/* Reads the zigzag varint at *pos into *out and moves *pos past it. V_END: the data ends
 * inside it (the Python reader's IndexError); V_BAD: a sixth byte would be needed, or the
 * value has more than 32 bits (records.py's _read_varint with max_bytes=5, checked in the
 * same order: the 5-byte limit before the end of the data). *pos moves only on V_OK. */
static inline int
read_varint32(const unsigned char *data, int64_t end, int64_t *pos, int64_t *out)
{
    int64_t p = *pos;
    const int64_t limit = p + 5;
    uint64_t raw = 0;
    int shift = 0;
    unsigned int b;

    /* One-byte fast path: the length of every record under 64 bytes, most offsetDeltas. */
    if (p < end && (b = data[p]) < 0x80) {
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        *pos = p + 1;
        return V_OK;
    }
    for (;;) {
        if (p >= limit)
            return V_BAD;
        if (p >= end)
            return V_END;
        b = data[p++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            break;
        shift += 7;
    }
    if (raw >> 32)
        return V_BAD;
    *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    *pos = p;
    return V_OK;
}

static PyObject *
result(Py_ssize_t index, int64_t pos, int64_t need, int error, int64_t arg)
{
    return Py_BuildValue("(nLLiL)", index, (long long)pos, (long long)need, error,
                         (long long)arg);
}

/* The common arguments: the buffer and 0 <= pos <= end <= len(buffer). */
static int
check_span(const Py_buffer *view, Py_ssize_t pos, Py_ssize_t end)
{
    if (pos < 0 || end < pos || end > view->len) {
        PyErr_Format(PyExc_ValueError,
                     "need 0 <= pos <= end <= len(data), got pos %zd, end %zd, len %zd", pos,
                     end, view->len);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(step_lengths_doc,
"step_lengths(data, pos, end, index, count) -> (index, pos, need, error, arg)\n\n"
"records.py's _step_records_as_walk: follows the chain of record lengths in data[pos:end]\n"
"(any buffer: bytes, bytearray, memoryview), reading nothing else of a record.");

static PyObject *
step_lengths(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos_arg, end_arg, index, count;
    (void)module;

    if (!PyArg_ParseTuple(args, "y*nnnn:step_lengths", &view, &pos_arg, &end_arg, &index,
                          &count))
        return NULL;
    if (check_span(&view, pos_arg, end_arg) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)view.buf;
    const int64_t end = end_arg;
    int64_t pos = pos_arg;
    int64_t rec_start, length;
    int error = WALK_OK;
    int64_t need = 1, arg = 0;

    while (pos < end) {
        rec_start = pos;
        int r = read_varint32(data, end, &pos, &length);
        if (r == V_END) {  /* the length itself is cut: its first byte and one more at least */
            pos = rec_start;
            need = end - rec_start + 1;
            break;
        }
        if (r == V_BAD) {
            error = WALK_BAD_VARINT;
            arg = rec_start;
            break;
        }
        if (length < MIN_RECORD_LENGTH) {
            error = WALK_BAD_LENGTH;
            arg = length;
            break;
        }
        pos += length;
        if (pos > end) {  /* a record cut short: the caller may have more data to come */
            need = pos - rec_start;
            pos = rec_start;
            break;
        }
        if (index >= count) {
            error = WALK_TOO_MANY;
            break;
        }
        index++;
    }
    PyBuffer_Release(&view);
    return result(index, pos, need, error, arg);
}

PyDoc_STRVAR(walk_records_doc,
"walk_records(data, pos, end, index, count, keyless, check_deltas)\n"
"    -> (index, pos, need, error, arg)\n\n"
"records.py's _walk_records: steps over the whole records in data[pos:end] (any buffer),\n"
"checking that the offsetDelta of each is its index (when check_deltas), that its key and\n"
"the fields read fit it; appends the index of every null-keyed record to the list keyless\n"
"(None: keys are not read).");

static PyObject *
walk_records(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos_arg, end_arg, index, count;
    PyObject *keyless;
    int check_deltas;
    (void)module;

    if (!PyArg_ParseTuple(args, "y*nnnnOp:walk_records", &view, &pos_arg, &end_arg, &index,
                          &count, &keyless, &check_deltas))
        return NULL;
    if (check_span(&view, pos_arg, end_arg) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (keyless == Py_None) {
        keyless = NULL;
    } else if (!PyList_Check(keyless)) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_TypeError, "keyless must be a list or None, not %.100s",
                     Py_TYPE(keyless)->tp_name);
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)view.buf;
    const int64_t end = end_arg;
    int64_t pos = pos_arg;
    int64_t rec_start, rec_end, length, value, field;
    int error = WALK_OK;
    int64_t need = 1, arg = 0;

    while (pos < end) {
        rec_start = pos;
        int r = read_varint32(data, end, &pos, &length);
        if (r == V_END) {
            pos = rec_start;
            need = end - rec_start + 1;
            break;
        }
        if (r == V_BAD) {
            error = WALK_BAD_VARINT;
            arg = rec_start;
            break;
        }
        if (length < MIN_RECORD_LENGTH) {
            error = WALK_BAD_LENGTH;
            arg = length;
            break;
        }
        rec_end = pos + length;
        if (rec_end > end) {
            need = rec_end - rec_start;
            pos = rec_start;
            break;
        }
        if (index >= count) {
            error = WALK_TOO_MANY;
            break;
        }
        /* From here on a field may run past rec_end (into the next record): that is judged
         * after the fields are read, as the Python walker does; only `end` bounds the reads. */
        pos++;  /* attributes */
        while (pos < end && (data[pos] & 0x80))  /* timestampDelta: skipped, unbounded */
            pos++;
        if (pos >= end) {
            error = WALK_TRUNCATED;
            break;
        }
        pos++;
        field = pos;
        r = read_varint32(data, end, &pos, &value);  /* offsetDelta */
        if (r != V_OK) {
            error = r == V_END ? WALK_TRUNCATED : WALK_BAD_VARINT;
            arg = r == V_END ? 0 : field;
            break;
        }
        if (check_deltas && value != index) {
            error = WALK_BAD_DELTA;
            arg = value;
            break;
        }
        if (keyless != NULL) {
            field = pos;
            r = read_varint32(data, end, &pos, &value);  /* keyLength */
            if (r != V_OK) {
                error = r == V_END ? WALK_TRUNCATED : WALK_BAD_VARINT;
                arg = r == V_END ? 0 : field;
                break;
            }
            if (value < 0) {
                PyObject *i = PyLong_FromSsize_t(index);
                if (i == NULL || PyList_Append(keyless, i) < 0) {
                    Py_XDECREF(i);
                    PyBuffer_Release(&view);
                    return NULL;
                }
                Py_DECREF(i);
            } else if (pos + value > rec_end) {
                error = WALK_KEY_TOO_LONG;
                break;
            }
        }
        if (pos > rec_end) {
            error = WALK_FIELDS_TOO_LONG;
            break;
        }
        pos = rec_end;
        index++;
    }
    PyBuffer_Release(&view);
    return result(index, pos, need, error, arg);
}

static PyMethodDef speedups_methods[] = {
    {"step_lengths", step_lengths, METH_VARARGS, step_lengths_doc},
    {"walk_records", walk_records, METH_VARARGS, walk_records_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot speedups_slots[] = {
    {0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "odradek.wire._speedups",
    .m_doc = "C versions of the record walkers of odradek.wire.records (optional).",
    .m_size = 0,
    .m_methods = speedups_methods,
    .m_slots = speedups_slots,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&speedups_module);
}
