// libFuzzer's entry point for programs that have a main() of their own (SwiftPM gives every
// executable one). Defined by libclang_rt.fuzzer, linked only with -sanitize=fuzzer.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
