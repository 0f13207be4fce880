/*
 * Character-class counts of a text in one C pass: the compiled twin of the pure-Python
 * counter in charclass.py, which defines the classes and is the reference this must match
 * (tests/contextmgmt/core/test_charclass.py compares the two on generated text).
 *
 * Why C: a token estimate runs for every new message before every model call. The Python
 * counter needs several C calls (encode, translate, one count per class) and a hundred
 * bytecodes per text; on short messages those fixed costs, not the bytes, are the time.
 * Here a text is one call: a table lookup per character over the string's own storage
 * (no UTF-8 encoding), counted into four interleaved counter sets so that runs of one
 * class don't wait on one counter. docs/tokens.md, "The estimate", has the measurements.
 *
 * count_into(text, counts, weights) -> float
 *     Adds the text's class counts to ``counts`` (a writable buffer of N_CLASSES signed
 *     64-bit integers, e.g. array("q")) and returns their value under ``weights`` (a tuple
 *     of N_CLASSES floats).
 * count(text, weights) -> (float, bytes)
 *     The same for fresh counts, returned packed as N_CLASSES native signed 64-bit ints.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    C_LOWER, C_UPPER, C_DIGIT, C_PUNCT, C_QUOTE, C_SPACE, C_NEWLINE, C_OTHER_SPACE,
    C_ENCODED, C_LATIN_EXT, C_GREEK, C_CYRILLIC, C_HEBREW_ARMENIAN, C_ARABIC,
    C_INDIC_THAI, C_OTHER_SCRIPTS, C_SYMBOLS, C_CJK_PUNCT_KANA, C_CJK, C_HANGUL,
    C_FULLWIDTH, C_ASTRAL, N_CLASSES
};

static const char *const class_names[N_CLASSES] = {
    "lower", "upper", "digit", "punct", "quote", "space", "newline", "other_space",
    "encoded", "latin_ext", "greek", "cyrillic", "hebrew_armenian", "arabic",
    "indic_thai", "other_scripts", "symbols", "cjk_punct_kana", "cjk", "hangul",
    "fullwidth", "astral",
};

/* Encoded runs: this many ASCII letters and digits in a row, with both in the run. */
#define ENCODED_MIN 20

/* Class of each Latin-1 code point, and of each 64-code-point block of the BMP above
 * ASCII: a block is named by its code points' UTF-8 lead byte, as in charclass.py. */
static uint8_t latin1_class[256];
static uint8_t bmp_block_class[1024];

static int
lead_byte_class(unsigned lead)
{
    if (lead < 0xCE) return C_LATIN_EXT;
    if (lead < 0xD0) return C_GREEK;
    if (lead < 0xD5) return C_CYRILLIC;
    if (lead < 0xD8) return C_HEBREW_ARMENIAN;
    if (lead < 0xE0) return C_ARABIC;
    if (lead < 0xE1) return C_INDIC_THAI;
    if (lead < 0xE2) return C_OTHER_SCRIPTS;
    if (lead < 0xE3) return C_SYMBOLS;
    if (lead < 0xE4) return C_CJK_PUNCT_KANA;
    if (lead < 0xEA) return C_CJK;
    if (lead < 0xEE) return C_HANGUL;
    if (lead < 0xF0) return C_FULLWIDTH;
    return C_ASTRAL;
}

static void
init_tables(void)
{
    for (unsigned c = 0; c < 128; c++) {
        int k;
        if (c >= 'a' && c <= 'z') k = C_LOWER;
        else if (c >= 'A' && c <= 'Z') k = C_UPPER;
        else if (c >= '0' && c <= '9') k = C_DIGIT;
        else if (c == ' ') k = C_SPACE;
        else if (c == '"') k = C_QUOTE;
        else if (c == '\r' || c == '\n') k = C_NEWLINE;
        else if (c > 0x20 && c < 0x7F) k = C_PUNCT;
        else k = C_OTHER_SPACE;
        latin1_class[c] = (uint8_t)k;
    }
    for (unsigned c = 128; c < 256; c++) {
        latin1_class[c] = (uint8_t)lead_byte_class(0xC0 | (c >> 6));
    }
    for (unsigned block = 2; block < 1024; block++) {
        unsigned cp = block << 6;
        unsigned lead = cp < 0x800 ? 0xC0 | (cp >> 6) : 0xE0 | (cp >> 12);
        bmp_block_class[block] = (uint8_t)lead_byte_class(lead);
    }
}

static inline int
class_of(Py_UCS4 cp)
{
    if (cp < 256) return latin1_class[cp];
    if (cp < 0x10000) return bmp_block_class[cp >> 6];
    return C_ASTRAL;
}

static inline int
is_ascii_alnum(Py_UCS4 cp)
{
    return cp < 128 && (latin1_class[cp] == C_LOWER || latin1_class[cp] == C_UPPER ||
                        latin1_class[cp] == C_DIGIT);
}

/* One counting loop per storage width. */
#define DEFINE_COUNT(NAME, TYPE, CLASS_OF)                                                 \
    static void NAME(const TYPE *s, Py_ssize_t len, int64_t *out)                          \
    {                                                                                      \
        int64_t sets[4][N_CLASSES];                                                        \
        memset(sets, 0, sizeof sets);                                                      \
        Py_ssize_t i = 0;                                                                  \
        for (; i + 4 <= len; i += 4) {                                                     \
            sets[0][CLASS_OF(s[i])]++;                                                     \
            sets[1][CLASS_OF(s[i + 1])]++;                                                 \
            sets[2][CLASS_OF(s[i + 2])]++;                                                 \
            sets[3][CLASS_OF(s[i + 3])]++;                                                 \
        }                                                                                  \
        for (; i < len; i++) sets[0][CLASS_OF(s[i])]++;                                    \
        for (int k = 0; k < N_CLASSES; k++)                                                \
            out[k] = sets[0][k] + sets[1][k] + sets[2][k] + sets[3][k];                    \
    }

#define LATIN1_CLASS(c) latin1_class[(c)]
DEFINE_COUNT(count_ucs1, Py_UCS1, LATIN1_CLASS)
DEFINE_COUNT(count_ucs2, Py_UCS2, class_of)
DEFINE_COUNT(count_ucs4, Py_UCS4, class_of)

#define DEFINE_ENCODED(NAME, TYPE)                                                         \
    static int64_t NAME(const TYPE *s, Py_ssize_t len)                                     \
    {                                                                                      \
        int64_t total = 0;                                                                 \
        Py_ssize_t run = 0;                                                                \
        int digits = 0, letters = 0;                                                       \
        for (Py_ssize_t i = 0; i <= len; i++) {                                            \
            Py_UCS4 c = i < len ? (Py_UCS4)s[i] : 0;                                       \
            if (i < len && is_ascii_alnum(c)) {                                            \
                run++;                                                                     \
                if (latin1_class[c] == C_DIGIT) digits = 1;                                \
                else letters = 1;                                                          \
                continue;                                                                  \
            }                                                                              \
            if (run >= ENCODED_MIN && digits && letters) total += run;                     \
            run = 0;                                                                       \
            digits = letters = 0;                                                          \
        }                                                                                  \
        return total;                                                                      \
    }

DEFINE_ENCODED(encoded_ucs1, Py_UCS1)
DEFINE_ENCODED(encoded_ucs2, Py_UCS2)
DEFINE_ENCODED(encoded_ucs4, Py_UCS4)

/* The text's class counts into ``out`` (zeroed here); -1 with an exception set. */
static int
count_text(PyObject *text, int64_t *out)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "expected str, got %.200s", Py_TYPE(text)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return -1;
#endif
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    const void *data = PyUnicode_DATA(text);
    int kind = PyUnicode_KIND(text);
    if (kind == PyUnicode_1BYTE_KIND) count_ucs1(data, len, out);
    else if (kind == PyUnicode_2BYTE_KIND) count_ucs2(data, len, out);
    else count_ucs4(data, len, out);
    /* Base64 and hex are dense in capitals or digits, and a run holds a digit: only such
     * texts are searched for runs (the same gate as the Python counter's). */
    int64_t digits = out[C_DIGIT];
    if (digits && (out[C_UPPER] + digits) * 4 >= out[C_LOWER] && len >= ENCODED_MIN) {
        if (kind == PyUnicode_1BYTE_KIND) out[C_ENCODED] = encoded_ucs1(data, len);
        else if (kind == PyUnicode_2BYTE_KIND) out[C_ENCODED] = encoded_ucs2(data, len);
        else out[C_ENCODED] = encoded_ucs4(data, len);
    }
    return 0;
}

/* Sum of counts times weights, reading a weight only where a class was counted. */
static int
weigh(const int64_t *counts, PyObject *weights, double *value)
{
    if (!PyTuple_Check(weights) || PyTuple_GET_SIZE(weights) != N_CLASSES) {
        PyErr_Format(PyExc_ValueError, "weights: expected a tuple of %d floats", N_CLASSES);
        return -1;
    }
    double sum = 0.0;
    for (int k = 0; k < N_CLASSES; k++) {
        if (!counts[k]) continue;
        double w = PyFloat_AsDouble(PyTuple_GET_ITEM(weights, k));
        if (w == -1.0 && PyErr_Occurred()) return -1;
        sum += (double)counts[k] * w;
    }
    *value = sum;
    return 0;
}

/* The arguments' text (first) counted and weighed by their weights (last); -1 with an
 * exception set, also when there are not ``expected`` arguments. */
static int
count_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t expected, const char *usage,
           int64_t *own, double *value)
{
    if (nargs != expected) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (count_text(args[0], own) < 0) return -1;
    return weigh(own, args[nargs - 1], value);
}

static PyObject *
charclass_count_into(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t own[N_CLASSES];
    double value;
    if (count_args(args, nargs, 3, "count_into(text, counts, weights)", own, &value) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    /* array("q"), or array("l") where a long is 64 bits: anything else would be misread. */
    int integers = view.itemsize == 8 && view.format != NULL &&
                   (strcmp(view.format, "q") == 0 || strcmp(view.format, "l") == 0);
    if (!integers || view.len != (Py_ssize_t)sizeof own) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "counts: expected %d 64-bit integers", N_CLASSES);
        return NULL;
    }
    int64_t *counts = view.buf;
    for (int k = 0; k < N_CLASSES; k++) counts[k] += own[k];
    PyBuffer_Release(&view);
    return PyFloat_FromDouble(value);
}

static PyObject *
charclass_count(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t own[N_CLASSES];
    double value;
    if (count_args(args, nargs, 2, "count(text, weights)", own, &value) < 0) return NULL;
    PyObject *packed = PyBytes_FromStringAndSize((const char *)own, sizeof own);
    if (packed == NULL) return NULL;
    PyObject *result = PyTuple_New(2);
    PyObject *number = PyFloat_FromDouble(value);
    if (result == NULL || number == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(number);
        Py_DECREF(packed);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, number);
    PyTuple_SET_ITEM(result, 1, packed);
    return result;
}

static PyMethodDef charclass_methods[] = {
    {"count_into", (PyCFunction)(void (*)(void))charclass_count_into, METH_FASTCALL,
     "count_into(text, counts, weights) -> value: add the text's class counts to counts."},
    {"count", (PyCFunction)(void (*)(void))charclass_count, METH_FASTCALL,
     "count(text, weights) -> (value, packed counts)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef charclass_module = {
    PyModuleDef_HEAD_INIT, "_charclass",
    "Character-class counts of a text in one C pass (see charclass.py).", -1,
    charclass_methods,
};

PyMODINIT_FUNC
PyInit__charclass(void)
{
    init_tables();
    PyObject *module = PyModule_Create(&charclass_module);
    if (module == NULL) return NULL;
    PyObject *names = PyTuple_New(N_CLASSES);
    if (names == NULL) goto error;
    for (int k = 0; k < N_CLASSES; k++) {
        PyObject *name = PyUnicode_FromString(class_names[k]);
        if (name == NULL) {
            Py_DECREF(names);
            goto error;
        }
        PyTuple_SET_ITEM(names, k, name);
    }
    if (PyModule_AddObject(module, "CLASSES", names) < 0) {
        Py_DECREF(names);
        goto error;
    }
    return module;
error:
    Py_DECREF(module);
    return NULL;
}
