#ifndef STACKLINE_CLIBPQ_SHIM_H
#define STACKLINE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
