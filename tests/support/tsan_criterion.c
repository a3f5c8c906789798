/* tsan_criterion.c — lets Criterion start under ThreadSanitizer; linked into the TSan test
 * suites only (`zig build test-tsan`, build.zig).
 *
 * At start-up Criterion's sandbox library (BoxFort, built into libcriterion) maps an arena
 * with MAP_FIXED at a random address between 0x2000'0000'0000 and 0x6000'0000'0000, picked
 * with rand_r(), after checking with mincore() that the pages are free. ThreadSanitizer
 * only lets a program map inside its application ranges (on x86-64, for PIE binaries,
 * 0x5500'0000'0000 - 0x5a00'0000'0000 in that window), so most picks are refused and the
 * run aborts: "criterion: Could not initialize inheritable arena: Resource temporarily
 * unavailable" (Criterion issue #274). No Loom code calls rand_r; this definition, which
 * takes precedence over libc's, returns pseudo-random values that BoxFort turns into
 * addresses inside that range (still valid rand_r results: in [0, RAND_MAX]). */
#include <stdlib.h>

/* BoxFort: base = 0x2000'0000'0000 + (r & 0x3fffff) << 24; r in [0x350000, 0x3a0000) puts
 * it in [0x5500'0000'0000, 0x5a00'0000'0000). */
#define APP_FIRST 0x350000u
#define APP_COUNT 0x50000u

int rand_r(unsigned int *seedp);

int rand_r(unsigned int *seedp) {
  *seedp = *seedp * 1103515245u + 12345u; /* a linear congruential step */
  return (int)(APP_FIRST + (*seedp >> 8) % APP_COUNT);
}
