/* See stdio.h. */
typedef unsigned long size_t;
void qsort(void *, size_t, size_t, int (*)(const void *, const void *));
