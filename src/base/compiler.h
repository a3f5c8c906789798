/* compiler.h — portable spellings of compiler attributes used across Loom. */
#ifndef LOOM_BASE_COMPILER_H
#define LOOM_BASE_COMPILER_H

/* printf-style format checking: LOOM_PRINTF(format_index, first_vararg_index). */
#define LOOM_PRINTF(f, a) __attribute__((format(printf, f, a)))
/* A result the caller must look at (statuses, allocation results). */
#define LOOM_MUST_USE __attribute__((warn_unused_result))
#define LOOM_LIKELY(x) __builtin_expect(!!(x), 1)
#define LOOM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LOOM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* A helper inlined at every call, so that each constant argument specialises it. */
#define LOOM_ALWAYS_INLINE inline __attribute__((always_inline))

#endif
