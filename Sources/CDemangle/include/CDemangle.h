#ifndef STACKLINE_CDEMANGLE_H
#define STACKLINE_CDEMANGLE_H
#include <stddef.h>
#include <stdint.h>

/// Itanium C++ demangler (libstdc++). Returns a malloc'd string or NULL.
char *stackline_cxx_demangle(const char *mangled);

/// Swift runtime demangler (libswiftCore). Returns a malloc'd string or NULL.
char *stackline_swift_demangle(const char *mangled, size_t length);

/// The Swift backtracer's demangler (libswiftCore): the short form it prints in crash
/// reports, e.g. `crash(_:)`. Handles C++ names too. Returns a malloc'd string or NULL.
char *stackline_swift_backtrace_demangle(const char *mangled, size_t length);

#endif
