/* object.c — devices with pooled storage (any device of vm/device.h), tensors, tuples, DLPack (object.h). */
#include "vm/object.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- devices */

loom_status loom_device_create(loom_allocator *alloc, const loom_device_vtable *vt, void *impl, int32_t dl_type,
                               int32_t dl_id, loom_device **out) {
  *out = NULL;
  loom_device *d = loom_alloc_zero(alloc, sizeof *d);
  if (!d) return LOOM_OOM();
  d->vt = vt;
  d->impl = impl;
  d->alloc = alloc;
  d->dl_type = dl_type;
  d->dl_id = dl_id;
  d->refs = 1;
  pthread_mutex_init(&d->mu, NULL);
  *out = d;
  return LOOM_OK;
}

void loom_device_retain(loom_device *d) { atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed); }

void loom_device_trim(loom_device *d) {
  loom_storage *lists[LOOM_DEVICE_POOL_CLASSES];
  pthread_mutex_lock(&d->mu);
  memcpy(lists, d->pool, sizeof lists);
  memset(d->pool, 0, sizeof d->pool);
  d->pooled_bytes = 0;
  pthread_mutex_unlock(&d->mu);
  for (int c = 0; c < LOOM_DEVICE_POOL_CLASSES; c++) {
    for (loom_storage *s = lists[c], *next; s; s = next) {
      next = s->next;
      d->vt->free(d, s->data, (size_t)1 << (c + 6));
      loom_free(d->alloc, s, sizeof *s);
    }
  }
}

loom_device_stats loom_device_get_stats(loom_device *d) {
  pthread_mutex_lock(&d->mu);
  loom_device_stats st = {d->pooled_bytes, d->live_bytes, d->peak_live_bytes, d->pool_hits, d->pool_misses};
  pthread_mutex_unlock(&d->mu);
  return st;
}

void loom_device_release(loom_device *d) {
  if (!d || atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) != 1) return;
  loom_device_trim(d);
  pthread_mutex_destroy(&d->mu);
  if (d->vt->destroy) d->vt->destroy(d);
  loom_free(d->alloc, d, sizeof *d);
}

void loom_device_reset_peak(loom_device *d) {
  pthread_mutex_lock(&d->mu);
  d->peak_live_bytes = d->live_bytes;
  pthread_mutex_unlock(&d->mu);
}

/* ---------------------------------------------------------------- storage */

/* Smallest class whose block (2^(c+6) bytes) holds `size`; -1 if too large. */
static int size_class(size_t size) {
  for (int c = 0; c < LOOM_DEVICE_POOL_CLASSES; c++)
    if (size <= ((size_t)1 << (c + 6))) return c;
  return -1;
}

/* Counts `size` more live bytes (under d->mu). */
static void count_live(loom_device *d, size_t size) {
  d->live_bytes += size;
  if (d->live_bytes > d->peak_live_bytes) d->peak_live_bytes = d->live_bytes;
}

loom_status loom_storage_alloc(loom_device *d, size_t size, loom_storage **out) {
  *out = NULL;
  if (d->max_alloc_bytes && size > d->max_alloc_bytes)
    return LOOM_ERROR(RESOURCE_EXHAUSTED, "storage of %zu bytes is over the device's limit of %zu bytes", size,
                      d->max_alloc_bytes);
  int c = size_class(size);
  if (c < 0) return LOOM_ERROR(OUT_OF_RANGE, "storage of %zu bytes is too large", size);
  /* the pool is shared by every thread calling the device: a hit is one short critical
   * section; a miss allocates outside the lock */
  pthread_mutex_lock(&d->mu);
  loom_storage *s = NULL;
  for (int b = c; b <= c + LOOM_DEVICE_POOL_BORROW && b < LOOM_DEVICE_POOL_CLASSES && !s; b++) {
    s = d->pool[b];
    if (!s) continue;
    d->pool[b] = s->next;
    d->pooled_bytes -= (size_t)1 << (b + 6);
    d->pool_hits++;
    count_live(d, size);
    c = b; /* the block keeps its own class: it goes back to that free list */
  }
  if (!s) d->pool_misses++;
  pthread_mutex_unlock(&d->mu);
  if (!s) {
    s = loom_alloc_zero(d->alloc, sizeof *s);
    if (!s) return LOOM_OOM();
    s->data = d->vt->alloc(d, (size_t)1 << (c + 6), 64);
    if (!s->data && d->pooled_bytes) { /* the pool's free blocks back to the device, then once more */
      loom_device_trim(d);
      s->data = d->vt->alloc(d, (size_t)1 << (c + 6), 64);
    }
    if (!s->data) {
      loom_free(d->alloc, s, sizeof *s);
      return LOOM_ERROR(RESOURCE_EXHAUSTED, "cannot allocate %zu bytes on device %s", size,
                        d->vt->name);
    }
    pthread_mutex_lock(&d->mu);
    count_live(d, size);
    pthread_mutex_unlock(&d->mu);
  }
  s->hdr.kind = LOOM_VM_OBJ_STORAGE;
  s->hdr.refs = 1;
  s->device = d;
  s->size = size;
  s->size_class = c;
  s->release = NULL;
  s->owner = NULL;
  s->next = NULL;
  loom_device_retain(d);
  *out = s;
  return LOOM_OK;
}

loom_status loom_storage_wrap(loom_device *d, void *data, size_t size, void (*release)(loom_storage *),
                              void *owner, loom_storage **out) {
  *out = NULL;
  loom_storage *s = loom_alloc_zero(d->alloc, sizeof *s);
  if (!s) return LOOM_OOM();
  s->hdr.kind = LOOM_VM_OBJ_STORAGE;
  s->hdr.refs = 1;
  s->device = d;
  s->data = data;
  s->size = size;
  s->size_class = -1;
  s->release = release;
  s->owner = owner;
  loom_device_retain(d);
  *out = s;
  return LOOM_OK;
}

static void storage_free(loom_storage *s) {
  loom_device *d = s->device;
  if (s->size_class < 0) {
    if (s->release) s->release(s);
    loom_free(d->alloc, s, sizeof *s);
  } else {
    /* back to the pool; pooled blocks hold no device reference */
    pthread_mutex_lock(&d->mu);
    d->live_bytes -= s->size;
    s->next = d->pool[s->size_class];
    d->pool[s->size_class] = s;
    d->pooled_bytes += (size_t)1 << (s->size_class + 6);
    pthread_mutex_unlock(&d->mu);
  }
  loom_device_release(d);
}

/* ---------------------------------------------------------------- tensors */

loom_status loom_tensor_nbytes(loom_dtype dt, int32_t rank, const int64_t *shape, size_t *out) {
  size_t n = loom_dtype_size(dt);
  for (int32_t i = 0; i < rank; i++) {
    if (shape[i] < 0) return LOOM_ERROR(OUT_OF_RANGE, "axis %d has negative size %lld", i, (long long)shape[i]);
    if (!loom_size_mul(n, (size_t)shape[i], &n))
      return LOOM_ERROR(OUT_OF_RANGE, "tensor size overflows at axis %d", i);
  }
  *out = n;
  return LOOM_OK;
}

static loom_status tensor_new(loom_allocator *alloc, loom_dtype dt, int32_t rank, const int64_t *shape,
                              loom_tensor **out) {
  *out = NULL;
  if (rank < 0 || rank > LOOM_VM_MAX_RANK)
    return LOOM_ERROR(OUT_OF_RANGE, "rank %d is outside 0..%d", rank, LOOM_VM_MAX_RANK);
  if ((unsigned)dt >= LOOM_DTYPE_COUNT) return LOOM_ERROR(INVALID_ARGUMENT, "unknown dtype %d", (int)dt);
  loom_tensor *t = loom_alloc_zero(alloc, sizeof *t + 2 * (size_t)rank * sizeof(int64_t));
  if (!t) return LOOM_OOM();
  t->hdr.kind = LOOM_VM_OBJ_TENSOR;
  t->hdr.refs = 1;
  t->dtype = dt;
  t->rank = rank;
  t->alloc = alloc;
  t->shape = t->dims;
  t->strides = t->dims + rank;
  int64_t st = 1;
  for (int32_t i = rank - 1; i >= 0; i--) {
    t->shape[i] = shape[i];
    t->strides[i] = st;
    st *= shape[i] > 0 ? shape[i] : 1; /* bounded: nbytes was checked by the caller */
  }
  *out = t;
  return LOOM_OK;
}

loom_status loom_tensor_alloc(loom_device *d, loom_dtype dt, int32_t rank, const int64_t *shape,
                              loom_tensor **out) {
  *out = NULL;
  size_t nbytes;
  if (rank < 0 || rank > LOOM_VM_MAX_RANK)
    return LOOM_ERROR(OUT_OF_RANGE, "rank %d is outside 0..%d", rank, LOOM_VM_MAX_RANK);
  LOOM_PROPAGATE(loom_tensor_nbytes(dt, rank, shape, &nbytes));
  loom_storage *s;
  LOOM_PROPAGATE(loom_storage_alloc(d, nbytes, &s));
  loom_status st = loom_tensor_view(s, 0, dt, rank, shape, out);
  loom_vm_obj_release(&s->hdr);
  return st;
}

loom_status loom_tensor_strings(loom_device *d, int32_t rank, const int64_t *shape, const loom_str *elems,
                                loom_tensor **out) {
  *out = NULL;
  if (rank < 0 || rank > LOOM_VM_MAX_RANK)
    return LOOM_ERROR(OUT_OF_RANGE, "rank %d is outside 0..%d", rank, LOOM_VM_MAX_RANK);
  size_t hb, total, n = 0;
  LOOM_PROPAGATE(loom_tensor_nbytes(LOOM_DTYPE_STRING, rank, shape, &hb));
  n = hb / sizeof(loom_str);
  total = hb;
  for (size_t i = 0; i < n; i++)
    if (!loom_size_add(total, (size_t)elems[i].len, &total) || !loom_size_add(total, 1, &total))
      return LOOM_ERROR(OUT_OF_RANGE, "a string tensor of more than SIZE_MAX bytes");
  loom_storage *s;
  LOOM_PROPAGATE(loom_storage_alloc(d, total ? total : 1, &s));
  loom_str *h = s->data;
  char *p = (char *)s->data + hb;
  for (size_t i = 0; i < n; i++) {
    size_t len = (size_t)elems[i].len;
    if (len) memcpy(p, elems[i].data, len);
    p[len] = 0;
    h[i] = (loom_str){len ? p : NULL, len};
    p += len + 1;
  }
  loom_status st = loom_tensor_view(s, 0, LOOM_DTYPE_STRING, rank, shape, out);
  loom_vm_obj_release(&s->hdr);
  return st;
}

loom_status loom_tensor_view(loom_storage *s, size_t offset, loom_dtype dt, int32_t rank,
                             const int64_t *shape, loom_tensor **out) {
  *out = NULL;
  if (rank < 0 || rank > LOOM_VM_MAX_RANK)
    return LOOM_ERROR(OUT_OF_RANGE, "rank %d is outside 0..%d", rank, LOOM_VM_MAX_RANK);
  if ((unsigned)dt >= LOOM_DTYPE_COUNT) return LOOM_ERROR(INVALID_ARGUMENT, "unknown dtype %d", (int)dt);
  size_t nbytes, end;
  LOOM_PROPAGATE(loom_tensor_nbytes(dt, rank, shape, &nbytes));
  if (!loom_size_add(offset, nbytes, &end) || end > s->size)
    return LOOM_ERROR(OUT_OF_RANGE, "view of %zu bytes at offset %zu does not fit in storage of %zu bytes",
                      nbytes, offset, s->size);
  loom_tensor *t;
  LOOM_PROPAGATE(tensor_new(s->device->alloc, dt, rank, shape, &t));
  t->data = (char *)s->data + offset;
  t->device = s->device;
  t->storage = s;
  loom_vm_obj_retain(&s->hdr);
  *out = t;
  return LOOM_OK;
}

size_t loom_tensor_numel(const loom_tensor *t) {
  size_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) n *= (size_t)t->shape[i];
  return n;
}

bool loom_tensor_is_contiguous(const loom_tensor *t) {
  for (int32_t i = 0; i < t->rank; i++)
    if (t->shape[i] == 0) return true; /* no elements: any strides are dense */
  int64_t st = 1;
  for (int32_t i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != st) return false;
    st *= t->shape[i];
  }
  return true;
}

static void tensor_free(loom_tensor *t) {
  if (t->storage) loom_vm_obj_release(&t->storage->hdr);
  if (t->dl && t->dl->deleter) t->dl->deleter(t->dl);
  loom_free(t->alloc, t, sizeof *t + 2 * (size_t)t->rank * sizeof(int64_t));
}

/* ---------------------------------------------------------------- DLPack */

static const struct {
  loom_dtype dt;
  uint8_t code, bits;
} dl_map[] = {
    {LOOM_DTYPE_BOOL, kDLUInt, 8}, /* DLPack 0.6 has no kDLBool: bool travels as u8 */
    {LOOM_DTYPE_I8, kDLInt, 8},     {LOOM_DTYPE_I16, kDLInt, 16},   {LOOM_DTYPE_I32, kDLInt, 32},
    {LOOM_DTYPE_I64, kDLInt, 64},   {LOOM_DTYPE_U8, kDLUInt, 8},    {LOOM_DTYPE_U16, kDLUInt, 16},
    {LOOM_DTYPE_U32, kDLUInt, 32},  {LOOM_DTYPE_U64, kDLUInt, 64},  {LOOM_DTYPE_F16, kDLFloat, 16},
    {LOOM_DTYPE_BF16, kDLBfloat, 16}, {LOOM_DTYPE_F32, kDLFloat, 32}, {LOOM_DTYPE_F64, kDLFloat, 64},
};

bool loom_dtype_to_dl(loom_dtype dt, DLDataType *out) {
  for (size_t i = 0; i < LOOM_ARRAY_LEN(dl_map); i++)
    if (dl_map[i].dt == dt) {
      out->code = dl_map[i].code;
      out->bits = dl_map[i].bits;
      out->lanes = 1;
      return true;
    }
  return false;
}

bool loom_dtype_from_dl(DLDataType t, loom_dtype *out) {
  if (t.lanes != 1) return false;
  for (size_t i = 1; i < LOOM_ARRAY_LEN(dl_map); i++) /* skip bool: u8 maps to u8 */
    if (dl_map[i].code == t.code && dl_map[i].bits == t.bits) {
      *out = dl_map[i].dt;
      return true;
    }
  return false;
}

static void dl_deleter(DLManagedTensor *self) {
  loom_tensor *t = self->manager_ctx;
  loom_allocator *a = t->alloc;
  loom_vm_obj_release(&t->hdr);
  loom_free(a, self, sizeof *self);
}

loom_status loom_tensor_to_dlpack(loom_tensor *t, DLManagedTensor **out) {
  *out = NULL;
  DLDataType dt;
  if (!loom_dtype_to_dl(t->dtype, &dt))
    return LOOM_ERROR(UNIMPLEMENTED, "dtype %s has no DLPack counterpart", loom_dtype_name(t->dtype));
  DLManagedTensor *m = loom_alloc_zero(t->alloc, sizeof *m);
  if (!m) return LOOM_OOM();
  m->dl_tensor.data = t->data;
  m->dl_tensor.device.device_type = t->device ? (DLDeviceType)t->device->dl_type : kDLCPU;
  m->dl_tensor.device.device_id = t->device ? t->device->dl_id : 0;
  m->dl_tensor.ndim = t->rank;
  m->dl_tensor.dtype = dt;
  m->dl_tensor.shape = t->shape;
  m->dl_tensor.strides = t->strides;
  m->dl_tensor.byte_offset = 0;
  m->manager_ctx = t;
  m->deleter = dl_deleter;
  loom_vm_obj_retain(&t->hdr);
  *out = m;
  return LOOM_OK;
}

loom_status loom_tensor_from_dlpack(loom_allocator *alloc, loom_device *dev, DLManagedTensor *dl,
                                    loom_tensor **out) {
  *out = NULL;
  loom_status st = LOOM_OK;
  loom_dtype dt;
  const DLTensor *x = &dl->dl_tensor;
  bool host_memory = x->device.device_type == kDLCPU || x->device.device_type == kDLCUDAHost;
  if (dev->vt->host ? !host_memory
                    : (x->device.device_type != (DLDeviceType)dev->dl_type || x->device.device_id != dev->dl_id))
    st = LOOM_ERROR(INVALID_ARGUMENT, "DLPack tensor on device type %d id %d: this device (%s, DLPack type %d id %d) "
                    "takes %s", (int)x->device.device_type, (int)x->device.device_id, dev->vt->name, (int)dev->dl_type,
                    (int)dev->dl_id, dev->vt->host ? "CPU memory (kDLCPU, kDLCUDAHost)" : "its own memory only");
  else if (x->ndim < 0 || x->ndim > LOOM_VM_MAX_RANK)
    st = LOOM_ERROR(OUT_OF_RANGE, "DLPack tensor rank %d is outside 0..%d", x->ndim, LOOM_VM_MAX_RANK);
  else if (!loom_dtype_from_dl(x->dtype, &dt))
    st = LOOM_ERROR(UNIMPLEMENTED, "DLPack dtype (code %u, bits %u, lanes %u) has no Loom counterpart",
                    x->dtype.code, x->dtype.bits, x->dtype.lanes);
  loom_tensor *t = NULL;
  size_t nbytes;
  if (!st) st = loom_tensor_nbytes(dt, x->ndim, x->shape, &nbytes);
  if (!st) st = tensor_new(alloc, dt, x->ndim, x->shape, &t);
  if (st) {
    if (dl->deleter) dl->deleter(dl);
    return st;
  }
  if (x->strides)
    for (int32_t i = 0; i < x->ndim; i++) t->strides[i] = x->strides[i];
  t->data = (char *)x->data + x->byte_offset;
  t->device = dev;
  loom_device_retain(dev);
  t->dl = dl;
  *out = t;
  return LOOM_OK;
}

/* ---------------------------------------------------------------- tuples, refcounts */

loom_status loom_tuple_new(loom_allocator *alloc, loom_vm_obj *const *items, uint32_t n, loom_tuple **out) {
  *out = NULL;
  loom_tuple *t = loom_alloc_zero(alloc, sizeof *t + (size_t)n * sizeof(loom_vm_obj *));
  if (!t) return LOOM_OOM();
  t->hdr.kind = LOOM_VM_OBJ_TUPLE;
  t->hdr.refs = 1;
  t->alloc = alloc;
  t->size = n;
  for (uint32_t i = 0; i < n; i++) {
    t->items[i] = items[i];
    loom_vm_obj_retain(items[i]);
  }
  *out = t;
  return LOOM_OK;
}

loom_status loom_list_new(loom_allocator *alloc, loom_vm_obj *const *items, uint32_t n, loom_tuple **out) {
  LOOM_PROPAGATE(loom_tuple_new(alloc, items, n, out));
  (*out)->hdr.kind = LOOM_VM_OBJ_LIST;
  return LOOM_OK;
}

void loom_vm_obj_release(loom_vm_obj *o) {
  /* acq_rel: whoever drops the last reference sees every other holder's writes */
  if (!o || atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1) return;
  switch (o->kind) {
  case LOOM_VM_OBJ_TENSOR: {
    loom_tensor *t = (loom_tensor *)o;
    /* tensors from DLPack hold a direct device reference */
    loom_device *dev = (t->dl && !t->storage) ? t->device : NULL;
    tensor_free(t);
    if (dev) loom_device_release(dev);
    break;
  }
  case LOOM_VM_OBJ_STORAGE: storage_free((loom_storage *)o); break;
  case LOOM_VM_OBJ_TUPLE:
  case LOOM_VM_OBJ_LIST: {
    loom_tuple *t = (loom_tuple *)o;
    for (uint32_t i = 0; i < t->size; i++) loom_vm_obj_release(t->items[i]);
    loom_free(t->alloc, t, sizeof *t + (size_t)t->size * sizeof(loom_vm_obj *));
    break;
  }
  default: break;
  }
}

const char *loom_vm_obj_kind_name(uint32_t kind) {
  switch (kind) {
  case LOOM_VM_OBJ_ANY: return "any";
  case LOOM_VM_OBJ_TENSOR: return "tensor";
  case LOOM_VM_OBJ_STORAGE: return "storage";
  case LOOM_VM_OBJ_TUPLE: return "tuple";
  case LOOM_VM_OBJ_LIST: return "list";
  default: return "?";
  }
}
