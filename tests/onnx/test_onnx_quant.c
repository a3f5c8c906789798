/* test_onnx_quant.c — low-precision tensors in ONNX files (packed 4- / 2-bit data unpacked,
 * float8 bit patterns) and the quantization importer (onnx_import_quant.c): a blocked case
 * the conformance suite lacks (a partial last block), and the errors for bad attributes. */
#include <math.h>

#include "frontend/onnx/onnx_import.h"
#include "onnx/onnx_test.h"

LOOM_TEST(onnx_quant, packed_types_unpack_one_per_byte) {
  loom_arena arena;
  loom_arena_init(&arena, NULL, 0);
  loom_onnx_tensor *t;
  pb p = {0};
  /* INT4, 3 elements (odd): low nibble first */
  static const uint8_t i4[] = {0x8f, 0x07};
  pb_int(&p, 1, 3), pb_int(&p, 2, 22), pb_bytes(&p, 9, i4, 2);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(t->dtype, LOOM_DTYPE_I4);
  cr_assert_eq(t->nbytes, 3);
  cr_assert_eq(((int8_t *)t->data)[0], -1);
  cr_assert_eq(((int8_t *)t->data)[1], -8);
  cr_assert_eq(((int8_t *)t->data)[2], 7);
  /* UINT4, the same bytes */
  pb_int(&p, 1, 3), pb_int(&p, 2, 21), pb_bytes(&p, 9, i4, 2);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(((uint8_t *)t->data)[0], 15);
  cr_assert_eq(((uint8_t *)t->data)[1], 8);
  /* INT2, 5 elements: 0, 1, -2, -1 | 1 */
  static const uint8_t i2[] = {0xe4, 0x01};
  pb_int(&p, 1, 5), pb_int(&p, 2, 26), pb_bytes(&p, 9, i2, 2);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  static const int8_t want2[] = {0, 1, -2, -1, 1};
  for (int k = 0; k < 5; k++) cr_assert_eq(((int8_t *)t->data)[k], want2[k], "int2 %d", k);
  /* UINT2 from int32_data: one packed byte per entry */
  pb_int(&p, 1, 5), pb_int(&p, 2, 25), pb_int(&p, 5, 0xe4), pb_int(&p, 5, 0x03);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  static const uint8_t wantu2[] = {0, 1, 2, 3, 3};
  for (int k = 0; k < 5; k++) cr_assert_eq(((uint8_t *)t->data)[k], wantu2[k], "uint2 %d", k);
  /* FLOAT4E2M1: codes kept, one per byte */
  pb_int(&p, 1, 3), pb_int(&p, 2, 23), pb_bytes(&p, 9, "\x2f\x07", 2);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(((uint8_t *)t->data)[0], 0xf);
  cr_assert_eq(((uint8_t *)t->data)[1], 0x2);
  cr_assert_eq(((uint8_t *)t->data)[2], 0x7);
  /* FLOAT8E5M2 bit patterns from int32_data */
  pb_int(&p, 1, 2), pb_int(&p, 2, 19), pb_int(&p, 5, 0x3c), pb_int(&p, 5, 0xfc);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(t->dtype, LOOM_DTYPE_F8E5M2);
  cr_assert_eq(((uint8_t *)t->data)[1], 0xfc);
  /* sizes are the packed sizes */
  pb_int(&p, 1, 3), pb_int(&p, 2, 22), pb_str(&p, 8, "short4"), pb_bytes(&p, 9, i4, 1);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT, "tensor 'short4': raw_data has 1 bytes but i4 dims need 2");
  pb_int(&p, 1, 5), pb_int(&p, 2, 26), pb_str(&p, 8, "few2"), pb_int(&p, 5, 1);
  EXPECT_ERROR(onnx_test_parse_tensor(&p, &arena, NULL), INVALID_ARGUMENT, "tensor 'few2': int32_data holds 1 values but the dims need 2");
  loom_arena_destroy(&arena);
}

typedef onnx_test_io io;

static void str_attr(pb *attrs, const char *name, const char *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 3), pb_str(&a, 4, v), pb_msg(attrs, 5, &a);
}

#define EXPECT_IMPORT_ERROR(op, ins, out, attrs, code, needle)                                 \
  do {                                                                                         \
    loom_onnx_model *m_;                                                                       \
    loom_graph_module *gm_;                                                                    \
    EXPECT_ERROR(onnx_test_import_one(op, "q", ins, sizeof(ins) / sizeof(ins)[0], out, attrs, &m_, &gm_), code, needle); \
    cr_assert_null(gm_);                                                                       \
    loom_onnx_model_free(m_);                                                                  \
  } while (0)

LOOM_TEST(onnx_quant, blocked_quantization_with_a_partial_block) {
  /* x (1, 5), scale (1, 3) in blocks of 2 along axis 1: scales 1 1 2 2 4 */
  io ins[] = {{"x", 1, 2, {"1", "5"}}, {"s", 1, 2, {"1", "3"}}};
  io out = {"y", 2, 2, {"1", "5"}};
  pb attrs = {0};
  onnx_test_int_attr(&attrs, "axis", 1), onnx_test_int_attr(&attrs, "block_size", 2);
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = onnx_test_import_one("QuantizeLinear", "q", ins, 2, &out, &attrs, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value args[2], r;
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){1, 5}, &args[0]));
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){1, 3}, &args[1]));
  static const double xv[] = {1, 2, 3, 4, 5}, sv[] = {1, 2, 4};
  for (size_t i = 0; i < 5; i++) loom_graph_tensor_set_f64(&args[0].t, i, xv[i]);
  for (size_t i = 0; i < 3; i++) loom_graph_tensor_set_f64(&args[1].t, i, sv[i]);
  s = loom_graph_eval(gm, "main", 2, args, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  /* x / s = 1 2 1.5 2 1.25, rounded half to even: 1 2 2 2 1 */
  static const uint8_t want[] = {1, 2, 2, 2, 1};
  cr_assert_eq(r.t.dtype, LOOM_DTYPE_U8);
  for (size_t i = 0; i < 5; i++) cr_assert_eq(((uint8_t *)r.t.data)[i], want[i], "element %zu", i);
  loom_graph_value_free(&r);
  for (size_t i = 0; i < 2; i++) loom_graph_value_free(&args[i]);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx_quant, bad_attributes_name_the_node) {
  io q3[] = {{"x", 1, 1, {"4"}}, {"s", 1, 0, {NULL}}, {"z", 2, 0, {NULL}}};
  io q2[] = {{"x", 1, 1, {"4"}}, {"s", 1, 0, {NULL}}};
  io yu8 = {"y", 2, 1, {"4"}}, yf = {"y", 1, 1, {"4"}};
  pb a = {0};
  onnx_test_int_attr(&a, "output_dtype", 3);
  EXPECT_IMPORT_ERROR("QuantizeLinear", q3, &yu8, &a, INVALID_ARGUMENT,
                      "node 0 (QuantizeLinear 'q'): output_dtype is i8 but the zero point is u8");
  onnx_test_int_attr(&a, "output_dtype", 1);
  EXPECT_IMPORT_ERROR("QuantizeLinear", q2, &yf, &a, INVALID_ARGUMENT, "output type f32 is not a quantized type");
  onnx_test_int_attr(&a, "block_size", -1);
  EXPECT_IMPORT_ERROR("QuantizeLinear", q2, &yu8, &a, INVALID_ARGUMENT, "block_size is -1 (must be >= 0)");
  /* per-axis: 3 scales for an axis of 4 */
  io d3[] = {{"x", 2, 2, {"2", "4"}}, {"s", 1, 1, {"3"}}};
  io y24 = {"y", 1, 2, {"2", "4"}};
  EXPECT_IMPORT_ERROR("DequantizeLinear", d3, &y24, NULL, INVALID_ARGUMENT, "input 1 has 3 elements, input 0 has 4 on axis 1");
  io d2[] = {{"x", 2, 2, {"2", "4"}}, {"s", 1, 1, {"2"}}};
  onnx_test_int_attr(&a, "axis", 2);
  EXPECT_IMPORT_ERROR("DequantizeLinear", d2, &y24, &a, INVALID_ARGUMENT, "axis 2 is out of range for input 0 of rank 2");
  io c1[] = {{"x", 1, 1, {"4"}}};
  io y8 = {"y", 24, 1, {"4"}};
  onnx_test_int_attr(&a, "to", 24), str_attr(&a, "round_mode", "sideways");
  EXPECT_IMPORT_ERROR("Cast", c1, &y8, &a, INVALID_ARGUMENT, "attribute 'round_mode' is 'sideways' (up | down | nearest)");
  io yi8 = {"y", 3, 1, {"4"}};
  onnx_test_int_attr(&a, "to", 3);
  EXPECT_IMPORT_ERROR("BitCast", c1, &yi8, &a, TYPE_ERROR, "operand 0 has dtype f32 (32 bits), dtype i8 has 8 bits");
  /* float8 arithmetic is refused by the graph op, naming the node */
  io f8[] = {{"x", 17, 1, {"4"}}, {"w", 17, 1, {"4"}}};
  io yf8 = {"y", 17, 1, {"4"}};
  EXPECT_IMPORT_ERROR("Add", f8, &yf8, NULL, TYPE_ERROR, "node 0 (Add 'q'): add: operand 0 has dtype f8e4m3fn");
}
