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

/// What identifies the library whose demangler `which` is (0: Swift's `swift_demangle`,
/// 1: the C++ ABI's `__cxa_demangle`) in this process, written to `out` (at most `capacity`
/// bytes, capacity >= 25): tag 1 then the loaded object's GNU build id (cut to fit), or, for an
/// object without one, tag 2 then its file's size, mtime (ns) and inode as 3 native u64.
/// Returns the length written, or -1 when the object cannot be found.
int stackline_demangler_identity(int which, unsigned char *out, size_t capacity);

#endif
