#ifndef STACKLINE_CZLIB_SHIM_H
#define STACKLINE_CZLIB_SHIM_H
#include <zlib.h>
#endif
