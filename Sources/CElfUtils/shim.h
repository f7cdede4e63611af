#ifndef STACKLINE_CELFUTILS_SHIM_H
#define STACKLINE_CELFUTILS_SHIM_H
#include <gelf.h>
#include <libelf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <elfutils/version.h>
#include <dwarf.h>
#endif
