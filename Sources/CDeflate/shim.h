#ifndef STACKLINE_CDEFLATE_SHIM_H
#define STACKLINE_CDEFLATE_SHIM_H
#include <libdeflate.h>
#endif
