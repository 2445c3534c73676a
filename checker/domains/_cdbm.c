/*
 * _cdbm: the compiled core of checker.domains.dbm.
 *
 * Every function here has the name, the signature and the semantics of the
 * function of the same name in dbm.py, which stays the reference.  DBMs are the
 * same flat Python lists of encoded bounds (``<= c`` is ``2c + 1``, ``< c`` is
 * ``2c``, dbm.INF = 1 << 127 is "no bound"), and the mutating functions write
 * their results back into the list they were given, entry for entry what the
 * Python function leaves there (also when they report an empty zone).
 *
 * Internally a bound is an int64_t:
 *
 *   - dbm.INF maps to INF64 (INT64_MAX) and back;
 *   - every other entry, bound argument or extrapolation constant must have a
 *     magnitude below 2**62 (BOUND_LIMIT), else OverflowError is raised when it is
 *     read (a function may not read every entry: an early exit stops reading);
 *   - sums of bounds are overflow-checked (OverflowError), so a result is never
 *     wrapped.  A finite sum never equals INF64 (see badd).
 *
 * A function that raises leaves its list arguments unchanged: results are
 * computed in a buffer and written back only when complete.
 *
 * Functions that only move entries around (up, reset, free, project, embed,
 * permute) move the Python int objects themselves, so they work on any ints.
 *
 * Indices and dimensions are checked: out-of-range values raise IndexError or
 * ValueError (the Python functions, on such misuse, may silently misbehave).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int64_t bnd;

#define INF64 INT64_MAX         /* dbm.INF */
#define NEG_INF64 INT64_MIN     /* minus infinity, for extrapolation constants only */
#define LE0 ((bnd)1)            /* dbm.LE_ZERO, the bound <= 0 */
#define BOUND_LIMIT ((bnd)1 << 62)
#define MAX_DIM 32768           /* n * n stays far from overflowing anything */

/* Python's >> on ints floors; so does this on every compiler we build with. */
_Static_assert(((bnd)-3 >> 1) == -2, "arithmetic right shift of negative ints required");

static PyObject *inf_obj;       /* the Python int 1 << 127 */
static PyObject *inf_alias;     /* the last other int object found equal to it */
static PyObject *le_zero_obj;   /* the Python int 1 */

/* ------------------------------------------------------------------ bounds */

static int
overflow(void)
{
    PyErr_SetString(PyExc_OverflowError,
                    "sum of DBM bounds overflows the C DBM core's 64-bit range");
    return -1;
}

/* *out = the encoded sum of two finite encoded bounds, a + b - ((a | b) & 1).
 * Returns 0, or -1 with OverflowError set.  The result is never INF64: a + b ==
 * INT64_MAX is odd, so exactly one operand is odd and 1 is subtracted. */
static inline int
badd(bnd a, bnd b, bnd *out)
{
    bnd s;
    bnd odd = (a | b) & 1;
#if defined(__GNUC__) || defined(__clang__)
    if (__builtin_add_overflow(a, b, &s))
        return overflow();
#else
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return overflow();
    s = a + b;
#endif
    if (s == INT64_MIN && odd)
        return overflow();
    *out = s - odd;
    return 0;
}

/* Python's ``-(r >> 1) > c`` where r is an encoded bound (INF64 = dbm.INF) and c a
 * constant (NEG_INF64 = -dbm.INF): "the lower bound -r is above c". */
static inline int
lower_above(bnd r, bnd c)
{
    if (c == NEG_INF64)
        return 1;
    if (r == INF64)
        return 0;
    return -(r >> 1) > c;
}

/* Store the value of o in *v and return 1 if o is an exact int of at most one
 * digit (below 2**30, or 2**15 on some builds: well inside BOUND_LIMIT), which
 * almost every DBM entry is; else return 0 (the caller takes the general path). */
static inline int
small_int(PyObject *o, long long *v)
{
#if PY_VERSION_HEX >= 0x030C0000 && !defined(Py_LIMITED_API) && !defined(PYPY_VERSION)
    if (PyLong_CheckExact(o) && PyUnstable_Long_IsCompact((PyLongObject *)o)) {
        *v = (long long)PyUnstable_Long_CompactValue((PyLongObject *)o);
        return 1;
    }
#elif !defined(Py_LIMITED_API) && !defined(PYPY_VERSION)
    /* CPython before 3.12: the sign and digit count are ob_size. */
    if (PyLong_CheckExact(o)) {
        Py_ssize_t size = Py_SIZE(o);
        if (size == 0) {
            *v = 0;
            return 1;
        }
        if (size == 1 || size == -1) {
            *v = size * (long long)((PyLongObject *)o)->ob_digit[0];
            return 1;
        }
    }
#endif
    return 0;
}

/* Read an encoded bound (a DBM entry or a bound argument). */
static int
read_bound(PyObject *o, bnd *out)
{
    int ovf;
    long long v;

    if (small_int(o, &v)) {
        *out = (bnd)v;
        return 0;
    }
    /* INF entries are usually one of two objects: ours, or dbm.INF (remembered
     * as inf_alias the first time it is compared equal below). */
    if (o == inf_obj || o == inf_alias) {
        *out = INF64;
        return 0;
    }
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "DBM bounds must be ints, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsLongLongAndOverflow(o, &ovf);
    if (ovf == 0) {
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v > -BOUND_LIMIT && v < BOUND_LIMIT) {
            *out = (bnd)v;
            return 0;
        }
    }
    else if (ovf > 0) {
        int eq = PyObject_RichCompareBool(o, inf_obj, Py_EQ);
        if (eq < 0)
            return -1;
        if (eq) {
            Py_XSETREF(inf_alias, Py_NewRef(o));
            *out = INF64;
            return 0;
        }
    }
    PyErr_Format(PyExc_OverflowError,
                 "bound %R is outside the C DBM core's range "
                 "(magnitude below 2**62, or dbm.INF)", o);
    return -1;
}

/* Read an extrapolation constant (a lower, upper or maximal constant). */
static int
read_const(PyObject *o, bnd *out)
{
    int ovf;
    long long v;

    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "clock constants must be ints, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsLongLongAndOverflow(o, &ovf);
    if (ovf == 0) {
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v > -BOUND_LIMIT && v < BOUND_LIMIT) {
            *out = (bnd)v;
            return 0;
        }
    }
    PyErr_Format(PyExc_OverflowError,
                 "clock constant %R is outside the C DBM core's range "
                 "(magnitude below 2**62)", o);
    return -1;
}

static PyObject *
bound_obj(bnd v)
{
    if (v == INF64)
        return Py_NewRef(inf_obj);
    return PyLong_FromLongLong((long long)v);
}

/* ---------------------------------------------------------- argument checks */

static int
get_dim(PyObject *o, const char *what, Py_ssize_t *out)
{
    Py_ssize_t v;

    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsSsize_t(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 1 || v > MAX_DIM) {
        PyErr_Format(PyExc_ValueError, "dimension %s = %zd is not in 1..%d", what, v,
                     MAX_DIM);
        return -1;
    }
    *out = v;
    return 0;
}

static int
get_index(PyObject *o, Py_ssize_t n, const char *what, Py_ssize_t *out)
{
    Py_ssize_t v;

    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsSsize_t(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v >= n) {
        PyErr_Format(PyExc_IndexError, "%s = %zd is not a clock index in 0..%zd", what,
                     v, n - 1);
        return -1;
    }
    *out = v;
    return 0;
}

/* d must be a list of n * n entries. */
static int
check_dbm(PyObject *d, Py_ssize_t n, const char *what)
{
    if (!PyList_Check(d)) {
        PyErr_Format(PyExc_TypeError, "%s must be a list, not %.100s", what,
                     Py_TYPE(d)->tp_name);
        return -1;
    }
    if (PyList_GET_SIZE(d) != n * n) {
        PyErr_Format(PyExc_ValueError, "%s has %zd entries, expected n * n = %zd", what,
                     PyList_GET_SIZE(d), n * n);
        return -1;
    }
    return 0;
}

/* Parse METH_FASTCALL | METH_KEYWORDS arguments by parameter name, all required. */
static int
parse_args(const char *fname, const char *const *names, Py_ssize_t count,
           PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    Py_ssize_t k, t, nkw;

    if (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) {
        if (nargs != count) {
            PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", fname,
                         count, nargs);
            return -1;
        }
        memcpy(out, args, (size_t)count * sizeof(PyObject *));
        return 0;
    }
    if (nargs > count) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", fname,
                     count, nargs);
        return -1;
    }
    for (k = 0; k < count; k++)
        out[k] = k < nargs ? args[k] : NULL;
    nkw = PyTuple_GET_SIZE(kwnames);
    for (t = 0; t < nkw; t++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, t);
        for (k = 0; k < count; k++)
            if (PyUnicode_CompareWithASCIIString(key, names[k]) == 0)
                break;
        if (k == count) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R",
                         fname, key);
            return -1;
        }
        if (out[k] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                         fname, names[k]);
            return -1;
        }
        out[k] = args[nargs + t];
    }
    for (k = 0; k < count; k++)
        if (out[k] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname,
                         names[k]);
            return -1;
        }
    return 0;
}

#define PARSE(fname, ...)                                                           \
    static const char *const names_[] = {__VA_ARGS__};                              \
    PyObject *a_[sizeof(names_) / sizeof(names_[0])];                               \
    if (parse_args(fname, names_, (Py_ssize_t)(sizeof(names_) / sizeof(names_[0])), \
                   args, nargs, kwnames, a_) < 0)                                   \
        return NULL

/* ------------------------------------------------------------ scratch memory */

/* One block of scratch memory per call: on the stack when small, else on the
 * heap.  Pieces are carved from it in 8-byte multiples.  A function declares
 * ``arena_t ar;`` and sets ``ar.base = NULL`` first (so that arena_free is safe
 * on every path); ``= {0}`` would clear the whole 16 KiB block on every call. */
#define STACK_BYTES 16384
#define RUP(x) (((size_t)(x) + 7) & ~(size_t)7)

typedef struct {
    char *base;
    size_t used;
    union {
        int64_t i;
        void *p;
        double d;
        char bytes[STACK_BYTES];
    } stack;
} arena_t;

static int
arena_init(arena_t *a, size_t size)
{
    a->used = 0;
    if (size <= STACK_BYTES) {
        a->base = a->stack.bytes;
        return 0;
    }
    a->base = PyMem_Malloc(size);
    if (a->base == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void *
arena_take(arena_t *a, size_t bytes)
{
    void *p = a->base + a->used;
    a->used += RUP(bytes);
    return p;
}

static void
arena_free(arena_t *a)
{
    if (a->base != NULL && a->base != a->stack.bytes)
        PyMem_Free(a->base);
    a->base = NULL;
}

/* ----------------------------------------------------- list <-> buffer copies */

static int
read_dbm(PyObject *d, Py_ssize_t count, bnd *buf)
{
    Py_ssize_t k;

    for (k = 0; k < count; k++)
        if (read_bound(PyList_GET_ITEM(d, k), &buf[k]) < 0)
            return -1;
    return 0;
}

/* Store buf into the list d wherever it differs from orig (what d holds), all or
 * nothing: the new ints are made first (tmp has room for count pointers). */
static int
write_back(PyObject *d, const bnd *buf, const bnd *orig, Py_ssize_t count,
           PyObject **tmp)
{
    Py_ssize_t k;

    for (k = 0; k < count; k++) {
        if (buf[k] == orig[k]) {
            tmp[k] = NULL;
            continue;
        }
        tmp[k] = bound_obj(buf[k]);
        if (tmp[k] == NULL) {
            while (k-- > 0)
                Py_XDECREF(tmp[k]);
            return -1;
        }
    }
    for (k = 0; k < count; k++)
        if (tmp[k] != NULL) {
            PyObject *old = PyList_GET_ITEM(d, k);
            PyList_SET_ITEM(d, k, tmp[k]);
            Py_DECREF(old);
        }
    return 0;
}

/* A new list holding buf.  Where ref (a list of count entries whose values are
 * ref_vals) holds the same value, its int object is shared. */
static PyObject *
list_from_buf(const bnd *buf, Py_ssize_t count, PyObject *ref, const bnd *ref_vals)
{
    Py_ssize_t k;
    PyObject *out = PyList_New(count);

    if (out == NULL)
        return NULL;
    for (k = 0; k < count; k++) {
        PyObject *o;
        if (ref != NULL && buf[k] == ref_vals[k])
            o = Py_NewRef(PyList_GET_ITEM(ref, k));
        else if ((o = bound_obj(buf[k])) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, o);
    }
    return out;
}

/* Replace d[k] by obj (borrowed), keeping the reference counts right. */
static inline void
list_put(PyObject *d, Py_ssize_t k, PyObject *obj)
{
    PyObject *old = PyList_GET_ITEM(d, k);
    PyList_SET_ITEM(d, k, Py_NewRef(obj));
    Py_DECREF(old);
}

/* ------------------------------------------------------- buffer algorithms */

/* Floyd-Warshall closure, the same rounds and early exit as dbm.canonicalize, so
 * the buffer ends up identical even for an empty zone.  idx: room for n.
 * Returns 1 (non-empty), 0 (empty) or -1 (OverflowError). */
static int
close_buf(bnd *d, Py_ssize_t n, Py_ssize_t *idx)
{
    Py_ssize_t i, j, k, t, cnt;

    for (k = 0; k < n; k++) {
        const bnd *rowk = d + k * n;
        if (rowk[k] < LE0)
            return 0;
        /* Row k and column k do not change in round k (their updates would go
         * through d[k][k] >= LE0), so every entry's update in this round is
         * independent of the order of the others. */
        cnt = 0;
        for (j = 0; j < n; j++)
            if (j != k && rowk[j] != INF64)
                idx[cnt++] = j;
        if (cnt == 0)
            continue;
        for (i = 0; i < n; i++) {
            bnd *rowi = d + i * n;
            bnd dik = rowi[k];
            if (i == k || dik == INF64)
                continue;
            for (t = 0; t < cnt; t++) {
                bnd s;
                j = idx[t];
                if (badd(dik, rowk[j], &s) < 0)
                    return -1;
                if (s < rowi[j])
                    rowi[j] = s;
            }
        }
    }
    for (k = 0; k < n; k++)
        if (d[k * n + k] < LE0)
            return 0;
    return 1;
}

/* dbm.constrain on a buffer.  col, rowv: room for n bounds; rowq: for n indices.
 * Returns 1 (non-empty), 0 (empty, d unchanged) or -1 (OverflowError, d
 * partially updated). */
static int
constrain_buf(bnd *d, Py_ssize_t n, Py_ssize_t i, Py_ssize_t j, bnd b, bnd *col,
              bnd *rowv, Py_ssize_t *rowq)
{
    Py_ssize_t p, q, c, cnt = 0;
    bnd ji, s, t;
    const bnd *rowj;

    if (b >= d[i * n + j])
        return 1;  /* also when b is INF64 */
    ji = d[j * n + i];
    if (ji != INF64) {
        if (badd(ji, b, &s) < 0)
            return -1;
        if (s < LE0)
            return 0;
    }
    d[i * n + j] = b;
    /* Column i and row j are read once, after the new edge is in, like dbm.py:
     * d'[p][q] = min(d[p][q], d[p][i] + b + d[j][q]). */
    for (p = 0; p < n; p++)
        col[p] = d[p * n + i];
    rowj = d + j * n;
    for (q = 0; q < n; q++)
        if (rowj[q] != INF64) {
            rowq[cnt] = q;
            rowv[cnt++] = rowj[q];
        }
    for (p = 0; p < n; p++) {
        bnd *rowp;
        if (col[p] == INF64)
            continue;
        if (badd(col[p], b, &t) < 0)
            return -1;
        rowp = d + p * n;
        for (c = 0; c < cnt; c++) {
            if (badd(t, rowv[c], &s) < 0)
                return -1;
            if (s < rowp[rowq[c]])
                rowp[rowq[c]] = s;
        }
    }
    return 1;
}

static void
up_buf(bnd *d, Py_ssize_t n)
{
    Py_ssize_t i;

    for (i = 1; i < n; i++)
        d[i * n] = INF64;
}

/* dbm.intersect into out (n * n).  idx: room for n indices; col, rowv, rowq as
 * for constrain_buf.  Returns 1 (non-empty), 0 (empty) or -1 (OverflowError). */
static int
intersect_buf(const bnd *a, const bnd *b, Py_ssize_t n, bnd *out, Py_ssize_t *idx,
              bnd *col, bnd *rowv, Py_ssize_t *rowq)
{
    Py_ssize_t k, t, cnt = 0, count = n * n;

    for (k = 0; k < count && cnt < n; k++)
        if (b[k] < a[k])
            idx[cnt++] = k;
    if (cnt < n) {
        /* Few entries are tighter: add them one by one, in index order. */
        memcpy(out, a, (size_t)count * sizeof(bnd));
        for (t = 0; t < cnt; t++) {
            int r = constrain_buf(out, n, idx[t] / n, idx[t] % n, b[idx[t]], col, rowv,
                                  rowq);
            if (r <= 0)
                return r;
        }
        return 1;
    }
    for (k = 0; k < count; k++)
        out[k] = b[k] < a[k] ? b[k] : a[k];
    return close_buf(out, n, idx);
}

/* dbm.extrapolate_lu on a buffer; lo and hi hold NEG_INF64 for negative
 * constants.  row0: room for n bounds; idx: for n indices. */
static int
extrapolate_lu_buf(bnd *d, Py_ssize_t n, const bnd *lo, const bnd *hi, bnd *row0,
                   Py_ssize_t *idx)
{
    Py_ssize_t i, j;
    int changed = 0;

    memcpy(row0, d, (size_t)n * sizeof(bnd));
    for (i = 1; i < n; i++) {
        bnd li = lo[i];
        bnd *rowi = d + i * n;
        if (lower_above(row0[i], li)) {
            for (j = 0; j < n; j++)
                if (j != i && rowi[j] != INF64) {
                    rowi[j] = INF64;
                    changed = 1;
                }
            continue;
        }
        for (j = 0; j < n; j++) {
            bnd b = rowi[j];
            if (j == i || b == INF64)
                continue;
            /* li may be NEG_INF64, below every (b >> 1) of a finite b. */
            if ((b >> 1) > li || (j != 0 && lower_above(row0[j], hi[j]))) {
                rowi[j] = INF64;
                changed = 1;
            }
        }
    }
    for (j = 1; j < n; j++) {
        bnd uj = hi[j];
        if (lower_above(row0[j], uj)) {
            d[j] = uj == NEG_INF64 ? LE0 : 2 * -uj;
            changed = 1;
        }
    }
    if (changed && close_buf(d, n, idx) < 0)
        return -1;
    return 0;
}

/* dbm.extrapolate_m on a buffer; m already clamped at 0. */
static int
extrapolate_m_buf(bnd *d, Py_ssize_t n, const bnd *m, Py_ssize_t *idx)
{
    Py_ssize_t i, j;
    int changed = 0;

    for (i = 0; i < n; i++) {
        bnd *rowi = d + i * n;
        for (j = 0; j < n; j++) {
            bnd b = rowi[j], c;
            if (i == j || b == INF64)
                continue;
            c = b >> 1;
            if (i != 0 && c > m[i]) {
                rowi[j] = INF64;
                changed = 1;
            }
            else if (j != 0 && c < -m[j]) {
                rowi[j] = 2 * -m[j];
                changed = 1;
            }
        }
    }
    if (changed && close_buf(d, n, idx) < 0)
        return -1;
    return 0;
}

/* ----------------------------------------------------------------- closure */

PyDoc_STRVAR(canonicalize_doc,
"canonicalize($module, d, n)\n--\n\n"
"Close d in place (Floyd-Warshall); return False if the zone is empty.\n"
"See checker.domains.dbm.canonicalize.");

static PyObject *
c_canonicalize(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    PARSE("canonicalize", "d", "n");
    PyObject *d = a_[0], *res = NULL;
    Py_ssize_t n, count;
    arena_t ar;
    bnd *buf, *orig;
    Py_ssize_t *idx;
    PyObject **tmp;
    int r;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    count = n * n;
    if (arena_init(&ar, 2 * RUP(count * sizeof(bnd)) + RUP(n * sizeof(Py_ssize_t)) +
                            RUP(count * sizeof(PyObject *))) < 0)
        return NULL;
    buf = arena_take(&ar, count * sizeof(bnd));
    orig = arena_take(&ar, count * sizeof(bnd));
    idx = arena_take(&ar, n * sizeof(Py_ssize_t));
    tmp = arena_take(&ar, count * sizeof(PyObject *));
    if (read_dbm(d, count, buf) < 0)
        goto done;
    memcpy(orig, buf, (size_t)count * sizeof(bnd));
    r = close_buf(buf, n, idx);
    if (r < 0 || write_back(d, buf, orig, count, tmp) < 0)
        goto done;
    res = PyBool_FromLong(r);
done:
    arena_free(&ar);
    return res;
}

PyDoc_STRVAR(is_empty_doc,
"is_empty($module, d, n)\n--\n\n"
"Whether a closed DBM denotes the empty zone (some diagonal entry below LE_ZERO).");

static PyObject *
c_is_empty(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("is_empty", "d", "n");
    PyObject *d = a_[0];
    Py_ssize_t n, k;
    int empty = 0;

    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    for (k = 0; k < n; k++) {
        bnd v;
        if (read_bound(PyList_GET_ITEM(d, k * n + k), &v) < 0)
            return NULL;
        if (v < LE0)
            empty = 1;
    }
    return PyBool_FromLong(empty);
}

PyDoc_STRVAR(constrain_doc,
"constrain($module, d, n, i, j, b)\n--\n\n"
"Intersect the canonical DBM d with x_i - x_j (b), in place; False if empty\n"
"(d then unchanged).  See checker.domains.dbm.constrain.");

static PyObject *
c_constrain(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("constrain", "d", "n", "i", "j", "b");
    PyObject *d = a_[0], *res = NULL;
    Py_ssize_t n, i, j, count;
    bnd b, dij, dji, s;
    arena_t ar;
    bnd *buf, *orig, *col, *rowv;
    Py_ssize_t *rowq;
    PyObject **tmp;
    int r;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0 ||
        get_index(a_[2], n, "i", &i) < 0 || get_index(a_[3], n, "j", &j) < 0 ||
        read_bound(a_[4], &b) < 0)
        return NULL;
    /* The two early exits read two entries only. */
    if (read_bound(PyList_GET_ITEM(d, i * n + j), &dij) < 0)
        return NULL;
    if (b >= dij)
        Py_RETURN_TRUE;
    if (read_bound(PyList_GET_ITEM(d, j * n + i), &dji) < 0)
        return NULL;
    if (dji != INF64) {
        if (badd(dji, b, &s) < 0)
            return NULL;
        if (s < LE0)
            Py_RETURN_FALSE;
    }
    count = n * n;
    if (arena_init(&ar, 4 * RUP(count * sizeof(bnd)) + 2 * RUP(n * sizeof(bnd)) +
                            RUP(n * sizeof(Py_ssize_t))) < 0)
        return NULL;
    buf = arena_take(&ar, count * sizeof(bnd));
    orig = arena_take(&ar, count * sizeof(bnd));
    tmp = arena_take(&ar, count * sizeof(PyObject *));
    col = arena_take(&ar, n * sizeof(bnd));
    rowv = arena_take(&ar, n * sizeof(bnd));
    rowq = arena_take(&ar, n * sizeof(Py_ssize_t));
    if (read_dbm(d, count, buf) < 0)
        goto done;
    memcpy(orig, buf, (size_t)count * sizeof(bnd));
    r = constrain_buf(buf, n, i, j, b, col, rowv, rowq);
    if (r < 0 || write_back(d, buf, orig, count, tmp) < 0)
        goto done;
    res = PyBool_FromLong(r);
done:
    arena_free(&ar);
    return res;
}

/* --------------------------------------------------------- zone operations */

PyDoc_STRVAR(up_doc,
"up($module, d, n)\n--\n\n"
"Let time elapse (future): drop every upper bound x_i - x_0, in place.");

static PyObject *
c_up(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("up", "d", "n");
    PyObject *d = a_[0];
    Py_ssize_t n, i;

    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    for (i = 1; i < n; i++)
        list_put(d, i * n, inf_obj);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(down_doc,
"down($module, d, n)\n--\n\n"
"Time predecessors (past) of the canonical d, in place.");

static PyObject *
c_down(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("down", "d", "n");
    PyObject *d = a_[0], *res = NULL;
    Py_ssize_t n, i, j, count;
    arena_t ar;
    bnd *buf, *orig;
    PyObject **tmp;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    count = n * n;
    if (arena_init(&ar, 3 * RUP(count * sizeof(bnd))) < 0)
        return NULL;
    buf = arena_take(&ar, count * sizeof(bnd));
    orig = arena_take(&ar, count * sizeof(bnd));
    tmp = arena_take(&ar, count * sizeof(PyObject *));
    if (read_dbm(d, count, buf) < 0)
        goto done;
    memcpy(orig, buf, (size_t)count * sizeof(bnd));
    for (j = 1; j < n; j++) {
        bnd b = LE0;
        for (i = 1; i < n; i++)
            if (buf[i * n + j] < b)
                b = buf[i * n + j];
        buf[j] = b;
    }
    if (write_back(d, buf, orig, count, tmp) < 0)
        goto done;
    res = Py_NewRef(Py_None);
done:
    arena_free(&ar);
    return res;
}

/* Take strong references to n entries of d, from start in steps of step. */
static void
snapshot(PyObject *d, Py_ssize_t start, Py_ssize_t step, Py_ssize_t n, PyObject **out)
{
    Py_ssize_t k;

    for (k = 0; k < n; k++)
        out[k] = Py_NewRef(PyList_GET_ITEM(d, start + k * step));
}

static void
release(PyObject **objs, Py_ssize_t n)
{
    Py_ssize_t k;

    for (k = 0; k < n; k++)
        Py_DECREF(objs[k]);
}

PyDoc_STRVAR(reset_doc,
"reset($module, d, n, i)\n--\n\n"
"Set x_i := 0 in place: row i becomes row 0 and column i becomes column 0.");

static PyObject *
c_reset(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("reset", "d", "n", "i");
    PyObject *d = a_[0];
    Py_ssize_t n, i, k;
    arena_t ar;
    PyObject **saved;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0 ||
        get_index(a_[2], n, "i", &i) < 0)
        return NULL;
    if (arena_init(&ar, RUP(n * sizeof(PyObject *))) < 0)
        return NULL;
    saved = arena_take(&ar, n * sizeof(PyObject *));
    /* The same steps as dbm.reset: row i := row 0, then column i := column 0 (read
     * after the row copy), then d[i][i] := LE_ZERO. */
    snapshot(d, 0, 1, n, saved);
    for (k = 0; k < n; k++)
        list_put(d, i * n + k, saved[k]);
    release(saved, n);
    snapshot(d, 0, n, n, saved);
    for (k = 0; k < n; k++)
        list_put(d, k * n + i, saved[k]);
    release(saved, n);
    list_put(d, i * n + i, le_zero_obj);
    arena_free(&ar);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(free_doc,
"free($module, d, n, i)\n--\n\n"
"Remove every constraint on x_i except x_i >= 0, in place.");

static PyObject *
c_free(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("free", "d", "n", "i");
    PyObject *d = a_[0];
    Py_ssize_t n, i, k;
    arena_t ar;
    PyObject **saved;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0 ||
        get_index(a_[2], n, "i", &i) < 0)
        return NULL;
    if (arena_init(&ar, RUP(n * sizeof(PyObject *))) < 0)
        return NULL;
    saved = arena_take(&ar, n * sizeof(PyObject *));
    /* As dbm.free: row i := INF, column i := column 0 (read after), d[i][i] := 1. */
    for (k = 0; k < n; k++)
        list_put(d, i * n + k, inf_obj);
    snapshot(d, 0, n, n, saved);
    for (k = 0; k < n; k++)
        list_put(d, k * n + i, saved[k]);
    release(saved, n);
    list_put(d, i * n + i, le_zero_obj);
    arena_free(&ar);
    Py_RETURN_NONE;
}

/* A new list of dimension m whose entry (p, q) is d[src[p]][src[q]] (the objects). */
static PyObject *
gather(PyObject *d, Py_ssize_t n, const Py_ssize_t *src, Py_ssize_t m)
{
    Py_ssize_t p, q;
    PyObject *out = PyList_New(m * m);

    if (out == NULL)
        return NULL;
    for (p = 0; p < m; p++)
        for (q = 0; q < m; q++)
            PyList_SET_ITEM(out, p * m + q,
                            Py_NewRef(PyList_GET_ITEM(d, src[p] * n + src[q])));
    return out;
}

/* Borrowed item k of a sequence made by PySequence_Fast, as an index. */
static int
seq_index(PyObject *fast, Py_ssize_t k, Py_ssize_t *out)
{
    PyObject *o = PySequence_Fast_GET_ITEM(fast, k);
    Py_ssize_t v;

    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "clock indices must be ints, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsSsize_t(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

PyDoc_STRVAR(project_doc,
"project($module, d, n, keep)\n--\n\n"
"A new DBM over the clocks [0] + keep (in that order) of the canonical d.");

static PyObject *
c_project(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("project", "d", "n", "keep");
    PyObject *d = a_[0], *fast, *res = NULL;
    Py_ssize_t n, m, k;
    arena_t ar;
    Py_ssize_t *src;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    fast = PySequence_Fast(a_[2], "keep must be a sequence of clock indices");
    if (fast == NULL)
        return NULL;
    m = PySequence_Fast_GET_SIZE(fast) + 1;
    if (arena_init(&ar, RUP(m * sizeof(Py_ssize_t))) < 0)
        goto done;
    src = arena_take(&ar, m * sizeof(Py_ssize_t));
    src[0] = 0;
    for (k = 1; k < m; k++) {
        if (seq_index(fast, k - 1, &src[k]) < 0)
            goto done;
        if (src[k] < 0 || src[k] >= n) {
            PyErr_Format(PyExc_IndexError, "keep[%zd] = %zd is not a clock index in 0..%zd",
                         k - 1, src[k], n - 1);
            goto done;
        }
    }
    res = gather(d, n, src, m);
done:
    arena_free(&ar);
    Py_DECREF(fast);
    return res;
}

PyDoc_STRVAR(embed_doc,
"embed($module, d, n, old_to_new, m)\n--\n\n"
"A new canonical DBM of dimension m holding the zone d plus fresh clocks equal to 0.");

static PyObject *
c_embed(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("embed", "d", "n", "old_to_new", "m");
    PyObject *d = a_[0], *fast, *res = NULL;
    Py_ssize_t n, m, i, t;
    arena_t ar;
    Py_ssize_t *src;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0 ||
        get_dim(a_[3], "m", &m) < 0)
        return NULL;
    fast = PySequence_Fast(a_[2], "old_to_new must be a sequence of clock indices");
    if (fast == NULL)
        return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != n || seq_index(fast, 0, &t) < 0 || t != 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "old_to_new must have length n and map 0 to 0");
        goto done;
    }
    if (arena_init(&ar, RUP(m * sizeof(Py_ssize_t))) < 0)
        goto done;
    src = arena_take(&ar, m * sizeof(Py_ssize_t));
    memset(src, 0, (size_t)m * sizeof(Py_ssize_t));
    for (i = 1; i < n; i++) {
        if (seq_index(fast, i, &t) < 0)
            goto done;
        if (!(0 < t && t < m) || src[t]) {
            PyErr_Format(PyExc_ValueError, "old_to_new is not an injection into 1..%zd",
                         m - 1);
            goto done;
        }
        src[t] = i;
    }
    res = gather(d, n, src, m);
done:
    arena_free(&ar);
    Py_DECREF(fast);
    return res;
}

PyDoc_STRVAR(permute_doc,
"permute($module, d, n, perm)\n--\n\n"
"A new DBM where new index perm[i] holds old clock i (perm[0] == 0).");

static PyObject *
c_permute(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("permute", "d", "n", "perm");
    PyObject *d = a_[0], *fast, *res = NULL;
    Py_ssize_t n, i, p;
    arena_t ar;
    Py_ssize_t *inv;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    fast = PySequence_Fast(a_[2], "perm must be a sequence of clock indices");
    if (fast == NULL)
        return NULL;
    if (arena_init(&ar, RUP(n * sizeof(Py_ssize_t))) < 0)
        goto done;
    inv = arena_take(&ar, n * sizeof(Py_ssize_t));
    for (i = 0; i < n; i++)
        inv[i] = -1;
    if (PySequence_Fast_GET_SIZE(fast) != n)
        goto bad;
    for (i = 0; i < n; i++) {
        if (seq_index(fast, i, &p) < 0)
            goto done;
        if (p < 0 || p >= n || inv[p] >= 0 || (i == 0 && p != 0))
            goto bad;
        inv[p] = i;
    }
    res = gather(d, n, inv, n);
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, "perm must be a permutation of range(n) fixing 0");
done:
    arena_free(&ar);
    Py_DECREF(fast);
    return res;
}

PyDoc_STRVAR(includes_doc,
"includes($module, big, small, n)\n--\n\n"
"Whether zone small is a subset of zone big (both canonical): small <= big entrywise.");

static PyObject *
c_includes(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("includes", "big", "small", "n");
    PyObject *big = a_[0], *small = a_[1];
    Py_ssize_t n, k, count;

    if (get_dim(a_[2], "n", &n) < 0 || check_dbm(big, n, "big") < 0 ||
        check_dbm(small, n, "small") < 0)
        return NULL;
    count = n * n;
    for (k = 0; k < count; k++) {
        PyObject *bo = PyList_GET_ITEM(big, k), *so = PyList_GET_ITEM(small, k);
        bnd bv, sv;
        if (bo == so)
            continue;  /* shared int objects: equal */
        if (read_bound(bo, &bv) < 0 || read_bound(so, &sv) < 0)
            return NULL;
        if (sv > bv)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* ------------------------------------------------------------------ packing */

/* A packed DBM (dbm.Packed; dbm.pack's tuple holds the same entries): byte 0 the
 * entry width w (1, 2, 4 or 8), then the n * n entries as little-endian signed
 * w-byte integers, the largest one standing for dbm.INF.  w is the least width that
 * holds every finite entry below that largest integer. */

static inline bnd
packed_top(int w)
{
    return w == 8 ? INT64_MAX : (((bnd)1 << (8 * w - 1)) - 1);
}

/* Entry k of a packed body of width w (INF64 for the largest integer of the width). */
static inline bnd
packed_get(const unsigned char *body, int w, Py_ssize_t k)
{
    const unsigned char *q = body + k * w;
    uint64_t u = 0;
    int b;

    for (b = w - 1; b >= 0; b--)
        u = (u << 8) | q[b];
    if (w < 8 && (u >> (8 * w - 1)) & 1)
        u |= ~(uint64_t)0 << (8 * w);  /* sign-extend */
    if ((bnd)u == packed_top(w))
        return INF64;
    return (bnd)u;
}

/* The packed DBM of the count entries of buf, as a new bytes object. */
static PyObject *
packed_from_buf(const bnd *buf, Py_ssize_t count)
{
    bnd lo = 0, hi = 0;
    Py_ssize_t k;
    PyObject *out;
    unsigned char *s;
    int w, b;

    for (k = 0; k < count; k++) {
        if (buf[k] == INF64)
            continue;
        if (buf[k] < lo)
            lo = buf[k];
        if (buf[k] > hi)
            hi = buf[k];
    }
    for (w = 1; w < 8; w *= 2)
        if (-packed_top(w) - 1 <= lo && hi < packed_top(w))
            break;
    out = PyBytes_FromStringAndSize(NULL, 1 + count * w);
    if (out == NULL)
        return NULL;
    s = (unsigned char *)PyBytes_AS_STRING(out);
    s[0] = (unsigned char)w;
    for (k = 0; k < count; k++) {
        uint64_t u = (uint64_t)(buf[k] == INF64 ? packed_top(w) : buf[k]);
        for (b = 0; b < w; b++) {
            s[1 + k * w + b] = (unsigned char)(u & 0xff);
            u >>= 8;
        }
    }
    return out;
}

/* The width and body of p, a packed DBM of dimension n; -1 with an error if it is
 * not one. */
static int
check_packed(PyObject *p, Py_ssize_t n, const char *what, int *w,
             const unsigned char **body)
{
    const unsigned char *s;
    Py_ssize_t len;

    if (!PyBytes_Check(p)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes from pack(), not %.100s", what,
                     Py_TYPE(p)->tp_name);
        return -1;
    }
    len = PyBytes_GET_SIZE(p);
    s = (const unsigned char *)PyBytes_AS_STRING(p);
    *w = len > 0 ? s[0] : 0;
    if (*w != 1 && *w != 2 && *w != 4 && *w != 8) {
        PyErr_Format(PyExc_ValueError, "%s is not a packed DBM: entry width %d", what, *w);
        return -1;
    }
    if (len != 1 + n * n * *w) {
        PyErr_Format(PyExc_ValueError, "%s has %zd bytes, expected 1 + %d * n * n = %zd",
                     what, len, *w, 1 + n * n * *w);
        return -1;
    }
    *body = s + 1;
    return 0;
}

PyDoc_STRVAR(pack_doc,
"pack($module, d, n)\n--\n\n"
"The DBM d packed into bytes (dbm.Packed): byte 0 the entry width (1, 2, 4 or 8),\n"
"then the entries, little-endian, the width's largest integer for dbm.INF.");

static PyObject *
c_pack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("pack", "d", "n");
    PyObject *d = a_[0], *res = NULL;
    Py_ssize_t n, count;
    bnd *buf;
    arena_t ar;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    count = n * n;
    if (arena_init(&ar, RUP(count * sizeof(bnd))) < 0)
        return NULL;
    buf = arena_take(&ar, count * sizeof(bnd));
    if (read_dbm(d, count, buf) == 0)
        res = packed_from_buf(buf, count);
    arena_free(&ar);
    return res;
}

PyDoc_STRVAR(unpack_doc,
"unpack($module, p, n)\n--\n\n"
"The DBM (a new list) that pack() packed into p.");

static PyObject *
c_unpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("unpack", "p", "n");
    const unsigned char *body;
    Py_ssize_t n, k, count;
    int w;
    PyObject *out;

    if (get_dim(a_[1], "n", &n) < 0 || check_packed(a_[0], n, "p", &w, &body) < 0)
        return NULL;
    count = n * n;
    out = PyList_New(count);
    if (out == NULL)
        return NULL;
    for (k = 0; k < count; k++) {
        PyObject *o = bound_obj(packed_get(body, w, k));
        if (o == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, o);
    }
    return out;
}

PyDoc_STRVAR(join_doc,
"join($module, h, z, n)\n--\n\n"
"The convex hull of the packed canonical DBM h and the canonical DBM z (their\n"
"entrywise maximum, canonical), packed; None when z is included in h.");

static PyObject *
c_join(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("join", "h", "z", "n");
    PyObject *z = a_[1], *res = NULL;
    const unsigned char *body;
    Py_ssize_t n, k, count;
    int w, grows = 0;
    bnd *o;
    arena_t ar;

    ar.base = NULL;
    if (get_dim(a_[2], "n", &n) < 0 || check_packed(a_[0], n, "h", &w, &body) < 0 ||
        check_dbm(z, n, "z") < 0)
        return NULL;
    count = n * n;
    if (arena_init(&ar, RUP(count * sizeof(bnd))) < 0)
        return NULL;
    o = arena_take(&ar, count * sizeof(bnd));
    if (read_dbm(z, count, o) < 0)
        goto done;
    for (k = 0; k < count; k++) {
        bnd h = packed_get(body, w, k);
        if (o[k] > h)
            grows = 1;
        else
            o[k] = h;
    }
    res = grows ? packed_from_buf(o, count) : Py_NewRef(Py_None);
done:
    arena_free(&ar);
    return res;
}

PyDoc_STRVAR(includes_packed_doc,
"includes_packed($module, big, small, n)\n--\n\n"
"includes() of two packed DBMs of dimension n.");

static PyObject *
c_includes_packed(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames)
{
    PARSE("includes_packed", "big", "small", "n");
    const unsigned char *bb, *sb;
    Py_ssize_t n, k, count;
    int wb, ws;

    if (get_dim(a_[2], "n", &n) < 0 || check_packed(a_[0], n, "big", &wb, &bb) < 0 ||
        check_packed(a_[1], n, "small", &ws, &sb) < 0)
        return NULL;
    count = n * n;
    if (wb == 1 && ws == 1) {
        /* The common case: one signed byte per entry, 127 for INF on both sides. */
        for (k = 0; k < count; k++)
            if ((signed char)sb[k] > (signed char)bb[k])
                Py_RETURN_FALSE;
        Py_RETURN_TRUE;
    }
    for (k = 0; k < count; k++)
        if (packed_get(sb, ws, k) > packed_get(bb, wb, k))
            Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(intersect_doc,
"intersect($module, a, b, n)\n--\n\n"
"The canonical intersection of two canonical DBMs, or None if it is empty.");

static PyObject *
c_intersect(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("intersect", "a", "b", "n");
    PyObject *a = a_[0], *b = a_[1], *res = NULL;
    Py_ssize_t n, count, *idx, *rowq;
    arena_t ar;
    bnd *av, *bv, *out, *col, *rowv;
    int r;

    ar.base = NULL;
    if (get_dim(a_[2], "n", &n) < 0 || check_dbm(a, n, "a") < 0 ||
        check_dbm(b, n, "b") < 0)
        return NULL;
    count = n * n;
    if (arena_init(&ar, 3 * RUP(count * sizeof(bnd)) + 2 * RUP(n * sizeof(bnd)) +
                            2 * RUP(n * sizeof(Py_ssize_t))) < 0)
        return NULL;
    av = arena_take(&ar, count * sizeof(bnd));
    bv = arena_take(&ar, count * sizeof(bnd));
    out = arena_take(&ar, count * sizeof(bnd));
    col = arena_take(&ar, n * sizeof(bnd));
    rowv = arena_take(&ar, n * sizeof(bnd));
    idx = arena_take(&ar, n * sizeof(Py_ssize_t));
    rowq = arena_take(&ar, n * sizeof(Py_ssize_t));
    if (read_dbm(a, count, av) < 0 || read_dbm(b, count, bv) < 0)
        goto done;
    r = intersect_buf(av, bv, n, out, idx, col, rowv, rowq);
    if (r < 0)
        goto done;
    if (r == 0)
        res = Py_NewRef(Py_None);
    else
        res = list_from_buf(out, count, a, av);
done:
    arena_free(&ar);
    return res;
}

PyDoc_STRVAR(subtract_doc,
"subtract($module, a, b, n)\n--\n\n"
"The difference a \\ b of two canonical DBMs as a list of canonical DBMs, in the\n"
"order of checker.domains.dbm.subtract.");

static PyObject *
c_subtract(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("subtract", "a", "b", "n");
    PyObject *a = a_[0], *b = a_[1], *res = NULL, *pieces = NULL;
    Py_ssize_t n, count, k, *idx, *rowq;
    arena_t ar;
    bnd *av, *bv, *rest, *piece, *col, *rowv;
    int r;

    ar.base = NULL;
    if (get_dim(a_[2], "n", &n) < 0 || check_dbm(a, n, "a") < 0 ||
        check_dbm(b, n, "b") < 0)
        return NULL;
    count = n * n;
    if (arena_init(&ar, 4 * RUP(count * sizeof(bnd)) + 2 * RUP(n * sizeof(bnd)) +
                            2 * RUP(n * sizeof(Py_ssize_t))) < 0)
        return NULL;
    av = arena_take(&ar, count * sizeof(bnd));
    bv = arena_take(&ar, count * sizeof(bnd));
    rest = arena_take(&ar, count * sizeof(bnd));
    piece = arena_take(&ar, count * sizeof(bnd));
    col = arena_take(&ar, n * sizeof(bnd));
    rowv = arena_take(&ar, n * sizeof(bnd));
    idx = arena_take(&ar, n * sizeof(Py_ssize_t));
    rowq = arena_take(&ar, n * sizeof(Py_ssize_t));
    if (read_dbm(a, count, av) < 0 || read_dbm(b, count, bv) < 0)
        goto done;
    r = intersect_buf(av, bv, n, rest, idx, col, rowv, rowq);
    if (r < 0)
        goto done;
    if (r == 0) {  /* disjoint: [a[:]] */
        PyObject *copy = PyList_GetSlice(a, 0, count);
        if (copy != NULL) {
            res = PyList_New(1);
            if (res == NULL)
                Py_DECREF(copy);
            else
                PyList_SET_ITEM(res, 0, copy);
        }
        goto done;
    }
    pieces = PyList_New(0);
    if (pieces == NULL)
        goto done;
    memcpy(rest, av, (size_t)count * sizeof(bnd));
    for (k = 0; k < count; k++) {
        bnd bb = bv[k];
        Py_ssize_t i = k / n, j = k % n;
        if (bb >= rest[k])
            continue;
        /* The piece of what is left outside x_i - x_j (bb): x_j - x_i (1 - bb);
         * bb < rest[k] <= INF64 is finite and below 2**62 in magnitude. */
        memcpy(piece, rest, (size_t)count * sizeof(bnd));
        r = constrain_buf(piece, n, j, i, 1 - bb, col, rowv, rowq);
        if (r < 0)
            goto done;
        if (r > 0) {
            PyObject *p = list_from_buf(piece, count, a, av);
            int err;
            if (p == NULL)
                goto done;
            err = PyList_Append(pieces, p);
            Py_DECREF(p);
            if (err < 0)
                goto done;
        }
        r = constrain_buf(rest, n, i, j, bb, col, rowv, rowq);
        if (r < 0)
            goto done;
        if (r == 0)
            break;  /* cannot happen: a & b is non-empty (as in dbm.py) */
    }
    res = Py_NewRef(pieces);
done:
    Py_XDECREF(pieces);
    arena_free(&ar);
    return res;
}

/* Read the first n constants of a sequence; with negative_inf, a negative one
 * becomes NEG_INF64, else it is clamped at 0.  Entries below first are skipped. */
static int
read_consts(PyObject *seq, Py_ssize_t n, Py_ssize_t first, int negative_inf,
            const char *what, bnd *out)
{
    PyObject *fast = PySequence_Fast(seq, "clock constants must be a sequence of ints");
    Py_ssize_t k;

    if (fast == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) < n) {
        PyErr_Format(PyExc_IndexError, "%s has %zd entries, fewer than n = %zd", what,
                     PySequence_Fast_GET_SIZE(fast), n);
        Py_DECREF(fast);
        return -1;
    }
    for (k = 0; k < first; k++)
        out[k] = 0;
    for (k = first; k < n; k++) {
        bnd c;
        if (read_const(PySequence_Fast_GET_ITEM(fast, k), &c) < 0) {
            Py_DECREF(fast);
            return -1;
        }
        out[k] = c >= 0 ? c : (negative_inf ? NEG_INF64 : 0);
    }
    Py_DECREF(fast);
    return 0;
}

PyDoc_STRVAR(extrapolate_lu_doc,
"extrapolate_lu($module, d, n, lower, upper)\n--\n\n"
"Apply Extra+_LU to the canonical DBM d in place, then re-canonicalize.\n"
"See checker.domains.dbm.extrapolate_lu.");

static PyObject *
c_extrapolate_lu(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    PARSE("extrapolate_lu", "d", "n", "lower", "upper");
    PyObject *d = a_[0], *res = NULL;
    Py_ssize_t n, count, *idx;
    arena_t ar;
    bnd *buf, *orig, *lo, *hi, *row0;
    PyObject **tmp;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    count = n * n;
    if (arena_init(&ar, 3 * RUP(count * sizeof(bnd)) + 3 * RUP(n * sizeof(bnd)) +
                            RUP(n * sizeof(Py_ssize_t))) < 0)
        return NULL;
    buf = arena_take(&ar, count * sizeof(bnd));
    orig = arena_take(&ar, count * sizeof(bnd));
    tmp = arena_take(&ar, count * sizeof(PyObject *));
    lo = arena_take(&ar, n * sizeof(bnd));
    hi = arena_take(&ar, n * sizeof(bnd));
    row0 = arena_take(&ar, n * sizeof(bnd));
    idx = arena_take(&ar, n * sizeof(Py_ssize_t));
    /* lower[0] and upper[0] are never read (x_0's constants are 0). */
    if (read_consts(a_[2], n > 1 ? n : 0, 1, 1, "lower", lo) < 0 ||
        read_consts(a_[3], n > 1 ? n : 0, 1, 1, "upper", hi) < 0 ||
        read_dbm(d, count, buf) < 0)
        goto done;
    memcpy(orig, buf, (size_t)count * sizeof(bnd));
    if (extrapolate_lu_buf(buf, n, lo, hi, row0, idx) < 0 ||
        write_back(d, buf, orig, count, tmp) < 0)
        goto done;
    res = Py_NewRef(Py_None);
done:
    arena_free(&ar);
    return res;
}

PyDoc_STRVAR(extrapolate_m_doc,
"extrapolate_m($module, d, n, m)\n--\n\n"
"Apply classic Extra_M (per-clock maximal constants m) to d in place, then\n"
"re-canonicalize.  See checker.domains.dbm.extrapolate_m.");

static PyObject *
c_extrapolate_m(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    PARSE("extrapolate_m", "d", "n", "m");
    PyObject *d = a_[0], *res = NULL;
    Py_ssize_t n, count, *idx;
    arena_t ar;
    bnd *buf, *orig, *mv;
    PyObject **tmp;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(d, n, "d") < 0)
        return NULL;
    count = n * n;
    if (arena_init(&ar, 3 * RUP(count * sizeof(bnd)) + RUP(n * sizeof(bnd)) +
                            RUP(n * sizeof(Py_ssize_t))) < 0)
        return NULL;
    buf = arena_take(&ar, count * sizeof(bnd));
    orig = arena_take(&ar, count * sizeof(bnd));
    tmp = arena_take(&ar, count * sizeof(PyObject *));
    mv = arena_take(&ar, n * sizeof(bnd));
    idx = arena_take(&ar, n * sizeof(Py_ssize_t));
    if (read_consts(a_[2], n, 0, 0, "m", mv) < 0 || read_dbm(d, count, buf) < 0)
        goto done;
    memcpy(orig, buf, (size_t)count * sizeof(bnd));
    if (extrapolate_m_buf(buf, n, mv, idx) < 0 ||
        write_back(d, buf, orig, count, tmp) < 0)
        goto done;
    res = Py_NewRef(Py_None);
done:
    arena_free(&ar);
    return res;
}

/* ---------------------------------------------------------------- successor */

/* Unpack item k of a constraint sequence into (i, j, b), indices checked against
 * dim.  Like ``for i, j, b in seq``, the item may be any sequence of three. */
static int
read_constraint(PyObject *fast, Py_ssize_t k, Py_ssize_t dim, const char *what,
                Py_ssize_t *i, Py_ssize_t *j, bnd *b)
{
    PyObject *item = PySequence_Fast_GET_ITEM(fast, k), *tri;
    int r = -1;

    tri = PySequence_Fast(item, "a constraint must be a sequence (i, j, b)");
    if (tri == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(tri) != 3) {
        PyErr_Format(PyExc_ValueError, "%s[%zd] has %zd items, expected (i, j, b)", what,
                     k, PySequence_Fast_GET_SIZE(tri));
        goto done;
    }
    if (get_index(PySequence_Fast_GET_ITEM(tri, 0), dim, "constraint index i", i) < 0 ||
        get_index(PySequence_Fast_GET_ITEM(tri, 1), dim, "constraint index j", j) < 0 ||
        read_bound(PySequence_Fast_GET_ITEM(tri, 2), b) < 0)
        goto done;
    r = 0;
done:
    Py_DECREF(tri);
    return r;
}

PyDoc_STRVAR(post_doc,
"post($module, z, n, guard, keep, m, inv)\n--\n\n"
"The zone reached from the canonical z by one discrete step (guard, clocks carried\n"
"over by keep, others reset, invariant, time elapse, invariant), or None if empty.\n"
"See checker.domains.dbm.post.");

static PyObject *
c_post(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PARSE("post", "z", "n", "guard", "keep", "m", "inv");
    PyObject *z = a_[0], *res = NULL;
    PyObject *gf = NULL, *kf = NULL, *vf = NULL;
    Py_ssize_t n, m, w, k, ninv, nkeep, p, q, i, j;
    Py_ssize_t *src, *rowq, *inv_i, *inv_j;
    arena_t ar;
    bnd *zb, *tb, *col, *rowv, *inv_b, b;
    int r;

    ar.base = NULL;
    if (get_dim(a_[1], "n", &n) < 0 || check_dbm(z, n, "z") < 0 ||
        get_dim(a_[4], "m", &m) < 0)
        return NULL;
    if ((gf = PySequence_Fast(a_[2], "guard must be a sequence of (i, j, b)")) == NULL ||
        (kf = PySequence_Fast(a_[3], "keep must be a sequence of (old, new)")) == NULL ||
        (vf = PySequence_Fast(a_[5], "inv must be a sequence of (i, j, b)")) == NULL)
        goto done;
    ninv = PySequence_Fast_GET_SIZE(vf);
    nkeep = PySequence_Fast_GET_SIZE(kf);
    w = n > m ? n : m;
    if (arena_init(&ar, RUP(n * n * sizeof(bnd)) + RUP(m * m * sizeof(bnd)) +
                            2 * RUP(w * sizeof(bnd)) + RUP(w * sizeof(Py_ssize_t)) +
                            RUP(m * sizeof(Py_ssize_t)) + 2 * RUP(ninv * sizeof(Py_ssize_t)) +
                            RUP(ninv * sizeof(bnd))) < 0)
        goto done;
    zb = arena_take(&ar, n * n * sizeof(bnd));
    tb = arena_take(&ar, m * m * sizeof(bnd));
    col = arena_take(&ar, w * sizeof(bnd));
    rowv = arena_take(&ar, w * sizeof(bnd));
    rowq = arena_take(&ar, w * sizeof(Py_ssize_t));
    src = arena_take(&ar, m * sizeof(Py_ssize_t));
    inv_i = arena_take(&ar, ninv * sizeof(Py_ssize_t));
    inv_j = arena_take(&ar, ninv * sizeof(Py_ssize_t));
    inv_b = arena_take(&ar, ninv * sizeof(bnd));
    if (read_dbm(z, n * n, zb) < 0)
        goto done;

    /* 1. The guard, on a copy of z. */
    for (k = 0; k < PySequence_Fast_GET_SIZE(gf); k++) {
        if (read_constraint(gf, k, n, "guard", &i, &j, &b) < 0)
            goto done;
        r = constrain_buf(zb, n, i, j, b, col, rowv, rowq);
        if (r < 0)
            goto done;
        if (r == 0) {
            res = Py_NewRef(Py_None);
            goto done;
        }
    }

    /* 2. New clock p is old clock src[p]; reset clocks copy the reference clock.
     * Checked like project (old indices) then embed (new indices). */
    for (p = 0; p < m; p++)
        src[p] = -1;
    src[0] = 0;
    for (k = 0; k < nkeep; k++) {
        PyObject *pair = PySequence_Fast(PySequence_Fast_GET_ITEM(kf, k),
                                         "keep must be a sequence of (old, new)");
        Py_ssize_t old, new_;
        int bad;
        if (pair == NULL)
            goto done;
        if (PySequence_Fast_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_ValueError, "keep[%zd] has %zd items, expected (old, new)",
                         k, PySequence_Fast_GET_SIZE(pair));
            Py_DECREF(pair);
            goto done;
        }
        bad = get_index(PySequence_Fast_GET_ITEM(pair, 0), n, "keep's old index", &old) < 0 ||
              seq_index(pair, 1, &new_) < 0;
        Py_DECREF(pair);
        if (bad)
            goto done;
        if (!(0 < new_ && new_ < m) || src[new_] >= 0) {
            PyErr_Format(PyExc_ValueError,
                         "keep's new indices are not an injection into 1..%zd", m - 1);
            goto done;
        }
        src[new_] = old;
    }
    for (p = 0; p < m; p++)
        if (src[p] < 0)
            src[p] = 0;
    for (p = 0; p < m; p++)
        for (q = 0; q < m; q++)
            tb[p * m + q] = zb[src[p] * n + src[q]];

    /* 3. Invariant, time elapse, invariant. */
    for (k = 0; k < ninv; k++) {
        if (read_constraint(vf, k, m, "inv", &inv_i[k], &inv_j[k], &inv_b[k]) < 0)
            goto done;
        r = constrain_buf(tb, m, inv_i[k], inv_j[k], inv_b[k], col, rowv, rowq);
        if (r < 0)
            goto done;
        if (r == 0) {
            res = Py_NewRef(Py_None);
            goto done;
        }
    }
    up_buf(tb, m);
    for (k = 0; k < ninv; k++) {
        r = constrain_buf(tb, m, inv_i[k], inv_j[k], inv_b[k], col, rowv, rowq);
        if (r < 0)
            goto done;
        if (r == 0) {
            res = Py_NewRef(Py_None);
            goto done;
        }
    }
    res = list_from_buf(tb, m * m, NULL, NULL);
done:
    Py_XDECREF(gf);
    Py_XDECREF(kf);
    Py_XDECREF(vf);
    arena_free(&ar);
    return res;
}

/* ------------------------------------------------------------------ module */

#define METH(name) \
    {#name, (PyCFunction)(void (*)(void))c_##name, METH_FASTCALL | METH_KEYWORDS, name##_doc}

static PyMethodDef cdbm_methods[] = {
    METH(canonicalize),
    METH(is_empty),
    METH(constrain),
    METH(up),
    METH(down),
    METH(reset),
    METH(free),
    METH(project),
    METH(embed),
    METH(permute),
    METH(includes),
    METH(pack),
    METH(unpack),
    METH(join),
    METH(includes_packed),
    METH(intersect),
    METH(subtract),
    METH(extrapolate_lu),
    METH(extrapolate_m),
    METH(post),
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(cdbm_doc,
"The compiled core of checker.domains.dbm: the same functions on the same\n"
"list-of-int DBMs, for entries below 2**62 in magnitude (or dbm.INF).");

static struct PyModuleDef cdbm_module = {
    PyModuleDef_HEAD_INIT, "_cdbm", cdbm_doc, -1, cdbm_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__cdbm(void)
{
    PyObject *mod, *one;

    if (inf_obj == NULL) {
        one = PyLong_FromLong(1);
        if (one == NULL)
            return NULL;
        inf_obj = PyLong_FromLong(127);
        if (inf_obj != NULL)
            Py_SETREF(inf_obj, PyNumber_Lshift(one, inf_obj));
        if (inf_obj == NULL) {
            Py_DECREF(one);
            return NULL;
        }
        le_zero_obj = one;
    }
    mod = PyModule_Create(&cdbm_module);
    if (mod == NULL)
        return NULL;
    if (PyModule_AddObjectRef(mod, "INF", inf_obj) < 0 ||
        PyModule_AddIntConstant(mod, "BOUND_LIMIT_BITS", 62) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
