/*
 * names.c — parse the parameters carried in records@... / append:... names.
 *
 * Decisions beyond SPEC section 3 (docs/filesystem.md should say the same):
 *
 *   - Numbers are plain decimal digits: no sign, no '+', no spaces; leading
 *     zeros are accepted ("007" is 7); the value must fit int64.
 *   - POS: N, earliest, latest, -N (N >= 0; "-0" is the visible end),
 *     ts=MS (MS >= 0). Keywords are case-sensitive.
 *   - "records" alone is records@earliest; "records:tsv" (flags without @)
 *     is allowed; "records@" (empty POS) is not.
 *   - max=N needs N >= 1. seq=N needs 0 <= N <= INT32_MAX (a Kafka producer
 *     sequence is 32 bits) and producer= in the same name.
 *   - acks takes 0, 1, all, or -1 (the same as all).
 *   - producer= and txn= are non-empty and use only letters, digits, '.',
 *     '_' and '-'. key= takes any bytes but ':' and '/', and may be empty.
 *   - tsv and json exclude each other; json is for records files only.
 *   - Any flag given twice, any empty flag ("records::tsv", a trailing ':'),
 *     any flag value (or POS) longer than MK_NAME_VALUE_MAX, and any '/' is
 *     INVALID_REQUEST.
 */
#include "names.h"

#include <string.h>

/* A piece of the name: [p, p+len). Never NUL-terminated. */
typedef struct {
	const char *p;
	size_t len;
} piece;

static mk_err fail(mk_strbuf *why, const char *fmt, piece what)
{
	if (why)
		mk_strbuf_addf(why, fmt, (int)what.len, what.p);
	return MK_INVALID_REQUEST;
}

static mk_err fail0(mk_strbuf *why, const char *msg)
{
	if (why)
		mk_strbuf_addstr(why, msg);
	return MK_INVALID_REQUEST;
}

static bool piece_is(piece s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.p, lit, n) == 0;
}

/* "NAME=..." : true and *val set to the part after '='. */
static bool piece_has_prefix(piece s, const char *prefix, piece *val)
{
	size_t n = strlen(prefix);
	if (s.len < n || memcmp(s.p, prefix, n) != 0)
		return false;
	val->p = s.p + n;
	val->len = s.len - n;
	return true;
}

/* Plain decimal digits, non-empty, fitting int64. */
static bool parse_decimal(piece s, int64_t *out)
{
	if (s.len == 0)
		return false;
	int64_t v = 0;
	for (size_t i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (c < '0' || c > '9')
			return false;
		int d = c - '0';
		if (v > (INT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool ident_ok(piece s)
{
	if (s.len == 0)
		return false;
	for (size_t i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static size_t base_len(mk_name_base base)
{
	return base == MK_NAME_RECORDS || base == MK_NAME_BATCHES ? 7
	       : base == MK_NAME_APPEND ? 6 : base == MK_NAME_POLL ? 4 : 0;
}

mk_name_base mk_name_classify(const char *name)
{
	if (strncmp(name, "records", 7) == 0) {
		char c = name[7];
		if (c == '\0' || c == '@' || c == ':')
			return MK_NAME_RECORDS;
		return MK_NAME_OTHER;
	}
	if (strncmp(name, "batches", 7) == 0) {
		char c = name[7];
		if (c == '\0' || c == '@' || c == ':')
			return MK_NAME_BATCHES;
		return MK_NAME_OTHER;
	}
	if (strncmp(name, "append", 6) == 0) {
		char c = name[6];
		if (c == '\0' || c == ':')
			return MK_NAME_APPEND;
		return MK_NAME_OTHER;
	}
	if (strncmp(name, "poll", 4) == 0) {
		char c = name[4];
		if (c == '\0' || c == ':')
			return MK_NAME_POLL;
		return MK_NAME_OTHER;
	}
	return MK_NAME_OTHER;
}

bool mk_name_has_params(const char *name)
{
	mk_name_base base = mk_name_classify(name);
	if (base == MK_NAME_OTHER)
		return false;
	return name[base_len(base)] != '\0';
}

/*
 * Split the flags part ":F1:F2..." (s starts at the first ':', or is empty)
 * calling each(flag) for every flag. Empty flags are rejected.
 */
typedef mk_err (*flag_fn)(void *ctx, piece flag, mk_strbuf *why);

static mk_err each_flag(const char *s, flag_fn fn, void *ctx, mk_strbuf *why)
{
	while (*s) {
		/* *s == ':' here */
		const char *start = s + 1;
		const char *end = strchr(start, ':');
		if (!end)
			end = start + strlen(start);
		piece flag = { start, (size_t)(end - start) };
		if (flag.len == 0)
			return fail0(why, "empty flag");
		mk_err err = fn(ctx, flag, why);
		if (err)
			return err;
		s = end;
	}
	return MK_OK;
}

/* Common checks on a flag's value. */
static mk_err check_value(piece flag, piece val, mk_strbuf *why)
{
	if (val.len > MK_NAME_VALUE_MAX)
		return fail(why, "value of '%.*s' too long", flag);
	return MK_OK;
}

/* ---- records ------------------------------------------------------------ */

enum {
	RF_TSV = 1 << 0,
	RF_JSON = 1 << 1,
	RF_COMMITTED = 1 << 2,
	RF_FOLLOW = 1 << 3,
	RF_MAX = 1 << 4,
};

typedef struct {
	mk_read_params p;
	unsigned seen;
} records_ctx;

static bool is_append_flag(piece flag)
{
	piece v;
	return piece_is(flag, "acks") || piece_is(flag, "key") ||
	       piece_is(flag, "producer") || piece_is(flag, "seq") ||
	       piece_is(flag, "txn") || piece_has_prefix(flag, "acks=", &v) ||
	       piece_has_prefix(flag, "key=", &v) ||
	       piece_has_prefix(flag, "producer=", &v) ||
	       piece_has_prefix(flag, "seq=", &v) ||
	       piece_has_prefix(flag, "txn=", &v);
}

static bool is_records_flag(piece flag)
{
	piece v;
	return piece_is(flag, "json") || piece_is(flag, "committed") ||
	       piece_is(flag, "follow") || piece_is(flag, "max") ||
	       piece_has_prefix(flag, "max=", &v);
}

static mk_err records_flag(void *vctx, piece flag, mk_strbuf *why)
{
	records_ctx *c = vctx;
	unsigned bit;
	piece val;

	if (piece_is(flag, "tsv")) {
		bit = RF_TSV;
	} else if (piece_is(flag, "json")) {
		bit = RF_JSON;
	} else if (piece_is(flag, "committed")) {
		bit = RF_COMMITTED;
	} else if (piece_is(flag, "follow")) {
		bit = RF_FOLLOW;
	} else if (piece_has_prefix(flag, "max=", &val)) {
		bit = RF_MAX;
		mk_err err = check_value(flag, val, why);
		if (err)
			return err;
		int64_t n;
		if (!parse_decimal(val, &n) || n < 1)
			return fail(why, "bad max '%.*s' (want N >= 1)", val);
		c->p.max = n;
	} else if (is_append_flag(flag)) {
		return fail(why, "flag '%.*s' is for append files", flag);
	} else {
		return fail(why, "unknown flag '%.*s'", flag);
	}

	if (c->seen & bit) {
		piece name = flag;
		const char *eq = memchr(flag.p, '=', flag.len);
		if (eq)
			name.len = (size_t)(eq - flag.p);
		return fail(why, "flag '%.*s' given twice", name);
	}
	c->seen |= bit;
	if (bit == RF_TSV)
		c->p.format = MK_FORMAT_TSV;
	else if (bit == RF_JSON)
		c->p.format = MK_FORMAT_JSON;
	else if (bit == RF_COMMITTED)
		c->p.committed = true;
	else if (bit == RF_FOLLOW)
		c->p.follow = true;
	if ((c->seen & (RF_TSV | RF_JSON)) == (RF_TSV | RF_JSON))
		return fail0(why, "flags 'tsv' and 'json' exclude each other");
	return MK_OK;
}

static mk_err parse_pos(piece s, mk_pos *pos, mk_strbuf *why)
{
	int64_t n;
	piece val;

	if (s.len == 0)
		return fail0(why, "empty position after '@'");
	if (s.len > MK_NAME_VALUE_MAX)
		return fail0(why, "position too long");
	if (piece_is(s, "earliest")) {
		*pos = (mk_pos){ MK_POS_EARLIEST, 0 };
	} else if (piece_is(s, "latest")) {
		*pos = (mk_pos){ MK_POS_LATEST, 0 };
	} else if (s.p[0] == '-') {
		piece rest = { s.p + 1, s.len - 1 };
		if (!parse_decimal(rest, &n))
			return fail(why, "bad position '%.*s'", s);
		*pos = (mk_pos){ MK_POS_BACK, n };
	} else if (piece_has_prefix(s, "ts=", &val)) {
		if (!parse_decimal(val, &n))
			return fail(why, "bad timestamp '%.*s'", val);
		*pos = (mk_pos){ MK_POS_TIME, n };
	} else if (parse_decimal(s, &n)) {
		*pos = (mk_pos){ MK_POS_OFFSET, n };
	} else {
		return fail(why, "bad position '%.*s'", s);
	}
	return MK_OK;
}

static mk_err parse_read(const char *name, mk_read_params *out,
			 mk_strbuf *why);

mk_err mk_name_parse_records(const char *name, mk_read_params *out,
			     mk_strbuf *why)
{
	if (mk_name_classify(name) != MK_NAME_RECORDS)
		return fail0(why, "not a records name");
	return parse_read(name, out, why);
}

mk_err mk_name_parse_batches(const char *name, mk_read_params *out,
			     mk_strbuf *why)
{
	if (mk_name_classify(name) != MK_NAME_BATCHES)
		return fail0(why, "not a batches name");
	mk_err err = parse_read(name, out, why);
	if (!err && out->committed)
		return fail0(why, "flag 'committed' is for records files (batches lists the log as stored)");
	return err;
}

bool mk_name_txt_view(const char *name, char *base, size_t cap)
{
	size_t n = strlen(name);
	if (n <= 4 || strcmp(name + n - 4, ":txt") != 0 || n - 4 >= cap)
		return false;
	memcpy(base, name, n - 4);
	base[n - 4] = '\0';
	return true;
}

/* records or batches: the base name is 7 characters either way. */
static mk_err parse_read(const char *name, mk_read_params *out,
			 mk_strbuf *why)
{
	if (strchr(name, '/'))
		return fail0(why, "'/' in name");

	records_ctx c = {
		.p = {
			.pos = { MK_POS_EARLIEST, 0 },
			.format = MK_FORMAT_PLAIN,
			.committed = false,
			.follow = false,
			.max = -1,
		},
		.seen = 0,
	};
	const char *s = name + 7;
	if (*s == '@') {
		const char *start = s + 1;
		const char *end = strchr(start, ':');
		if (!end)
			end = start + strlen(start);
		mk_err err = parse_pos((piece){ start, (size_t)(end - start) },
				       &c.p.pos, why);
		if (err)
			return err;
		s = end;
	}
	mk_err err = each_flag(s, records_flag, &c, why);
	if (err)
		return err;
	*out = c.p;
	return MK_OK;
}

mk_err mk_name_parse_poll(const char *name, mk_read_params *out,
			  mk_strbuf *why)
{
	if (mk_name_classify(name) != MK_NAME_POLL)
		return fail0(why, "not a poll name");
	if (strchr(name, '/'))
		return fail0(why, "'/' in name");
	records_ctx c = {
		.p = {
			.pos = { MK_POS_EARLIEST, 0 },   /* unused: the member's positions */
			.format = MK_FORMAT_PLAIN,
			.committed = false,
			.follow = false,
			.max = -1,
		},
		.seen = 0,
	};
	mk_err err = each_flag(name + 4, records_flag, &c, why);
	if (err)
		return err;
	*out = c.p;
	return MK_OK;
}

/* ---- append ------------------------------------------------------------- */

enum {
	AF_TSV = 1 << 0,
	AF_ACKS = 1 << 1,
	AF_KEY = 1 << 2,
	AF_PRODUCER = 1 << 3,
	AF_SEQ = 1 << 4,
	AF_TXN = 1 << 5,
};

typedef struct {
	mk_append_params p;
	unsigned seen;
} append_ctx;

static mk_err append_flag(void *vctx, piece flag, mk_strbuf *why)
{
	append_ctx *c = vctx;
	unsigned bit;
	piece val;
	mk_err err;

	if (piece_is(flag, "tsv")) {
		bit = AF_TSV;
	} else if (piece_has_prefix(flag, "acks=", &val)) {
		bit = AF_ACKS;
	} else if (piece_has_prefix(flag, "key=", &val)) {
		bit = AF_KEY;
	} else if (piece_has_prefix(flag, "producer=", &val)) {
		bit = AF_PRODUCER;
	} else if (piece_has_prefix(flag, "seq=", &val)) {
		bit = AF_SEQ;
	} else if (piece_has_prefix(flag, "txn=", &val)) {
		bit = AF_TXN;
	} else if (is_records_flag(flag)) {
		return fail(why, "flag '%.*s' is for records files", flag);
	} else {
		return fail(why, "unknown flag '%.*s'", flag);
	}

	if (c->seen & bit) {
		piece name = flag;
		const char *eq = memchr(flag.p, '=', flag.len);
		if (eq)
			name.len = (size_t)(eq - flag.p);
		return fail(why, "flag '%.*s' given twice", name);
	}
	c->seen |= bit;

	if (bit == AF_TSV) {
		c->p.format = MK_FORMAT_TSV;
		return MK_OK;
	}
	err = check_value(flag, val, why);
	if (err)
		return err;
	switch (bit) {
	case AF_ACKS:
		if (piece_is(val, "0"))
			c->p.acks = 0;
		else if (piece_is(val, "1"))
			c->p.acks = 1;
		else if (piece_is(val, "all") || piece_is(val, "-1"))
			c->p.acks = MK_ACKS_ALL;
		else
			return fail(why, "bad acks '%.*s' (want 0, 1 or all)",
				    val);
		break;
	case AF_KEY:
		/* ':' and '/' cannot reach here; any other byte is fine */
		memcpy(c->p.key, val.p, val.len);
		c->p.key[val.len] = '\0';
		c->p.key_len = (int)val.len;
		c->p.has_key = true;
		break;
	case AF_PRODUCER:
		if (!ident_ok(val))
			return fail(why, "bad producer name '%.*s'", val);
		memcpy(c->p.producer, val.p, val.len);
		c->p.producer[val.len] = '\0';
		break;
	case AF_SEQ: {
		int64_t n;
		if (!parse_decimal(val, &n) || n > INT32_MAX)
			return fail(why, "bad seq '%.*s'", val);
		c->p.seq = n;
		break;
	}
	case AF_TXN:
		if (!ident_ok(val))
			return fail(why, "bad transaction id '%.*s'", val);
		memcpy(c->p.txn, val.p, val.len);
		c->p.txn[val.len] = '\0';
		break;
	}
	return MK_OK;
}

mk_err mk_name_parse_append(const char *name, mk_append_params *out,
			    mk_strbuf *why)
{
	if (mk_name_classify(name) != MK_NAME_APPEND)
		return fail0(why, "not an append name");
	if (strchr(name, '/'))
		return fail0(why, "'/' in name");

	append_ctx c;
	memset(&c, 0, sizeof(c));
	c.p.acks = MK_ACKS_DEFAULT;
	c.p.format = MK_FORMAT_PLAIN;
	c.p.has_key = false;
	c.p.key_len = 0;
	c.p.seq = -1;

	mk_err err = each_flag(name + 6, append_flag, &c, why);
	if (err)
		return err;
	if ((c.seen & AF_SEQ) && !(c.seen & AF_PRODUCER))
		return fail0(why, "seq= needs producer=");
	*out = c.p;
	return MK_OK;
}
