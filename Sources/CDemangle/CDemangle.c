#include "CDemangle.h"
#include <stdlib.h>

// Both demanglers are C ABI entry points of libraries every Swift program on
// Linux already loads; declaring them here avoids pulling C++ headers into Swift.
extern char *__cxa_demangle(const char *mangled, char *buffer, size_t *length, int *status);
extern char *swift_demangle(const char *mangled, size_t length, char *buffer,
                            size_t *bufferSize, uint32_t flags);
extern char *_swift_backtrace_demangle(const char *mangled, size_t length, char *buffer,
                                       size_t *bufferSize);

char *stackline_swift_backtrace_demangle(const char *mangled, size_t length) {
    return _swift_backtrace_demangle(mangled, length, NULL, NULL);
}

char *stackline_cxx_demangle(const char *mangled) {
    int status = 0;
    char *out = __cxa_demangle(mangled, NULL, NULL, &status);
    if (status != 0) { free(out); return NULL; }
    return out;
}

char *stackline_swift_demangle(const char *mangled, size_t length) {
    return swift_demangle(mangled, length, NULL, NULL, 0);
}
