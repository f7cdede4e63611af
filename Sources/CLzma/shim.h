#ifndef STACKLINE_CLZMA_SHIM_H
#define STACKLINE_CLZMA_SHIM_H
#include <lzma.h>
#endif
