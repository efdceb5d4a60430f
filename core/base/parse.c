/* parse.c — see parse.h. */
#include "parse.h"

bool mk_parse_i64(const char *s, int64_t *out)
{
	bool neg = false;
	if (*s == '-') {
		neg = true;
		s++;
	}
	if (*s < '0' || *s > '9')
		return false;
	/* Accumulate negatively so that INT64_MIN parses too. */
	int64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		int d = *s - '0';
		if (v < (INT64_MIN + d) / 10)
			return false;
		v = v * 10 - d;
	}
	if (!neg) {
		if (v == INT64_MIN)
			return false;
		v = -v;
	}
	*out = v;
	return true;
}

bool mk_parse_range(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	int64_t v;
	if (!mk_parse_i64(s, &v) || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}
