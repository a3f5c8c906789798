/* _fastcall.c — the call path of loom.Module as a small CPython extension (built by Zig with
 * `zig build python -Dpython-include=DIR`; python/build_backend/loom_build.py passes the
 * running Python's include directory). Everything else in the package is ctypes; this file
 * exists only because a ctypes call costs several microseconds per call (issue 25's
 * < 10 us overhead goal).
 *
 *   _fastcall.init(numpy.empty, dtypes)   dtypes[i]: the NumPy dtype of loom_dtype i, or None
 *   _fastcall.call(rt, fn, args)          -> list of NumPy arrays (copies of the results)
 *                                         -> int: a loom_status address (the caller raises it)
 *                                         -> None: some input is not a C-contiguous buffer of a
 *                                            known format (the caller takes the general path)
 *
 * Inputs are read through the buffer protocol (NumPy arrays, read-only ones too) and borrowed
 * for the call (loom_rt_tensor_borrow); the GIL is released while the runtime runs. The loom
 * functions are resolved when the module is loaded, from libloom.so, which the package opens
 * with RTLD_GLOBAL first. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "loomrt.h"

static PyObject *np_empty; /* numpy.empty */
static PyObject *dtypes;   /* tuple: loom_dtype -> NumPy dtype or None */

/* The loom dtype of a buffer format ("f", "<f", "=q", "?"), or -1. */
static int dtype_of_format(const char *f, Py_ssize_t itemsize) {
  if (!f) return LOOM_DTYPE_U8;
  if (*f == '<' || *f == '=' || *f == '@') f++;
  if (!f[0] || f[1]) return -1;
  switch (f[0]) {
  case '?': return LOOM_DTYPE_BOOL;
  case 'b': return LOOM_DTYPE_I8;
  case 'B': return LOOM_DTYPE_U8;
  case 'h': return LOOM_DTYPE_I16;
  case 'H': return LOOM_DTYPE_U16;
  case 'i': return itemsize == 4 ? LOOM_DTYPE_I32 : -1;
  case 'I': return itemsize == 4 ? LOOM_DTYPE_U32 : -1;
  case 'l':
  case 'q': return itemsize == 8 ? LOOM_DTYPE_I64 : -1;
  case 'L':
  case 'Q': return itemsize == 8 ? LOOM_DTYPE_U64 : -1;
  case 'e': return LOOM_DTYPE_F16;
  case 'f': return LOOM_DTYPE_F32;
  case 'd': return LOOM_DTYPE_F64;
  default: return -1;
  }
}

static PyObject *fc_init(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *e, *d;
  if (!PyArg_ParseTuple(args, "OO!", &e, &PyTuple_Type, &d)) return NULL;
  Py_INCREF(e);
  Py_INCREF(d);
  Py_XSETREF(np_empty, e);
  Py_XSETREF(dtypes, d);
  Py_RETURN_NONE;
}

/* A fresh NumPy array holding a copy of tensor `t`, or NULL with an exception set; *none is set
 * when the dtype has no NumPy counterpart (the caller falls back). */
static PyObject *to_array(const loom_tensor *t, int *none) {
  if (t->dtype < 0 || t->dtype >= PyTuple_GET_SIZE(dtypes) || PyTuple_GET_ITEM(dtypes, t->dtype) == Py_None) {
    *none = 1;
    return NULL;
  }
  PyObject *shape = PyTuple_New(t->rank);
  if (!shape) return NULL;
  for (int32_t i = 0; i < t->rank; i++) PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(t->shape[i]));
  PyObject *a = PyObject_CallFunctionObjArgs(np_empty, shape, PyTuple_GET_ITEM(dtypes, t->dtype), NULL);
  Py_DECREF(shape);
  if (!a) return NULL;
  Py_buffer v;
  if (PyObject_GetBuffer(a, &v, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
    Py_DECREF(a);
    return NULL;
  }
  if (v.len) memcpy(v.buf, t->data, (size_t)v.len);
  PyBuffer_Release(&v);
  return a;
}

#define MAX_INPUTS 64

static PyObject *fc_call(PyObject *self, PyObject *args) {
  (void)self;
  unsigned long long rt_addr;
  const char *fn;
  PyObject *inputs;
  if (!PyArg_ParseTuple(args, "KyO!", &rt_addr, &fn, &PyTuple_Type, &inputs)) return NULL;
  if (!np_empty) return PyErr_Format(PyExc_RuntimeError, "loom._fastcall.init was not called");
  Py_ssize_t n = PyTuple_GET_SIZE(inputs);
  if (n > MAX_INPUTS) Py_RETURN_NONE;
  Py_buffer views[MAX_INPUTS];
  loom_tensor *ts[MAX_INPUTS];
  Py_ssize_t got = 0;
  loom_status st = NULL;
  PyObject *result = NULL;
  /* every input a C-contiguous buffer of a known format, or the general path */
  for (; got < n; got++) {
    PyObject *o = PyTuple_GET_ITEM(inputs, got);
    if (!PyObject_CheckBuffer(o) || PyObject_GetBuffer(o, &views[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
      PyErr_Clear();
      goto fallback;
    }
    Py_buffer *v = &views[got];
    int dt = dtype_of_format(v->format, v->itemsize);
    if (dt < 0 || v->ndim > LOOM_VM_MAX_RANK) {
      PyBuffer_Release(v);
      goto fallback;
    }
    int64_t shape[LOOM_VM_MAX_RANK];
    for (int d = 0; d < v->ndim; d++) shape[d] = v->shape[d];
    st = loom_rt_tensor_borrow((loom_rt *)(uintptr_t)rt_addr, (loom_dtype)dt, v->ndim, shape, v->buf, (size_t)v->len,
                               &ts[got]);
    if (st) {
      PyBuffer_Release(v);
      break;
    }
  }
  loom_rt_outputs out = {0};
  if (!st) {
    Py_BEGIN_ALLOW_THREADS st = loom_rt_call((loom_rt *)(uintptr_t)rt_addr, fn, ts, (uint32_t)n, &out);
    Py_END_ALLOW_THREADS
  }
  if (!st) {
    result = PyList_New(out.count);
    for (uint32_t i = 0; result && i < out.count; i++) {
      int none = 0;
      PyObject *a = out.items[i]->kind == LOOM_VM_OBJ_TENSOR ? to_array((loom_tensor *)out.items[i], &none) : NULL;
      if (!a && (none || out.items[i]->kind != LOOM_VM_OBJ_TENSOR)) {
        /* a result NumPy cannot hold: the general path reports it */
        Py_CLEAR(result);
        Py_INCREF(Py_None);
        result = Py_None;
        break;
      }
      if (!a) Py_CLEAR(result);
      else PyList_SET_ITEM(result, i, a);
    }
    loom_rt_outputs_free(&out);
  } else {
    result = PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)st);
  }
  for (Py_ssize_t i = 0; i < got; i++) {
    loom_tensor_release(ts[i]);
    PyBuffer_Release(&views[i]);
  }
  return result;

fallback:
  for (Py_ssize_t i = 0; i < got; i++) {
    loom_tensor_release(ts[i]);
    PyBuffer_Release(&views[i]);
  }
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"init", fc_init, METH_VARARGS, "init(numpy.empty, dtypes): what results are made with"},
    {"call", fc_call, METH_VARARGS, "call(rt, fn, args) -> list of arrays | status address | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastcall", "Loom's call path", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastcall(void);
PyMODINIT_FUNC PyInit__fastcall(void) { return PyModule_Create(&module); }
