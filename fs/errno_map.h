/*
 * errno_map.h — the one table from core error codes to errnos
 * (docs/filesystem.md 7).
 */
#ifndef MK_ERRNO_MAP_H
#define MK_ERRNO_MAP_H

#include "error.h"

/* A positive errno for err (0 for MK_OK). */
int mk_errno(mk_err err);

#endif
