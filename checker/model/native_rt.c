/* The runtime of kvrace's compiled successor functions.
 *
 * checker/model/native.py appends the tables and functions of one model (or of several:
 * a bundle, for the tests) to this text (see the Model struct below) and compiles the
 * whole into a CPython extension.
 * Nothing here depends on a model.  A Program object answers, for a discrete
 * state (a tuple of ints), the model's edges, deadlines and broken invariants
 * with ready-made Python objects (Edge, ClockAtom, Violation), or None: "fall
 * back to the generated Python for this state".  It falls back on every model
 * run-time error, every failing assert, every value that leaves 64 bits, every
 * index it cannot prove inside its map and once a call's time deadline has
 * passed, so that messages, faults and limits are always the reference's own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <string.h>

typedef long long V;

#if defined(__GNUC__) || defined(__clang__)
#define ADD_OV(a, b, r) __builtin_add_overflow((a), (b), (r))
#define SUB_OV(a, b, r) __builtin_sub_overflow((a), (b), (r))
#define MUL_OV(a, b, r) __builtin_mul_overflow((a), (b), (r))
#else
static int add_ov(V a, V b, V *r) {
    if ((b > 0 && a > LLONG_MAX - b) || (b < 0 && a < LLONG_MIN - b)) return 1;
    *r = a + b;
    return 0;
}
static int sub_ov(V a, V b, V *r) {
    if ((b < 0 && a > LLONG_MAX + b) || (b > 0 && a < LLONG_MIN + b)) return 1;
    *r = a - b;
    return 0;
}
static int mul_ov(V a, V b, V *r) {
    if (a == 0 || b == 0) { *r = 0; return 0; }
    if ((a == -1 && b == LLONG_MIN) || (b == -1 && a == LLONG_MIN)) return 1;
    if (a > 0 ? (b > 0 ? a > LLONG_MAX / b : b < LLONG_MIN / a)
              : (b > 0 ? a < LLONG_MIN / b : a < LLONG_MAX / b)) return 1;
    *r = a * b;
    return 0;
}
#define ADD_OV(a, b, r) add_ov((a), (b), (r))
#define SUB_OV(a, b, r) sub_ov((a), (b), (r))
#define MUL_OV(a, b, r) mul_ov((a), (b), (r))
#endif

#define MAX_RESETS 4096

/* The clocks a body resets, in order (duplicates included). */
typedef struct {
    int n;
    V r[MAX_RESETS];
} Resets;

/* A condition over a state: 1 or 0; -1 to fall back. */
typedef int (*CondFn)(const V *s, const V *A);
/* The clock indexes of a branch's atoms into out; 0, or -1 to fall back. */
typedef int (*ClockFn)(const V *s, const V *A, V *out);
/* A body on the copy n of the state; 0, or -1 to fall back. */
typedef int (*BodyFn)(V *n, const V *A, Resets *R);

typedef struct {
    CondFn guard;
    ClockFn clocks; /* NULL when the branch has no clock atom */
    int natoms;
    const int *ops; /* per atom, its relation: 0 <, 1 <=, 2 >, 3 >= */
    const int *bounds; /* per atom, its bound's index */
} Branch;

typedef struct {
    int nbranch;
    const Branch *branch;
    BodyFn body;
} Event;

typedef struct {
    int event;
    int args;   /* offset of its arguments in Model.args */
    int branch; /* global number of its first branch */
} Instance;

typedef struct {
    CondFn cond;
    ClockFn clocks;
    int natoms;
    const int *ops;
    const int *bounds;
    int args;
} Deadline;

typedef struct {
    CondFn holds;
    int args;
} Invariant;

typedef struct {
    int cell;
    int clock;
    CondFn trig;
    CondFn done;
    int args;
} Observer;

typedef struct {
    Py_ssize_t ncells;
    int max_branches;
    int max_atoms;
    int nbranches;
    int ninst;
    const Instance *inst;
    const Event *event;
    const V *args;
    int nobs;
    const Observer *obs;
    int ndl;
    const Deadline *dl;
    int ninv;
    const Invariant *inv;
} Model;

/* ---- the Program type -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    const Model *m;
    PyObject *edge_type;
    PyObject *atom_type;
    PyObject *ops;          /* the four Relation members, by op code */
    PyObject *branch_atoms; /* per global branch: its atoms (a tuple), or None */
    PyObject *dl_atoms;     /* per deadline instance: its atoms, or None */
    PyObject *violations;   /* per invariant instance: its Violation */
    PyObject *monotonic;
    PyObject *resets;       /* the reset tuples made so far, each kept once */
    Py_ssize_t every;       /* instances between two looks at the clock */
    int busy;
    V *sv, *nv, *tv, *clk;
    int *en;
    PyObject **atoms;
    Resets *R;
} Program;

static PyObject *EMPTY;
static PyObject *N_EVENT, *N_GUARD, *N_RESETS, *N_TARGET, *N_FAILURE;
static PyObject *N_CLOCK, *N_OP, *N_BOUND;

static void program_dealloc(Program *p) {
    Py_XDECREF(p->edge_type);
    Py_XDECREF(p->atom_type);
    Py_XDECREF(p->ops);
    Py_XDECREF(p->branch_atoms);
    Py_XDECREF(p->dl_atoms);
    Py_XDECREF(p->violations);
    Py_XDECREF(p->monotonic);
    Py_XDECREF(p->resets);
    PyMem_Free(p->sv);
    PyMem_Free(p->nv);
    PyMem_Free(p->tv);
    PyMem_Free(p->clk);
    PyMem_Free(p->en);
    PyMem_Free(p->atoms);
    PyMem_Free(p->R);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

/* A new instance of the (dataclass) type with these fields, made as object.__new__
   and a plain attribute store each: what the frozen dataclass's __init__ does. */
static PyObject *make(PyObject *type, PyObject **names, PyObject **vals, int k) {
    PyTypeObject *tp = (PyTypeObject *)type;
    PyObject *o = tp->tp_new(tp, EMPTY, NULL);
    if (o == NULL) return NULL;
    for (int i = 0; i < k; i++) {
        if (PyObject_GenericSetAttr(o, names[i], vals[i]) < 0) {
            Py_DECREF(o);
            return NULL;
        }
    }
    return o;
}

/* The state as C values in p->sv; 0 when it is not a tuple of the model's size whose
   every cell fits 64 bits (no Python error is left set). */
static int load_state(Program *p, PyObject *s) {
    if (!PyTuple_CheckExact(s) || PyTuple_GET_SIZE(s) != p->m->ncells) return 0;
    for (Py_ssize_t k = 0; k < p->m->ncells; k++) {
        PyObject *o = PyTuple_GET_ITEM(s, k);
        if (!PyLong_Check(o)) return 0;
        int over = 0;
        V v = PyLong_AsLongLongAndOverflow(o, &over);
        if (over || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        p->sv[k] = v;
    }
    return 1;
}

/* The clock atoms of one branch (or deadline), computed in s; NULL with no error set
   to fall back, NULL with an error set on a Python error. */
static PyObject *dynamic_atoms(Program *p, ClockFn fn, int natoms, const int *ops,
                               const int *bounds, const V *s, const V *A) {
    if (fn(s, A, p->clk) < 0) return NULL;
    PyObject *t = PyTuple_New(natoms);
    if (t == NULL) return NULL;
    for (int k = 0; k < natoms; k++) {
        PyObject *vals[3];
        vals[0] = PyLong_FromLongLong(p->clk[k]);
        vals[1] = PyTuple_GET_ITEM(p->ops, ops[k]);
        vals[2] = PyLong_FromLong(bounds[k]);
        PyObject *names[3] = {N_CLOCK, N_OP, N_BOUND};
        PyObject *a = (vals[0] && vals[2]) ? make(p->atom_type, names, vals, 3) : NULL;
        Py_XDECREF(vals[0]);
        Py_XDECREF(vals[2]);
        if (a == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, a);
    }
    return t;
}

/* The observers of bounded responses on the target p->nv (resets appended to p->R);
   0, or -1 to fall back. */
static int observe(Program *p) {
    const Model *m = p->m;
    if (m->nobs == 0) return 0;
    memcpy(p->tv, p->nv, sizeof(V) * (size_t)m->ncells);
    for (int k = 0; k < m->nobs; k++) {
        const Observer *o = &m->obs[k];
        const V *A = m->args + o->args;
        V pending = p->nv[o->cell];
        int q = o->done(p->tv, A);
        if (q < 0) return -1;
        if (pending) {
            if (q) p->nv[o->cell] = 0;
        } else {
            int t = o->trig(p->tv, A);
            if (t < 0) return -1;
            if (t && !q) {
                p->nv[o->cell] = 1;
                if (p->R->n >= MAX_RESETS) return -1;
                p->R->r[p->R->n++] = o->clock;
            }
        }
    }
    return 0;
}

#define MAX_RESET_TUPLES 4096

/* The sorted distinct resets of p->R as a tuple: one object for equal tuples (up to
   MAX_RESET_TUPLES of them), so that the edges of many states, kept by the
   clock-bounds pass, share them. */
static PyObject *reset_tuple(Program *p) {
    Resets *R = p->R;
    for (int i = 1; i < R->n; i++) {
        V x = R->r[i];
        int j = i - 1;
        while (j >= 0 && R->r[j] > x) {
            R->r[j + 1] = R->r[j];
            j--;
        }
        R->r[j + 1] = x;
    }
    int k = 0;
    for (int i = 0; i < R->n; i++)
        if (k == 0 || R->r[k - 1] != R->r[i]) R->r[k++] = R->r[i];
    PyObject *t = PyTuple_New(k);
    if (t == NULL) return NULL;
    for (int i = 0; i < k; i++) {
        PyObject *c = PyLong_FromLongLong(R->r[i]);
        if (c == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, c);
    }
    if (k == 0) return t; /* the empty tuple is one object already */
    if (PyDict_GET_SIZE(p->resets) >= MAX_RESET_TUPLES) PyDict_Clear(p->resets);
    PyObject *got = PyDict_SetDefault(p->resets, t, t);
    Py_XINCREF(got);
    Py_DECREF(t);
    return got;
}

/* The target p->nv as a tuple, sharing the source's objects where a cell is unchanged. */
static PyObject *target_tuple(Program *p, PyObject *s) {
    Py_ssize_t n = p->m->ncells;
    PyObject *t = PyTuple_New(n);
    if (t == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *c;
        if (p->nv[k] == p->sv[k]) {
            c = PyTuple_GET_ITEM(s, k);
            Py_INCREF(c);
        } else {
            c = PyLong_FromLongLong(p->nv[k]);
            if (c == NULL) {
                Py_DECREF(t);
                return NULL;
            }
        }
        PyTuple_SET_ITEM(t, k, c);
    }
    return t;
}

/* Whether the call's deadline has passed: 1 yes, 0 no, -1 on a Python error. */
static int past(Program *p, double deadline) {
    PyObject *now = PyObject_CallNoArgs(p->monotonic);
    if (now == NULL) return -1;
    double t = PyFloat_AsDouble(now);
    Py_DECREF(now);
    if (t == -1.0 && PyErr_Occurred()) return -1;
    return t > deadline;
}

/* Append the edges of one enabled instance (its enabled branches in p->en[0..nen)).
   1 done, 0 fall back, -1 Python error. */
static int instance_edges(Program *p, PyObject *s, PyObject *out, int i, int nen) {
    const Model *m = p->m;
    const Instance *in = &m->inst[i];
    const Event *ev = &m->event[in->event];
    const V *A = m->args + in->args;
    int ok = -1, made = 0;
    PyObject *rs = NULL, *target = NULL, *ei = NULL;
    for (int b = 0; b < nen; b++) {
        int br = p->en[b];
        const Branch *B = &ev->branch[br];
        PyObject *st = PyTuple_GET_ITEM(p->branch_atoms, in->branch + br);
        if (st != Py_None) {
            Py_INCREF(st);
            p->atoms[made++] = st;
            continue;
        }
        PyObject *a = dynamic_atoms(p, B->clocks, B->natoms, B->ops, B->bounds, p->sv, A);
        if (a == NULL) {
            ok = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        p->atoms[made++] = a;
    }
    if (nen > 1) {
        for (int b = 0; b < nen; b++) {
            if (ev->branch[p->en[b]].natoms == 0) {
                /* An unconditional branch covers every other one: only it is kept. */
                for (int k = 0; k < made; k++) Py_DECREF(p->atoms[k]);
                Py_INCREF(EMPTY);
                p->atoms[0] = EMPTY;
                made = nen = 1;
                break;
            }
        }
    }
    memcpy(p->nv, p->sv, sizeof(V) * (size_t)m->ncells);
    p->R->n = 0;
    if (ev->body(p->nv, A, p->R) < 0 || observe(p) < 0) {
        ok = 0;
        goto done;
    }
    rs = reset_tuple(p);
    target = rs ? target_tuple(p, s) : NULL;
    ei = target ? PyLong_FromLong(i) : NULL;
    if (ei == NULL) goto done;
    for (int b = 0; b < nen; b++) {
        PyObject *names[5] = {N_EVENT, N_GUARD, N_RESETS, N_TARGET, N_FAILURE};
        PyObject *vals[5] = {ei, p->atoms[b], rs, target, Py_None};
        PyObject *e = make(p->edge_type, names, vals, 5);
        if (e == NULL) goto done;
        int bad = PyList_Append(out, e);
        Py_DECREF(e);
        if (bad) goto done;
    }
    ok = 1;
done:
    for (int k = 0; k < made; k++) Py_DECREF(p->atoms[k]);
    Py_XDECREF(rs);
    Py_XDECREF(target);
    Py_XDECREF(ei);
    return ok;
}

/* edges(s, deadline): the model's edges out of s, in the model's order, or None. */
static PyObject *program_edges(Program *p, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "edges(state, deadline)");
        return NULL;
    }
    const Model *m = p->m;
    double deadline = 0.0;
    int timed = args[1] != Py_None;
    if (timed) {
        deadline = PyFloat_AsDouble(args[1]);
        if (deadline == -1.0 && PyErr_Occurred()) return NULL;
    }
    if (p->busy) Py_RETURN_NONE;
    /* Busy from here: a finalizer run by an allocation below may call back in. */
    p->busy = 1;
    PyObject *out = load_state(p, args[0]) ? PyList_New(0) : NULL;
    if (out == NULL) {
        p->busy = 0;
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    int ok = 1;
    for (int i = 0; i < m->ninst && ok > 0; i++) {
        if (i && timed && i % p->every == 0) {
            int late = past(p, deadline);
            if (late) {
                ok = late < 0 ? -1 : 0;
                break;
            }
        }
        const Instance *in = &m->inst[i];
        const Event *ev = &m->event[in->event];
        const V *A = m->args + in->args;
        int nen = 0;
        for (int b = 0; b < ev->nbranch; b++) {
            int g = ev->branch[b].guard(p->sv, A);
            if (g < 0) {
                ok = 0;
                break;
            }
            if (g) p->en[nen++] = b;
        }
        if (ok > 0 && nen) ok = instance_edges(p, args[0], out, i, nen);
    }
    p->busy = 0;
    if (ok > 0) return out;
    Py_DECREF(out);
    if (ok < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *deadlines_of(Program *p, PyObject *s);

/* deadlines(s): the clock upper bounds active in s, or None. */
static PyObject *program_deadlines(Program *p, PyObject *s) {
    if (p->busy) Py_RETURN_NONE;
    p->busy = 1;
    PyObject *out = deadlines_of(p, s);
    p->busy = 0;
    return out;
}

static PyObject *deadlines_of(Program *p, PyObject *s) {
    const Model *m = p->m;
    if (!load_state(p, s)) Py_RETURN_NONE;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (int k = 0; k < m->ndl; k++) {
        const Deadline *d = &m->dl[k];
        const V *A = m->args + d->args;
        int c = d->cond(p->sv, A);
        if (c < 0) goto fallback;
        if (!c) continue;
        PyObject *st = PyTuple_GET_ITEM(p->dl_atoms, k);
        PyObject *atoms = st;
        if (st == Py_None) {
            atoms = dynamic_atoms(p, d->clocks, d->natoms, d->ops, d->bounds, p->sv, A);
            if (atoms == NULL) {
                if (PyErr_Occurred()) goto error;
                goto fallback;
            }
        } else {
            Py_INCREF(st);
        }
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(atoms); j++) {
            if (PyList_Append(out, PyTuple_GET_ITEM(atoms, j)) < 0) {
                Py_DECREF(atoms);
                goto error;
            }
        }
        Py_DECREF(atoms);
    }
    return out;
fallback:
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    Py_DECREF(out);
    return NULL;
}

static PyObject *violations_of(Program *p, PyObject *s) {
    const Model *m = p->m;
    if (!load_state(p, s)) Py_RETURN_NONE;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (int k = 0; k < m->ninv; k++) {
        int h = m->inv[k].holds(p->sv, m->args + m->inv[k].args);
        if (h < 0) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        if (!h && PyList_Append(out, PyTuple_GET_ITEM(p->violations, k)) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* violations(s): the invariants s breaks (their Violation objects), or None. */
static PyObject *program_violations(Program *p, PyObject *s) {
    if (p->busy) Py_RETURN_NONE;
    p->busy = 1;
    PyObject *out = violations_of(p, s);
    p->busy = 0;
    return out;
}

static PyMethodDef program_methods[] = {
    {"edges", (PyCFunction)(void (*)(void))program_edges, METH_FASTCALL,
     "edges(state, deadline): the edges out of state, or None to fall back"},
    {"deadlines", (PyCFunction)program_deadlines, METH_O,
     "deadlines(state): the active clock upper bounds, or None to fall back"},
    {"violations", (PyCFunction)program_violations, METH_O,
     "violations(state): the broken invariants, or None to fall back"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kvrace_native.Program",
    .tp_basicsize = sizeof(Program),
    .tp_dealloc = (destructor)program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A model's compiled successor function",
    .tp_methods = program_methods,
};

static const Model *const *MODELS; /* the models of this build (a bundle may hold several) */
static int NMODELS;

static int tuple_of(PyObject *o, Py_ssize_t n, const char *what) {
    if (!PyTuple_CheckExact(o) || PyTuple_GET_SIZE(o) != n) {
        PyErr_Format(PyExc_ValueError, "%s: a tuple of %zd expected", what, n);
        return 0;
    }
    return 1;
}

static void *scratch(size_t count, size_t size) {
    return PyMem_Calloc(count ? count : 1, size);
}

/* program(index, edge_type, atom_type, ops, branch_atoms, dl_atoms, violations, monotonic,
   edge_cells): the Program of the build's model number index. */
static PyObject *new_program(PyObject *self, PyObject *args) {
    PyObject *edge_type, *atom_type, *ops, *branch_atoms, *dl_atoms, *violations, *monotonic;
    Py_ssize_t edge_cells;
    int index;
    (void)self;
    if (!PyArg_ParseTuple(args, "iO!O!OOOOOn", &index, &PyType_Type, &edge_type, &PyType_Type,
                          &atom_type, &ops, &branch_atoms, &dl_atoms, &violations, &monotonic,
                          &edge_cells))
        return NULL;
    if (index < 0 || index >= NMODELS) {
        PyErr_SetString(PyExc_IndexError, "no such model in this build");
        return NULL;
    }
    const Model *m = MODELS[index];
    if (!tuple_of(ops, 4, "ops") || !tuple_of(branch_atoms, m->nbranches, "branch_atoms")
        || !tuple_of(dl_atoms, m->ndl, "dl_atoms") || !tuple_of(violations, m->ninv, "violations"))
        return NULL;
    Program *p = PyObject_New(Program, &ProgramType);
    if (p == NULL) return NULL;
    memset((char *)p + sizeof(PyObject), 0, sizeof(Program) - sizeof(PyObject));
    p->m = m;
    p->busy = 0;
    Py_ssize_t cells = m->ncells > 0 ? m->ncells : 1;
    p->every = edge_cells / cells;
    if (p->every < 1) p->every = 1;
    Py_INCREF(edge_type);
    p->edge_type = edge_type;
    Py_INCREF(atom_type);
    p->atom_type = atom_type;
    Py_INCREF(ops);
    p->ops = ops;
    Py_INCREF(branch_atoms);
    p->branch_atoms = branch_atoms;
    Py_INCREF(dl_atoms);
    p->dl_atoms = dl_atoms;
    Py_INCREF(violations);
    p->violations = violations;
    Py_INCREF(monotonic);
    p->monotonic = monotonic;
    p->resets = PyDict_New();
    p->sv = scratch((size_t)m->ncells, sizeof(V));
    p->nv = scratch((size_t)m->ncells, sizeof(V));
    p->tv = scratch((size_t)m->ncells, sizeof(V));
    p->clk = scratch((size_t)m->max_atoms, sizeof(V));
    p->en = scratch((size_t)m->max_branches, sizeof(int));
    p->atoms = scratch((size_t)m->max_branches, sizeof(PyObject *));
    p->R = scratch(1, sizeof(Resets));
    if (p->resets == NULL) {
        Py_DECREF(p);
        return NULL;
    }
    if (!p->sv || !p->nv || !p->tv || !p->clk || !p->en || !p->atoms || !p->R) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    return (PyObject *)p;
}

static PyMethodDef module_methods[] = {
    {"program", new_program, METH_VARARGS, "program(...): the model's compiled successor function"},
    {NULL, NULL, 0, NULL},
};

static PyObject *init_module(PyModuleDef *def, const Model *const *models, int n) {
    MODELS = models;
    NMODELS = n;
    if (PyType_Ready(&ProgramType) < 0) return NULL;
    EMPTY = PyTuple_New(0);
    N_EVENT = PyUnicode_InternFromString("event");
    N_GUARD = PyUnicode_InternFromString("guard");
    N_RESETS = PyUnicode_InternFromString("resets");
    N_TARGET = PyUnicode_InternFromString("target");
    N_FAILURE = PyUnicode_InternFromString("failure");
    N_CLOCK = PyUnicode_InternFromString("clock");
    N_OP = PyUnicode_InternFromString("op");
    N_BOUND = PyUnicode_InternFromString("bound");
    if (!EMPTY || !N_EVENT || !N_GUARD || !N_RESETS || !N_TARGET || !N_FAILURE || !N_CLOCK
        || !N_OP || !N_BOUND)
        return NULL;
    def->m_methods = module_methods;
    return PyModule_Create(def);
}

/* ---- the model ------------------------------------------------------------------------ */
