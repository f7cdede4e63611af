#ifndef STACKLINE_CMALLOC_SHIM_H
#define STACKLINE_CMALLOC_SHIM_H
/* glibc's mallopt and its parameters: Glibc's Swift module leaves malloc.h out. */
#include <malloc.h>
#endif
