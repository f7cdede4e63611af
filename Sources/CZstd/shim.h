#ifndef STACKLINE_CZSTD_SHIM_H
#define STACKLINE_CZSTD_SHIM_H
#include <zstd.h>
#include <zstd_errors.h>
#endif
