/* test_e2e_copy_forms.c — the data-movement programs whose inner loops are plain copies or
 * gathers, compiled once with symbolic extents and run against the reference interpreter:
 * concat (one copy nest per input into its slice of the output; tensorprog/gen_shape.c) along
 * the first, a middle and the last axis, 1 to 4 inputs, with an elementwise producer and
 * consumer around it; resize with mode nearest (the last axis's source indices in a table;
 * gen_image.c) for every nearest mode and coordinate transformation, up and down. Extents 0, 1,
 * primes and long ones, 1 and 2 threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e_util.h"

/* Compiles `text` and runs it at each shape set (nb binds each) with 1 and 2 threads. */
static int check_shapes(const char *text, const e2e_bind *shapes, size_t nsets, size_t nb) {
  char path[] = "/tmp/loom-copyforms-XXXXXX";
  e2e_model md = e2e_compile_text(text, path);
  int runs = 0;
  for (size_t s = 0; s < nsets; s++)
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      double err = e2e_check(&md, "main", shapes + s * nb, nb, false, NULL);
      /* copies are exact; exp (the producer of one form) is within an ulp or two of the interpreter's */
      cr_assert_lt(err, 1e-6, "shape set %zu, %u threads: relative error %g\n%s", s, threads, err, text);
      runs++;
    }
  e2e_model_free(&md);
  unlink(path);
  return runs;
}

LOOM_TEST(e2e_copy_forms, concat_along_each_axis) {
  static const e2e_bind shapes[][5] = {
      {{"a", 2}, {"b", 3}, {"c", 5}, {"e", 7}, {"f", 1}},   {{"a", 1}, {"b", 0}, {"c", 1}, {"e", 0}, {"f", 2}},
      {{"a", 0}, {"b", 4}, {"c", 3}, {"e", 2}, {"f", 3}},   {{"a", 3}, {"b", 13}, {"c", 2}, {"e", 31}, {"f", 0}},
      {{"a", 2}, {"b", 1}, {"c", 97}, {"e", 257}, {"f", 11}}, {{"a", 1}, {"b", 64}, {"c", 8}, {"e", 256}, {"f", 128}},
  };
  static const char *const texts[] = {
      /* the last axis, three inputs (the bench's form) */
      "fn @main(x: Tensor[(a, b, c), f32], y: Tensor[(a, b, e), f32], z: Tensor[(a, b, f), f32]) -> Tensor[(a, b, c + e + f), f32] {\n"
      "  dataflow {\n    r = concat(x, y, z, axis=2)\n    output r\n  }\n  return r\n}\n",
      /* a middle axis, two inputs, i32 */
      "fn @main(x: Tensor[(a, c, b), i32], y: Tensor[(a, e, b), i32]) -> Tensor[(a, c + e, b), i32] {\n"
      "  dataflow {\n    r = concat(x, y, axis=1)\n    output r\n  }\n  return r\n}\n",
      /* the first axis, four inputs (one used twice) */
      "fn @main(x: Tensor[(c, b), f32], y: Tensor[(e, b), f32], z: Tensor[(f, b), f32]) -> Tensor[(c + e + f + c, b), f32] {\n"
      "  dataflow {\n    r = concat(x, y, z, x, axis=0)\n    output r\n  }\n  return r\n}\n",
      /* one input */
      "fn @main(x: Tensor[(a, c), f64]) -> Tensor[(a, c), f64] {\n"
      "  dataflow {\n    r = concat(x, axis=1)\n    output r\n  }\n  return r\n}\n",
      /* an elementwise producer and consumer around it (what the fuse pass may merge) */
      "fn @main(x: Tensor[(a, b, c), f32], y: Tensor[(a, b, e), f32]) -> Tensor[(a, b, c + e), f32] {\n"
      "  dataflow {\n    p = exp(x)\n    q = concat(p, y, axis=-1)\n    r = mul(q, q)\n    output r\n  }\n  return r\n}\n",
      "fn @main(x: Tensor[(a, c, b), f32], y: Tensor[(a, e, b), f32]) -> Tensor[(a, c + e, b), f32] {\n"
      "  dataflow {\n    p = neg(y)\n    q = concat(x, p, axis=1)\n    r = add(q, q)\n    output r\n  }\n  return r\n}\n",
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) runs += check_shapes(texts[i], &shapes[0][0], 6, 5);
  cr_log_info("concat: %d runs", runs);
}

LOOM_TEST(e2e_copy_forms, resize_nearest) {
  static const char *const modes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  static const char *const coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"};
  static const struct {
    const char *scales, *size;
  } forms[] = {
      {"[1, 1, 2, 3]", "[n, c, 2*h, 3*w]"},                          /* integral up */
      {"[1, 1, 1.5, 2.5]", "[n, c, floordiv(3*h, 2), floordiv(5*w, 2)]"}, /* fractional up */
      {"[1, 1, 0.5, 0.6]", "[n, c, floordiv(h, 2), floordiv(3*w, 5)]"},   /* down */
      {"[1, 1, 2, 1]", "[n, c, 2*h, w]"},                            /* the last axis not resized */
  };
  static const e2e_bind shapes[][4] = {
      {{"n", 1}, {"c", 2}, {"h", 3}, {"w", 5}},  {{"n", 2}, {"c", 1}, {"h", 1}, {"w", 1}},  {{"n", 1}, {"c", 3}, {"h", 7}, {"w", 13}},
      {{"n", 0}, {"c", 2}, {"h", 4}, {"w", 4}},  {{"n", 1}, {"c", 1}, {"h", 2}, {"w", 0}},  {{"n", 1}, {"c", 4}, {"h", 17}, {"w", 56}},
  };
  int runs = 0;
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
    for (size_t m = 0; m < 4; m++)
      for (size_t k = 0; k < 5; k++) {
        if ((f + m + k) % 2) continue; /* half the combinations: every mode, coordinate and form still meets */
        char text[1024];
        snprintf(text, sizeof text,
                 "const @s: Tensor[(4,), f64] = %s\n"
                 "fn @main(x: Tensor[(n, c, h, w), f32]) -> Object {\n  dataflow {\n"
                 "    y = resize(x, @s, size=%s, coord=\"%s\", nearest_mode=\"%s\")\n    output y\n  }\n  return y\n}\n",
                 forms[f].scales, forms[f].size, coords[k], modes[m]);
        runs += check_shapes(text, &shapes[0][0], 6, 4);
      }
  cr_log_info("resize nearest: %d runs", runs);
}
