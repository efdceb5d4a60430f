/*
 * parse.h — the one strict integer parser of the project.
 *
 * Configuration, metadata, checkpoints, file names and control commands all
 * read integers through mk_parse_i64: optional '-', then decimal digits and
 * nothing else (no spaces, no '+', no hex, no trailing text), and the value
 * must fit in int64_t. Callers check their own range with mk_parse_range.
 */
#ifndef MK_PARSE_H
#define MK_PARSE_H

#include <stdbool.h>
#include <stdint.h>

bool mk_parse_i64(const char *s, int64_t *out);
/* mk_parse_i64 and lo <= value <= hi. */
bool mk_parse_range(const char *s, int64_t lo, int64_t hi, int64_t *out);

#endif
