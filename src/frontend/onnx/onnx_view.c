/* onnx_view.c — large initializers read in place: a ModelProto rewritten for protobuf-c without
 * their bytes, which stay in the mapped file as views.
 *
 * protobuf-c copies every bytes field it unpacks; for a model of 340 MB of weights that copy
 * (and the zeroing of the fresh pages it lands on) was a third of a warm compile. Before the
 * unpack, this walk copies the model's bytes into a new buffer, except that each raw_data of
 * `min` bytes or more of a TensorProto protobuf-c will be asked for (graph initializers and
 * attribute tensors, in the main graph and in every subgraph attribute) is replaced by a varint
 * field LOOM_ONNX_VIEW_FIELD (a field number onnx.proto does not use, which protobuf-c keeps as
 * an unknown field) holding the index of a view {pointer into the file, length}. A message it
 * rewrites gets its length as a 5-byte varint (protobuf accepts non-minimal varints), patched
 * once its fields are written. Any LOOM_ONNX_VIEW_FIELD already in a TensorProto it walks is
 * dropped, so the only ones protobuf-c sees are its own; tensors it does not walk (sparse
 * initializers, functions) are never decoded with views. Anything it does not expect (a
 * group wire type, a raw_data given twice, a singular message given twice, which protobuf-c
 * would merge, nesting deeper than LOOM_ONNX_MAX_DEPTH, a bound crossed) makes it give up: the
 * caller then unpacks the file as it is. The fuzz target (tests/fuzz/fuzz_onnx_model.c) loads
 * every input both ways and requires the same initializers. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_view.h"

/* The messages the walk descends into. */
typedef enum vmsg { V_NONE, V_MODEL, V_GRAPH, V_NODE, V_ATTR, V_TENSOR } vmsg;

typedef struct vwalk {
  uint8_t *out;             /* the rewritten bytes */
  size_t len, cap;          /* their length and capacity */
  loom_onnx_view *views;    /* the views, in the order their markers were written */
  size_t nviews, capviews;
  size_t min;               /* raw_data of this many bytes or more becomes a view */
  bool oom;                 /* an allocation failed */
} vwalk;

/* The message field `number` of a message `in` holds, for the fields the walk descends into. */
static vmsg child_of(vmsg in, uint64_t number) {
  switch (in) {
  case V_MODEL: return number == 7 ? V_GRAPH : V_NONE;                             /* graph */
  case V_GRAPH: return number == 1 ? V_NODE : number == 5 ? V_TENSOR : V_NONE;     /* node, initializer */
  case V_NODE: return number == 5 ? V_ATTR : V_NONE;                               /* attribute */
  case V_ATTR:                                                                     /* t, g, tensors, graphs */
    return number == 5 || number == 10 ? V_TENSOR : number == 6 || number == 11 ? V_GRAPH : V_NONE;
  default: return V_NONE;
  }
}

static bool put(vwalk *w, const void *p, size_t n) {
  if (n > w->cap - w->len) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap - w->len < n) cap *= 2;
    uint8_t *g = realloc(w->out, cap);
    if (!g) {
      w->oom = true;
      return false;
    }
    w->out = g, w->cap = cap;
  }
  memcpy(w->out + w->len, p, n);
  w->len += n;
  return true;
}

static bool put_varint(vwalk *w, uint64_t v) {
  uint8_t b[10];
  size_t n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  return put(w, b, n);
}

/* A varint at *p (before end); false when truncated or longer than 10 bytes. */
static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int i = 0; i < 10 && *p < end; i++) {
    uint8_t b = *(*p)++;
    r |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

/* Rewrites the fields of one message `kind` in [p, end) into w; false to give up. */
static bool walk(vwalk *w, const uint8_t *p, const uint8_t *end, vmsg kind, int depth) {
  if (depth > LOOM_ONNX_MAX_DEPTH) return false;
  bool raw_seen = false;
  unsigned singular = 0; /* a singular message field seen: ModelProto.graph, AttributeProto.t or .g */
  while (p < end) {
    const uint8_t *field = p;
    uint64_t tag, v;
    if (!get_varint(&p, end, &tag)) return false;
    const uint8_t *tag_end = p;
    uint64_t number = tag >> 3;
    unsigned wt = (unsigned)(tag & 7);
    bool ours = kind == V_TENSOR && number == LOOM_ONNX_VIEW_FIELD; /* dropped: only the walk writes it */
    switch (wt) {
    case 0: /* varint */
      if (!get_varint(&p, end, &v)) return false;
      if (!ours && !put(w, field, (size_t)(p - field))) return false;
      break;
    case 1: /* 64-bit */
    case 5: /* 32-bit */ {
      size_t n = wt == 1 ? 8 : 4;
      if ((size_t)(end - p) < n) return false;
      p += n;
      if (!ours && !put(w, field, (size_t)(p - field))) return false;
      break;
    }
    case 2: { /* length-delimited */
      if (!get_varint(&p, end, &v) || v > (uint64_t)(end - p)) return false;
      const uint8_t *body = p;
      p += v;
      if (ours) break;
      vmsg sub = child_of(kind, number);
      if (kind == V_TENSOR && number == 9) { /* raw_data */
        if (raw_seen) return false;           /* the last would win: not worth a special case */
        raw_seen = true;
        if (v >= w->min) {
          if (w->nviews == w->capviews) {
            size_t cap = w->capviews ? 2 * w->capviews : 64;
            loom_onnx_view *g = realloc(w->views, cap * sizeof *g);
            if (!g) {
              w->oom = true;
              return false;
            }
            w->views = g, w->capviews = cap;
          }
          w->views[w->nviews] = (loom_onnx_view){.data = body, .len = (size_t)v};
          if (!put_varint(w, (uint64_t)LOOM_ONNX_VIEW_FIELD << 3) || !put_varint(w, w->nviews)) return false;
          w->nviews++;
          break;
        }
      }
      /* a singular message given twice is merged by protobuf-c, a raw_data in the second
       * replacing the first's while the marker stays: not worth a special case either */
      if ((kind == V_MODEL && number == 7) || (kind == V_ATTR && (number == 5 || number == 6))) {
        unsigned bit = 1u << (number & 7);
        if (singular & bit) return false;
        singular |= bit;
      }
      if (sub == V_NONE) {
        if (!put(w, field, (size_t)(p - field))) return false;
        break;
      }
      /* the tag, a 5-byte length patched after the rewritten body */
      static const uint8_t slot[5] = {0x80, 0x80, 0x80, 0x80, 0x00};
      if (!put(w, field, (size_t)(tag_end - field)) || !put(w, slot, sizeof slot)) return false;
      size_t at = w->len;
      if (!walk(w, body, p, sub, depth + 1)) return false;
      size_t n = w->len - at;
      if (n > 0x7fffffff) return false;
      for (int i = 0; i < 5; i++) w->out[at - 5 + i] = (uint8_t)(((n >> (7 * i)) & 0x7f) | (i < 4 ? 0x80 : 0));
      break;
    }
    default: return false; /* groups (3, 4) and unknown wire types */
    }
  }
  return true;
}

loom_status loom_onnx_views_strip(const uint8_t *bytes, size_t len, size_t min, loom_onnx_stripped *out) {
  memset(out, 0, sizeof *out);
  vwalk w = {.min = min ? min : 1};
  bool ok = walk(&w, bytes, bytes + len, V_MODEL, 0);
  if (w.oom) {
    free(w.out);
    free(w.views);
    return LOOM_OOM();
  }
  if (!ok || !w.nviews) { /* gave up, or nothing to leave in place: unpack the file as it is */
    free(w.out);
    free(w.views);
    return LOOM_OK;
  }
  *out = (loom_onnx_stripped){.bytes = w.out, .len = w.len, .views = w.views, .nviews = w.nviews};
  return LOOM_OK;
}

bool loom_onnx_view_of(const Onnx__TensorProto *tp, const loom_onnx_view *views, size_t nviews, loom_onnx_view *out) {
  if (!nviews) return false;
  for (unsigned i = 0; i < tp->base.n_unknown_fields; i++) {
    const ProtobufCMessageUnknownField *u = &tp->base.unknown_fields[i];
    if (u->tag != LOOM_ONNX_VIEW_FIELD || u->wire_type != PROTOBUF_C_WIRE_TYPE_VARINT) continue;
    const uint8_t *q = u->data;
    uint64_t idx;
    if (!get_varint(&q, u->data + u->len, &idx) || idx >= nviews) return false;
    *out = views[idx];
    return true;
  }
  return false;
}
