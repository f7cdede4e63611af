/* The few libc declarations c/inlining.c needs, as an Apple SDK spells them: Linux has no
 * Apple SDK, and the fixtures link with -undefined dynamic_lookup (they never run). */
typedef struct __sFILE FILE;
extern FILE *__stderrp;
#define stderr __stderrp
int printf(const char *, ...);
int fprintf(FILE *, const char *, ...);
int fflush(FILE *);
int snprintf(char *, unsigned long, const char *, ...);
