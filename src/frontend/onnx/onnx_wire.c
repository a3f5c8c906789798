/* onnx_wire.c — a schema-guided walk over the protobuf wire format, for messages.
 *
 * protobuf-c says only "it does not parse". Before handing bytes to it, this walk
 * finds the first broken field and names where it is ("graph.node[12].attribute[0].t:
 * field 9 (raw_data) at byte 4711 declares 4096 bytes, 100 remain"), and bounds the
 * nesting depth, since protobuf-c recurses without a limit. It knows, for each ONNX
 * message, which field numbers hold sub-messages; every other field is skipped by
 * its wire type. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

typedef enum msg {
  M_NONE, M_MODEL, M_GRAPH, M_NODE, M_ATTR, M_TENSOR, M_SPARSE, M_VALUE_INFO, M_TYPE,
  M_TYPE_TENSOR, M_TYPE_SEQ, M_TYPE_MAP, M_SHAPE, M_DIM, M_TRAINING, M_FUNCTION,
  M_ANNOTATION, M_SEGMENT, M_ENTRY, M_OPSET,
  M_COUNT
} msg;

/* Field numbers of onnx.proto that the walk knows are all below this. */
#define MAX_FIELD 32

/* One field of a message: its number, its name, and the message type it holds (M_NONE: a scalar,
 * string or bytes). */
typedef struct field {
  msg in;
  uint32_t number;
  const char *name;
  msg holds;
} field;

/* The fields of onnx.proto worth naming; sub-message fields must all be here, numbers below MAX_FIELD. */
static const field fields[] = {
    {M_MODEL, 1, "ir_version", M_NONE},        {M_MODEL, 2, "producer_name", M_NONE},
    {M_MODEL, 3, "producer_version", M_NONE},  {M_MODEL, 4, "domain", M_NONE},
    {M_MODEL, 5, "model_version", M_NONE},     {M_MODEL, 6, "doc_string", M_NONE},
    {M_MODEL, 7, "graph", M_GRAPH},            {M_MODEL, 8, "opset_import", M_OPSET},
    {M_MODEL, 14, "metadata_props", M_ENTRY},  {M_MODEL, 20, "training_info", M_TRAINING},
    {M_MODEL, 25, "functions", M_FUNCTION},
    {M_GRAPH, 1, "node", M_NODE},              {M_GRAPH, 2, "name", M_NONE},
    {M_GRAPH, 5, "initializer", M_TENSOR},     {M_GRAPH, 15, "sparse_initializer", M_SPARSE},
    {M_GRAPH, 10, "doc_string", M_NONE},       {M_GRAPH, 11, "input", M_VALUE_INFO},
    {M_GRAPH, 12, "output", M_VALUE_INFO},     {M_GRAPH, 13, "value_info", M_VALUE_INFO},
    {M_GRAPH, 14, "quantization_annotation", M_ANNOTATION},
    {M_NODE, 1, "input", M_NONE},              {M_NODE, 2, "output", M_NONE},
    {M_NODE, 3, "name", M_NONE},               {M_NODE, 4, "op_type", M_NONE},
    {M_NODE, 7, "domain", M_NONE},             {M_NODE, 5, "attribute", M_ATTR},
    {M_NODE, 6, "doc_string", M_NONE},
    {M_ATTR, 1, "name", M_NONE},               {M_ATTR, 21, "ref_attr_name", M_NONE},
    {M_ATTR, 13, "doc_string", M_NONE},        {M_ATTR, 20, "type", M_NONE},
    {M_ATTR, 2, "f", M_NONE},                  {M_ATTR, 3, "i", M_NONE},
    {M_ATTR, 4, "s", M_NONE},                  {M_ATTR, 5, "t", M_TENSOR},
    {M_ATTR, 6, "g", M_GRAPH},                 {M_ATTR, 22, "sparse_tensor", M_SPARSE},
    {M_ATTR, 14, "tp", M_TYPE},                {M_ATTR, 7, "floats", M_NONE},
    {M_ATTR, 8, "ints", M_NONE},               {M_ATTR, 9, "strings", M_NONE},
    {M_ATTR, 10, "tensors", M_TENSOR},         {M_ATTR, 11, "graphs", M_GRAPH},
    {M_ATTR, 23, "sparse_tensors", M_SPARSE},  {M_ATTR, 15, "type_protos", M_TYPE},
    {M_TENSOR, 1, "dims", M_NONE},             {M_TENSOR, 2, "data_type", M_NONE},
    {M_TENSOR, 3, "segment", M_SEGMENT},       {M_TENSOR, 4, "float_data", M_NONE},
    {M_TENSOR, 5, "int32_data", M_NONE},       {M_TENSOR, 6, "string_data", M_NONE},
    {M_TENSOR, 7, "int64_data", M_NONE},       {M_TENSOR, 8, "name", M_NONE},
    {M_TENSOR, 12, "doc_string", M_NONE},      {M_TENSOR, 9, "raw_data", M_NONE},
    {M_TENSOR, 13, "external_data", M_ENTRY},  {M_TENSOR, 14, "data_location", M_NONE},
    {M_TENSOR, 10, "double_data", M_NONE},     {M_TENSOR, 11, "uint64_data", M_NONE},
    {M_SPARSE, 1, "values", M_TENSOR},         {M_SPARSE, 2, "indices", M_TENSOR},
    {M_SPARSE, 3, "dims", M_NONE},
    {M_VALUE_INFO, 1, "name", M_NONE},         {M_VALUE_INFO, 2, "type", M_TYPE},
    {M_VALUE_INFO, 3, "doc_string", M_NONE},
    {M_TYPE, 1, "tensor_type", M_TYPE_TENSOR}, {M_TYPE, 4, "sequence_type", M_TYPE_SEQ},
    {M_TYPE, 5, "map_type", M_TYPE_MAP},       {M_TYPE, 9, "optional_type", M_TYPE_SEQ},
    {M_TYPE, 8, "sparse_tensor_type", M_TYPE_TENSOR}, {M_TYPE, 6, "denotation", M_NONE},
    {M_TYPE_TENSOR, 1, "elem_type", M_NONE},   {M_TYPE_TENSOR, 2, "shape", M_SHAPE},
    {M_TYPE_SEQ, 1, "elem_type", M_TYPE},
    {M_TYPE_MAP, 1, "key_type", M_NONE},       {M_TYPE_MAP, 2, "value_type", M_TYPE},
    {M_SHAPE, 1, "dim", M_DIM},
    {M_DIM, 1, "dim_value", M_NONE},           {M_DIM, 2, "dim_param", M_NONE},
    {M_DIM, 3, "denotation", M_NONE},
    {M_TRAINING, 1, "initialization", M_GRAPH}, {M_TRAINING, 2, "algorithm", M_GRAPH},
    {M_TRAINING, 3, "initialization_binding", M_ENTRY}, {M_TRAINING, 4, "update_binding", M_ENTRY},
    {M_FUNCTION, 1, "name", M_NONE},           {M_FUNCTION, 4, "input", M_NONE},
    {M_FUNCTION, 5, "output", M_NONE},         {M_FUNCTION, 6, "attribute", M_NONE},
    {M_FUNCTION, 11, "attribute_proto", M_ATTR}, {M_FUNCTION, 7, "node", M_NODE},
    {M_FUNCTION, 9, "opset_import", M_OPSET},  {M_FUNCTION, 10, "domain", M_NONE},
    {M_ANNOTATION, 1, "tensor_name", M_NONE},  {M_ANNOTATION, 2, "quant_parameter_tensor_names", M_ENTRY},
    {M_SEGMENT, 1, "begin", M_NONE},           {M_SEGMENT, 2, "end", M_NONE},
    {M_ENTRY, 1, "key", M_NONE},               {M_ENTRY, 2, "value", M_NONE},
    {M_OPSET, 1, "domain", M_NONE},            {M_OPSET, 2, "version", M_NONE},
};


/* True for the message fields that are not repeated (printed without an index). */
static bool singular(const field *f) {
  switch (f->in) {
  case M_MODEL: return f->number == 7;
  case M_ATTR: return f->number == 5 || f->number == 6 || f->number == 14 || f->number == 22;
  case M_TENSOR: return f->number == 3;
  case M_TRAINING: return f->number <= 2;
  case M_SPARSE: case M_VALUE_INFO: case M_TYPE: case M_TYPE_TENSOR: case M_TYPE_SEQ: case M_TYPE_MAP:
    return true;
  default: return false;
  }
}

/* State of one walk: the whole buffer (offsets are printed from its start), the path of
 * fields entered so far, and the file name. */
typedef struct walk {
  const field *by_number[M_COUNT][MAX_FIELD]; /* the table above, indexed */
  const uint8_t *base;
  const uint8_t *end; /* end of the whole input */
  const char *file;
  char path[512];
  size_t path_len;
} walk;

static bool read_varint(const uint8_t *p, const uint8_t *end, uint64_t *out, size_t *used) {
  uint64_t v = 0;
  for (size_t i = 0; i < 10 && p + i < end; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *out = v;
      *used = i + 1;
      return true;
    }
  }
  return false;
}

static const char *path_text(const walk *w) { return w->path; }

static loom_status fail(const walk *w, const char *what, const uint8_t *at, uint32_t number,
                        const field *f, const char *problem) {
  return LOOM_ERROR(DATA_LOSS, "%s: malformed %s: in %s, field %" PRIu32 "%s%s%s at byte %zu: %s",
                    w->file, what, path_text(w), number, f ? " (" : "", f ? f->name : "",
                    f ? ")" : "", (size_t)(at - w->base), problem);
}

static loom_status walk_msg(walk *w, msg m, const uint8_t *p, const uint8_t *end, int depth,
                            const char *what) {
  if (depth > LOOM_ONNX_MAX_DEPTH)
    return LOOM_ERROR(DATA_LOSS, "%s: malformed %s: in %s: messages nested deeper than %d levels",
                      w->file, what, path_text(w), LOOM_ONNX_MAX_DEPTH);
  size_t counts[MAX_FIELD] = {0}; /* repeated-field indices, by field number (small numbers only) */
  while (p < end) {
    const uint8_t *start = p;
    uint64_t key;
    size_t used;
    if (!read_varint(p, end, &key, &used))
      return LOOM_ERROR(DATA_LOSS, "%s: malformed %s: in %s at byte %zu: field key cut off (truncated)",
                        w->file, what, path_text(w), (size_t)(p - w->base));
    p += used;
    uint32_t number = (uint32_t)(key >> 3);
    unsigned wire = (unsigned)(key & 7);
    const field *f = number < MAX_FIELD ? w->by_number[m][number] : NULL;
    if (number == 0 || key >> 32) return fail(w, what, start, number, NULL, "invalid field number");
    switch (wire) {
    case 0: { /* varint */
      uint64_t v;
      if (!read_varint(p, end, &v, &used)) return fail(w, what, start, number, f, "varint cut off (truncated)");
      if (f && f->holds != M_NONE) return fail(w, what, start, number, f, "a message field holds a varint");
      p += used;
      break;
    }
    case 1: /* 64-bit */
      if (end - p < 8) return fail(w, what, start, number, f, "8-byte value cut off (truncated)");
      if (f && f->holds != M_NONE) return fail(w, what, start, number, f, "a message field holds a fixed64");
      p += 8;
      break;
    case 5: /* 32-bit */
      if (end - p < 4) return fail(w, what, start, number, f, "4-byte value cut off (truncated)");
      if (f && f->holds != M_NONE) return fail(w, what, start, number, f, "a message field holds a fixed32");
      p += 4;
      break;
    case 2: { /* length-delimited */
      uint64_t n;
      if (!read_varint(p, end, &n, &used)) return fail(w, what, start, number, f, "length cut off (truncated)");
      p += used;
      bool cut = n > (uint64_t)(end - p);
      if (cut && (end != w->end || !f || f->holds == M_NONE)) {
        char msg_text[160];
        snprintf(msg_text, sizeof msg_text, "declares %" PRIu64 " bytes but only %zu remain (%s)", n,
                 (size_t)(end - p),
                 end == w->end ? "the input ends inside it: truncated, or a corrupt length"
                               : "a corrupt length: it overruns the enclosing message");
        return fail(w, what, start, number, f, msg_text);
      }
      uint64_t declared = n;
      if (cut) {
        /* The input ends inside this message: walk what is there, so the message names the
         * innermost field that is cut, not just the outermost. */
        n = (uint64_t)(end - p);
      }
      if (f && f->holds != M_NONE) {
        size_t saved = w->path_len;
        size_t index = number < MAX_FIELD ? counts[number]++ : 0;
        char index_text[32] = "";
        if (!singular(f)) snprintf(index_text, sizeof index_text, "[%zu]", index);
        int k = snprintf(w->path + w->path_len, sizeof w->path - w->path_len, ".%s%s", f->name, index_text);
        if (k > 0 && (size_t)k < sizeof w->path - w->path_len) w->path_len += (size_t)k;
        else w->path[w->path_len] = '\0';
        LOOM_PROPAGATE(walk_msg(w, f->holds, p, p + n, depth + 1, what));
        w->path_len = saved;
        w->path[saved] = '\0';
      }
      if (cut) {
        /* Cut between two fields of the sub-message: this field is the innermost one cut. */
        char msg_text[160];
        snprintf(msg_text, sizeof msg_text, "declares %" PRIu64 " bytes but only %zu remain (the input ends inside it: truncated, or a corrupt length)",
                 declared, (size_t)n);
        return fail(w, what, start, number, f, msg_text);
      }
      p += n;
      break;
    }
    default: {
      char msg_text[64];
      snprintf(msg_text, sizeof msg_text, "invalid wire type %u", wire);
      return fail(w, what, start, number, f, msg_text);
    }
    }
  }
  return LOOM_OK;
}

loom_status loom_onnx_wire_check(const uint8_t *bytes, size_t len, loom_onnx_wire_root root,
                                 const char *file) {
  walk w = {.base = bytes, .end = bytes + len, .file = file};
  for (size_t i = 0; i < LOOM_ARRAY_LEN(fields); i++)
    if (fields[i].number < MAX_FIELD) w.by_number[fields[i].in][fields[i].number] = &fields[i];
  /* The path starts with the root message's name: "ModelProto.graph.node[3]". */
  w.path_len = (size_t)snprintf(w.path, sizeof w.path, "%s", root == LOOM_ONNX_WIRE_MODEL ? "ModelProto" : "TensorProto");
  if (root == LOOM_ONNX_WIRE_MODEL) return walk_msg(&w, M_MODEL, bytes, bytes + len, 0, "ONNX model");
  return walk_msg(&w, M_TENSOR, bytes, bytes + len, 0, "tensor");
}
