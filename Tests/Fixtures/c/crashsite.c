/* Crash fixture: prints where it is loaded, then crashes with SIGSEGV inside
 * crash_here(); the signal handler prints the faulting pc. The test turns the pc into
 * a file address (pc - load base) for llvm-symbolizer, and gives Stackline the raw pc
 * with --load-address. Output lines:
 *   base 0x...      lowest mapped address of this executable (dladdr dli_fbase)
 *   function 0x...  runtime address of crash_here
 *   pc 0x...        faulting instruction address (from the signal's ucontext)   */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#include <unistd.h>

static void on_segv(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)info;
    ucontext_t *uc = context;
    printf("pc 0x%llx\n", (unsigned long long)uc->uc_mcontext.gregs[REG_RIP]);
    fflush(stdout);
    _exit(139);
}

static inline __attribute__((always_inline)) void store_through(volatile int *p, int v)
{
    *p = v; /* faults here */
}

__attribute__((noinline)) void crash_here(volatile int *p, int v)
{
    store_through(p, v * 3 + 1);
}

int main(int argc, char **argv)
{
    (void)argv;
    Dl_info info;
    if (!dladdr((void *)&crash_here, &info)) {
        fprintf(stderr, "dladdr failed\n");
        return 2;
    }
    printf("base %p\n", info.dli_fbase);
    printf("function %p\n", (void *)&crash_here);
    fflush(stdout);
    struct sigaction sa = {0};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    volatile int *null_pointer = (volatile int *)(argc > 100 ? (long)argc : 0);
    crash_here(null_pointer, argc);
    return 0;
}
