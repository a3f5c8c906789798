/* test_onnx_tensor.c — TensorProto decoding, external data, and conformance test data. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/graph.h"
#include "onnx/onnx_test.h"

LOOM_TEST(onnx, loads_test_data_file) {
  loom_arena arena;
  loom_arena_init(&arena, NULL, 0);
  loom_onnx_tensor *t;
  loom_status s = loom_onnx_tensor_load(NODE_DIR "/test_add/test_data_set_0/input_0.pb", &arena, &t);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  cr_assert_eq(t->dtype, LOOM_DTYPE_F32);
  cr_assert_eq(t->rank, 3);
  cr_assert_eq(t->dims[0], 3);
  cr_assert_eq(t->dims[2], 5);
  cr_assert_eq(t->numel, 60);
  cr_assert_eq(t->nbytes, 240);
  cr_assert_not_null(t->data);
  loom_arena_destroy(&arena);
}

LOOM_TEST(onnx, typed_fields_decode) {
  loom_arena arena;
  loom_arena_init(&arena, NULL, 0);
  loom_onnx_tensor *t;
  pb p = {0};
  /* int8 from int32_data */
  pb_int(&p, 1, 3), pb_int(&p, 2, 3), pb_int(&p, 5, -1), pb_int(&p, 5, 127), pb_int(&p, 5, -128);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(t->dtype, LOOM_DTYPE_I8);
  cr_assert_eq(((int8_t *)t->data)[0], -1);
  cr_assert_eq(((int8_t *)t->data)[2], -128);
  /* float16 bit patterns from int32_data */
  pb_int(&p, 1, 2), pb_int(&p, 2, 10), pb_int(&p, 5, 0x3c00), pb_int(&p, 5, 0xc000);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(t->dtype, LOOM_DTYPE_F16);
  cr_assert_float_eq(loom_f16_to_f32(((uint16_t *)t->data)[0]), 1.0f, 0);
  cr_assert_float_eq(loom_f16_to_f32(((uint16_t *)t->data)[1]), -2.0f, 0);
  /* bool */
  pb_int(&p, 1, 2), pb_int(&p, 2, 9), pb_int(&p, 5, 1), pb_int(&p, 5, 0);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(((uint8_t *)t->data)[0], 1);
  /* float from float_data, a scalar (no dims) */
  pb_int(&p, 2, 1), pb_f32(&p, 4, 2.5f);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(t->rank, 0);
  cr_assert_eq(t->numel, 1);
  cr_assert_float_eq(*(float *)t->data, 2.5f, 0);
  /* uint32 from uint64_data */
  pb_int(&p, 1, 1), pb_int(&p, 2, 12), pb_int(&p, 11, 4000000000LL);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(((uint32_t *)t->data)[0], 4000000000u);
  /* double from double_data (packed) */
  double d[2] = {1.25, -3};
  pb_int(&p, 1, 2), pb_int(&p, 2, 11), pb_bytes(&p, 10, d, sizeof d);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(((double *)t->data)[1], -3);
  /* an empty tensor */
  pb_int(&p, 1, 0), pb_int(&p, 1, 4), pb_int(&p, 2, 1);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(t->numel, 0);
  cr_assert_null(t->data);
  loom_arena_destroy(&arena);
}

LOOM_TEST(onnx, bad_tensors) {
  loom_arena arena;
  loom_arena_init(&arena, NULL, 0);
  pb p = {0};
  pb_int(&p, 1, 2), pb_int(&p, 2, 8), pb_str(&p, 8, "names"), pb_bytes(&p, 9, "ab", 2);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT,
               "t.pb: tensor 'names': a STRING tensor keeps its elements in string_data, not in raw_data");
  pb_int(&p, 1, 2), pb_int(&p, 2, 8), pb_str(&p, 8, "names"), pb_str(&p, 6, "a");
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT, "tensor 'names': string_data holds 1 values but the dims need 2");
  pb_int(&p, 1, 2), pb_int(&p, 2, 14), pb_str(&p, 8, "c64"), pb_bytes(&p, 9, "abcdefghabcdefgh", 16);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), UNIMPLEMENTED, "element type COMPLEX64 is not supported");
  pb_int(&p, 1, 2), pb_int(&p, 2, 99), pb_bytes(&p, 9, "ab", 2);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), UNIMPLEMENTED, "element type type 99 is not supported");
  pb_int(&p, 1, 2), pb_str(&p, 8, "untyped");
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT, "tensor 'untyped' has no element type");
  pb_int(&p, 1, 3), pb_int(&p, 2, 1), pb_str(&p, 8, "short"), pb_bytes(&p, 9, "12345678", 8);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT, "tensor 'short': raw_data has 8 bytes but f32 dims need 12");
  pb_int(&p, 1, 3), pb_int(&p, 2, 7), pb_str(&p, 8, "few"), pb_int(&p, 7, 1);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT, "tensor 'few': int64_data holds 1 values but the dims need 3");
  pb_int(&p, 1, 2), pb_int(&p, 1, -5), pb_int(&p, 2, 1), pb_str(&p, 8, "neg");
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT, "tensor 'neg': dim 1 is -5 (negative)");
  pb_int(&p, 1, 1LL << 40), pb_int(&p, 1, 1LL << 40), pb_int(&p, 2, 1), pb_str(&p, 8, "huge");
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), OUT_OF_RANGE, "tensor 'huge': the element count overflows int64 at dim 1");
  pb_int(&p, 1, 1LL << 62), pb_int(&p, 2, 11), pb_str(&p, 8, "big");
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), OUT_OF_RANGE, "overflow the byte size");
  /* Truncated: a raw_data length running past the end. */
  pb_int(&p, 1, 2), pb_int(&p, 2, 1), pb_key(&p, 9, 2), pb_varint(&p, 8), pb_raw(&p, "1234", 4);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), DATA_LOSS,
               "t.pb: malformed tensor: in TensorProto, field 9 (raw_data) at byte 4: declares 8 bytes but only 4 remain");
  /* An external tensor outside a model has nowhere to look. */
  pb e = {0};
  pb_int(&p, 1, 2), pb_int(&p, 2, 1), pb_str(&p, 8, "ext"), pb_int(&p, 14, 1);
  pb_str(&e, 1, "location"), pb_str(&e, 2, "w.bin"), pb_msg(&p, 13, &e);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT, "external data 'w.bin' but the model was not loaded from a file");
  loom_arena_destroy(&arena);
}

/* Writes a model whose initializer 'w' (f32[4]) lives in external data, then loads it. */
static loom_status load_external(const char *dir, const char *location, const char *offset, const char *length,
                                 loom_onnx_model **out) {
  pb g = {0}, model = {0}, t = {0}, e = {0};
  pb_int(&t, 1, 4), pb_int(&t, 2, 1), pb_str(&t, 8, "w"), pb_int(&t, 14, 1);
  pb_str(&e, 1, "location"), pb_str(&e, 2, location), pb_msg(&t, 13, &e);
  if (offset) pb_str(&e, 1, "offset"), pb_str(&e, 2, offset), pb_msg(&t, 13, &e);
  if (length) pb_str(&e, 1, "length"), pb_str(&e, 2, length), pb_msg(&t, 13, &e);
  pb_msg(&g, 5, &t);
  const char *ins[] = {"w", NULL}, *outs[] = {"y", NULL};
  const char *dims[] = {"4"};
  pb_node(&g, "Relu", NULL, ins, outs, NULL);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  char path[512];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  cr_assert(pb_write_file(&model, path));
  pb_free(&model);
  return loom_onnx_model_load(path, out);
}

LOOM_TEST(onnx, external_data) {
  char dir[] = "/tmp/loom-onnx-ext-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char path[512];
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  FILE *f = fopen(path, "wb");
  float pad[2] = {0, 0}, w[4] = {1, -2, 3, -4};
  fwrite(pad, 1, sizeof pad, f);
  fwrite(w, 1, sizeof w, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/sub", dir);
  mkdir(path, 0700);

  loom_onnx_model *m;
  loom_status s = load_external(dir, "weights.bin", "8", "16", &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  const loom_onnx_tensor *t = loom_onnx_graph_find_initializer(m->graph, "w");
  cr_assert_not_null(t);
  cr_assert_float_eq(((float *)t->data)[1], -2.0f, 0);
  cr_assert_float_eq(((float *)t->data)[3], -4.0f, 0);
  cr_assert_eq(m->nmaps, 1, "the file is mapped once");
  loom_onnx_model_free(m);
  /* At a 16-byte aligned offset the tensor is used in place from the mapping (offset 8 above
   * is copied out of it): the same values, the mapping's bytes. */
  snprintf(path, sizeof path, "%s/aligned.bin", dir);
  f = fopen(path, "wb");
  float pad4[4] = {0, 0, 0, 0};
  fwrite(pad4, 1, sizeof pad4, f);
  fwrite(w, 1, sizeof w, f);
  fclose(f);
  s = load_external(dir, "aligned.bin", "16", "16", &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  t = loom_onnx_graph_find_initializer(m->graph, "w");
  cr_assert_eq(m->nmaps, 1);
  cr_assert_eq((const char *)t->data, (const char *)m->maps[0].base + 16, "used in place from the mapping");
  cr_assert_float_eq(((float *)t->data)[0], 1.0f, 0);
  cr_assert_float_eq(((float *)t->data)[3], -4.0f, 0);
  /* the file's identity when mapped is kept, and the imported module knows the constant lies in
   * it, at offset 16 (what the packed-weight cache keys it by before reading it) */
  loom_file_id fid, got;
  cr_assert(m->maps[0].has_id && loom_file_id_of(path, &fid) && loom_file_id_equal(&fid, &m->maps[0].id));
  const void *wdata = t->data;
  loom_graph_module *gm;
  s = loom_onnx_import_adopting(m, &gm); /* gm frees m */
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  const char *src;
  uint64_t off = 0;
  cr_assert(loom_graph_module_source_of(gm, wdata, 16, &src, &got, &off), "the constant's source");
  cr_assert(off == 16 && strstr(src, "aligned.bin") && loom_file_id_equal(&got, &fid), "offset %llu, %s", (unsigned long long)off, src);
  cr_assert_not(loom_graph_module_source_of(gm, wdata, 17, &src, &got, &off), "past the end of the file");
  loom_graph_module_destroy(gm);
  unlink(path);
  /* A path inside a subdirectory that climbs back is still refused: no '..' at all. */
  EXPECT_ERROR(load_external(dir, "sub/../weights.bin", "8", NULL, &m), INVALID_ARGUMENT,
               "initializer 'w': external data location 'sub/../weights.bin' leaves the model's directory");
  EXPECT_ERROR(load_external(dir, "/etc/passwd", NULL, NULL, &m), INVALID_ARGUMENT, "leaves the model's directory");
  EXPECT_ERROR(load_external(dir, "weights.bin", "16", NULL, &m), OUT_OF_RANGE,
               "external data [16, +16) runs past the end of");
  EXPECT_ERROR(load_external(dir, "weights.bin", "0", "12", &m), INVALID_ARGUMENT,
               "external data length 12 but the dims need 16 bytes");
  EXPECT_ERROR(load_external(dir, "weights.bin", "-1", NULL, &m), INVALID_ARGUMENT,
               "external data offset '-1' is not a non-negative integer");
  EXPECT_ERROR(load_external(dir, "missing.bin", NULL, NULL, &m), NOT_FOUND, "external data file");
  /* A symlink pointing out of the directory is refused too. */
  snprintf(path, sizeof path, "%s/link.bin", dir);
  cr_assert_eq(symlink("/etc/hostname", path), 0);
  EXPECT_ERROR(load_external(dir, "link.bin", NULL, NULL, &m), INVALID_ARGUMENT, "resolves outside the model's directory");
  unlink(path);
  snprintf(path, sizeof path, "%s/weights.bin", dir), unlink(path);
  snprintf(path, sizeof path, "%s/model.onnx", dir), unlink(path);
  snprintf(path, sizeof path, "%s/sub", dir), rmdir(path);
  rmdir(dir);
}

LOOM_TEST(onnx, test_sets) {
  loom_onnx_model *m;
  loom_status s = loom_onnx_model_load(NODE_DIR "/test_add/model.onnx", &m);
  cr_assert(s == LOOM_OK);
  loom_onnx_test_set *ts;
  s = loom_onnx_test_set_load(NODE_DIR "/test_add/test_data_set_0", m, &ts);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  cr_assert_eq(ts->n_inputs, 2);
  cr_assert_eq(ts->n_outputs, 1);
  cr_assert_eq(ts->outputs[0]->numel, 60);
  loom_onnx_test_set_free(ts);
  EXPECT_ERROR(loom_onnx_test_set_load(NODE_DIR "/test_add/test_data_set_9", m, &ts), NOT_FOUND,
               "test_data_set_9: not a test data directory");
  /* Data of another test does not fit this model's declared shapes. */
  EXPECT_ERROR(loom_onnx_test_set_load(NODE_DIR "/test_add_bcast/test_data_set_0", m, &ts), TYPE_ERROR,
               "test_add_bcast/test_data_set_0/input_1.pb: has rank 1 but the model declares 'y' with rank 3");
  loom_onnx_model_free(m);
  s = loom_onnx_model_load(NODE_DIR "/test_sequence_insert_at_back/model.onnx", &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  /* A SequenceProto: a list of tensors of differing shapes (i64 of 4, 3 and 2 elements). */
  s = loom_onnx_test_set_load(NODE_DIR "/test_sequence_insert_at_back/test_data_set_0", m, &ts);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  const loom_onnx_tensor *sq = ts->inputs[0];
  cr_assert_eq(sq->kind, LOOM_ONNX_TYPE_SEQUENCE);
  cr_assert_eq(sq->nitems, 3);
  for (size_t i = 0; i < 3; i++) {
    cr_assert_eq(sq->items[i]->dtype, LOOM_DTYPE_I64);
    cr_assert_eq(sq->items[i]->rank, 1);
    cr_assert_eq(sq->items[i]->dims[0], 4 - (int64_t)i);
  }
  cr_assert_str_eq(sq->name, "sequence");
  loom_onnx_test_set_free(ts);
  loom_onnx_model_free(m);
  /* OptionalProtos: an empty one, and one holding a sequence of one tensor of 5 elements. */
  s = loom_onnx_model_load(NODE_DIR "/test_optional_has_element_empty_optional_input/model.onnx", &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  s = loom_onnx_test_set_load(NODE_DIR "/test_optional_has_element_empty_optional_input/test_data_set_0", m, &ts);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  cr_assert_eq(ts->inputs[0]->kind, LOOM_ONNX_TYPE_OPTIONAL);
  cr_assert_eq(ts->inputs[0]->nitems, 0);
  loom_onnx_test_set_free(ts);
  loom_onnx_model_free(m);
  s = loom_onnx_model_load(NODE_DIR "/test_identity_opt/model.onnx", &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  s = loom_onnx_test_set_load(NODE_DIR "/test_identity_opt/test_data_set_0", m, &ts);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  const loom_onnx_tensor *op = ts->inputs[0];
  cr_assert_eq(op->kind, LOOM_ONNX_TYPE_OPTIONAL);
  cr_assert_eq(op->nitems, 1);
  cr_assert_eq(op->items[0]->kind, LOOM_ONNX_TYPE_SEQUENCE);
  cr_assert_eq(op->items[0]->nitems, 1);
  cr_assert_eq(op->items[0]->items[0]->numel, 5);
  loom_onnx_test_set_free(ts);
  loom_onnx_model_free(m);
}
