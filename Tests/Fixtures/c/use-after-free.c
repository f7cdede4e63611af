// A heap use-after-free for the sanitizer report tests: built with -fsanitize=address and run
// with ASAN_OPTIONS=symbolize=0, it writes an AddressSanitizer report with raw module offsets.
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int read_freed(int *p) { return p[3]; }

__attribute__((noinline)) int *make_and_free(void) {
    int *p = malloc(10 * sizeof(int));
    p[3] = 7;
    free(p);
    return p;
}

int main(int argc, char **argv) {
    (void)argv;
    int *p = make_and_free();
    printf("%d\n", read_freed(p) + argc);
    return 0;
}
