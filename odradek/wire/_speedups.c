/* odradek.wire._speedups: the record walkers of odradek/wire/records.py, in C.
 *
 * Produce checks that a batch's header agrees with the records it holds (recordsCount,
 * lastOffsetDelta, the records exactly filling the batch) and that every record is well
 * formed, as Kafka's DefaultRecord.readFrom does when LogValidator iterates the batch: a
 * record whose fields do not fill its length exactly is refused, since a consumer could not
 * read it. The Python walker that does it costs microseconds a record; this one does the same
 * walk for nanoseconds a record. It is optional: without a compiler the build skips this file
 * and records.py keeps its Python walker, which stays the reference this must match result
 * for result, error for error (tests/unit/wire/test_speedups.py runs both over the same
 * inputs).
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
 * meaning "more bytes follow": at most 5 bytes and 32 significant bits (a varlong: at most 10
 * bytes). Every field is read; timestampDelta for the lowest and highest of the batch (the
 * produce path bounds every record's timestamp with them), keys, values and header
 * contents only for their lengths (header keys are not checked to be UTF-8: Kafka decodes
 * them with replacement characters).
 *
 * Bounds: nothing at or past `end` is ever read, and `end` is at most the buffer's length.
 * The Python walker is always called with end = len(data), where running past `end` is an
 * IndexError; the cases where it catches it are the V_END results below. Positions are kept
 * in int64_t so that position + a 32-bit length cannot overflow even where Py_ssize_t is 32
 * bits. The GIL is held throughout and the buffer stays exported until the walk is over, so a
 * bytearray cannot be resized under it.
 *
 * walk_records returns (index, pos, need, error, arg), which records.py turns into the
 * Python walker's (index, pos, need) or, when error is not 0, its exception:
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
    WALK_OVERRUN = 4,
    WALK_BAD_DELTA = 5,
    WALK_BAD_HEADER_COUNT = 6,
    WALK_BAD_HEADER_KEY = 7,
    WALK_SIZE_MISMATCH = 8,
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

PyDoc_STRVAR(walk_records_doc,
"walk_records(data, pos, end, index, count, keyless, check_deltas[, stamps])\n"
"    -> (index, pos, need, error, arg)\n\n"
"records.py's _walk_records: walks the whole records in data[pos:end] (any buffer), every\n"
"field of each, checking that they fill the record exactly, that the offsetDelta of each is\n"
"its index (when check_deltas) and that there are at most `count`; appends the index of\n"
"every null-keyed record to the list keyless (None: not collected). stamps, a list\n"
"[lowest, highest] timestampDelta so far, is widened by the deltas of the records walked.");

/* One varint field of a record whose reads are bounded by `end` (the data) and judged
 * against the record's end by the caller: V_END maps to WALK_OVERRUN, V_BAD to
 * WALK_BAD_VARINT at the field's start. */
#define READ_FIELD(dst)                                                  \
    do {                                                                 \
        field = pos;                                                     \
        r = read_varint32(data, end, &pos, &(dst));                      \
        if (r != V_OK) {                                                 \
            error = r == V_END ? WALK_OVERRUN : WALK_BAD_VARINT;         \
            arg = r == V_END ? 0 : field;                                \
            goto done;                                                   \
        }                                                                \
    } while (0)

#define CHECK_INSIDE()                                                   \
    do {                                                                 \
        if (pos > rec_end) {                                             \
            error = WALK_OVERRUN;                                        \
            goto done;                                                   \
        }                                                                \
    } while (0)

static PyObject *
walk_records(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos_arg, end_arg, index, count;
    PyObject *keyless, *stamps = Py_None;
    int check_deltas;
    long long lo = 0, hi = 0;
    (void)module;

    if (!PyArg_ParseTuple(args, "y*nnnnOp|O:walk_records", &view, &pos_arg, &end_arg, &index,
                          &count, &keyless, &check_deltas, &stamps))
        return NULL;
    if (check_span(&view, pos_arg, end_arg) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (stamps == Py_None) {
        stamps = NULL;
    } else if (!PyList_Check(stamps) || PyList_GET_SIZE(stamps) != 2) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "stamps must be a list [lowest, highest] or None");
        return NULL;
    } else {
        lo = PyLong_AsLongLong(PyList_GET_ITEM(stamps, 0));
        hi = PyLong_AsLongLong(PyList_GET_ITEM(stamps, 1));
        if (PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
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
    int64_t rec_start, rec_end, length, value, field, headers, h;
    int error = WALK_OK, r;
    int64_t need = 1, arg = 0;
    uint64_t raw;
    int64_t ts;
    int shift;

    while (pos < end) {
        rec_start = pos;
        r = read_varint32(data, end, &pos, &length);
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
        rec_end = pos + length;
        if (rec_end > end) {  /* a record cut short: the caller may have more data to come */
            need = rec_end - rec_start;
            pos = rec_start;
            break;
        }
        if (index >= count) {
            error = WALK_TOO_MANY;
            break;
        }
        /* A field may run past rec_end (into the next record): that is judged after it is
         * read, as the Python walker does; only `end` bounds the reads. */
        pos++;  /* attributes */
        field = pos;  /* timestampDelta: a varlong of at most 10 bytes (Java's long wraps) */
        raw = 0;
        shift = 0;
        while (pos < end && (data[pos] & 0x80) && pos - field < 9) {
            raw |= (uint64_t)(data[pos] & 0x7F) << shift;
            shift += 7;
            pos++;
        }
        if (pos >= end) {
            error = WALK_OVERRUN;
            break;
        }
        if (data[pos] & 0x80) {
            error = WALK_BAD_VARINT;
            arg = field;
            break;
        }
        raw |= (uint64_t)data[pos] << shift;  /* shift <= 63: the 10th byte's low bit */
        pos++;
        ts = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
        if (ts < lo)
            lo = ts;
        if (ts > hi)
            hi = ts;
        READ_FIELD(value);  /* offsetDelta */
        if (check_deltas && value != index) {
            error = WALK_BAD_DELTA;
            arg = value;
            break;
        }
        READ_FIELD(value);  /* keyLength */
        if (value < 0) {
            if (keyless != NULL) {
                PyObject *i = PyLong_FromSsize_t(index);
                if (i == NULL || PyList_Append(keyless, i) < 0) {
                    Py_XDECREF(i);
                    PyBuffer_Release(&view);
                    return NULL;
                }
                Py_DECREF(i);
            }
        } else {
            pos += value;
            CHECK_INSIDE();
        }
        READ_FIELD(value);  /* valueLength */
        if (value >= 0) {
            pos += value;
            CHECK_INSIDE();
        }
        READ_FIELD(headers);  /* headersCount */
        if (headers < 0) {
            error = WALK_BAD_HEADER_COUNT;
            arg = headers;
            break;
        }
        for (h = 0; h < headers; h++) {
            if (pos >= rec_end) {  /* bounds the loop before trusting the count */
                error = WALK_OVERRUN;
                goto done;
            }
            READ_FIELD(value);  /* header keyLength */
            if (value < 0) {
                error = WALK_BAD_HEADER_KEY;
                arg = value;
                goto done;
            }
            pos += value;
            CHECK_INSIDE();
            READ_FIELD(value);  /* header valueLength */
            if (value >= 0) {
                pos += value;
                CHECK_INSIDE();
            }
        }
        CHECK_INSIDE();
        if (pos != rec_end) {
            error = WALK_SIZE_MISMATCH;
            arg = pos - (rec_end - length);
            break;
        }
        index++;
    }
done:
    PyBuffer_Release(&view);
    if (stamps != NULL && error == WALK_OK) {
        PyObject *l = PyLong_FromLongLong(lo), *h_ = PyLong_FromLongLong(hi);
        if (l == NULL || h_ == NULL) {
            Py_XDECREF(l);
            Py_XDECREF(h_);
            return NULL;
        }
        PyList_SetItem(stamps, 0, l);  /* steals the references */
        PyList_SetItem(stamps, 1, h_);
    }
    return result(index, pos, need, error, arg);
}

static PyMethodDef speedups_methods[] = {
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
