/* Accuracy fixture: inlining several levels deep, a cold split path, recursion.
 * Built at -O2 by gcc and clang (see ../build-elf-fixtures.sh). With -DFIXTURE_LIBRARY
 * there is no main() and the entry points are exported (shared object build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct accumulator {
    long total;
    long count;
    unsigned hash;
};

static ALWAYS_INLINE unsigned mix_bits(unsigned h, unsigned v)
{
    h ^= v;
    h *= 0x9e3779b1u;
    h ^= h >> 15;
    return h;
}

static ALWAYS_INLINE void accumulate_one(struct accumulator *acc, int value)
{
    acc->total += value;
    acc->count += 1;
    acc->hash = mix_bits(acc->hash, (unsigned)value);
}

static ALWAYS_INLINE void accumulate_pair(struct accumulator *acc, int a, int b)
{
    accumulate_one(acc, a);
    if (b > a)
        accumulate_one(acc, b - a);
    else
        accumulate_one(acc, b);
}

static inline int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

static inline int scale(int v, int factor)
{
    return clamp(v * factor, -100000, 100000);
}

NOINLINE long process_values(const int *values, int n, struct accumulator *acc)
{
    for (int i = 0; i + 1 < n; i += 2)
        accumulate_pair(acc, scale(values[i], 3), scale(values[i + 1], 5));
    if (n & 1)
        accumulate_one(acc, values[n - 1]);
    return acc->total ^ (long)acc->hash;
}

__attribute__((cold)) NOINLINE static void report_failure(const char *what, int code)
{
    fprintf(stderr, "failure in %s: %d\n", what, code);
    fflush(stderr);
}

/* The unlikely branch goes to a .cold part with gcc (-freorder-blocks-and-partition). */
NOINLINE int checked_divide(int a, int b, int *out)
{
    if (unlikely(b == 0)) {
        report_failure("checked_divide", a);
        char buffer[64];
        snprintf(buffer, sizeof buffer, "divide %d by zero", a);
        report_failure(buffer, strlen(buffer));
        return -1;
    }
    if (unlikely(a == -2147483647 - 1 && b == -1)) {
        report_failure("checked_divide overflow", b);
        return -2;
    }
    *out = a / b;
    return 0;
}

NOINLINE unsigned long fibonacci(unsigned n)
{
    if (n < 2)
        return n;
    return fibonacci(n - 1) + fibonacci(n - 2);
}

NOINLINE int ackermann(int m, int n)
{
    if (m == 0)
        return n + 1;
    if (n == 0)
        return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

static int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

NOINLINE int median_of(int *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_ints);
    return values[n / 2];
}

int fixture_run(int argc)
{
    int values[17];
    for (int i = 0; i < 17; i++)
        values[i] = (i * 37 + argc) % 23 - 11;
    struct accumulator acc = {0, 0, 2166136261u};
    long r = process_values(values, 17, &acc);
    int q = 0;
    if (checked_divide((int)r, argc - 1, &q) != 0)
        q = 7;
    r += (long)fibonacci(10 + (unsigned)(argc & 3));
    r += ackermann(2, 3 + (argc & 1));
    r += median_of(values, 17);
    return (int)((r + q) & 0x7f);
}

#ifndef FIXTURE_LIBRARY
int main(int argc, char **argv)
{
    (void)argv;
    printf("%d\n", fixture_run(argc));
    return 0;
}
#endif
