/*
 * names.c — parse the parameters carried in records@... / append:... names.
 *
 * Decisions beyond docs/filesystem.md section 3 (which should say the same):
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
 *     INVALID_REQUEST. A flag given twice is refused before its value is
 *     looked at.
 *
 * Every flag is known in one place: the table `flags` (name, takes a value
 * or not, which files take it, its setter). Numbers go through core/base/parse.h.
 */
#include "names.h"

#include <stddef.h>
#include <string.h>

#include "parse.h"

/* A piece of the name: [p, p+len). Never NUL-terminated. */
typedef struct {
	const char *p;
	size_t len;
} piece;

static mk_err fail(mk_strbuf *why, const char *fmt, piece what)
{
	return mk_error(why, MK_INVALID_REQUEST, fmt, (int)what.len, what.p);
}

static mk_err fail0(mk_strbuf *why, const char *msg)
{
	return mk_error(why, MK_INVALID_REQUEST, "%s", msg);
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

/*
 * Plain decimal digits, non-empty, fitting int64: core/base/parse.h's parser
 * (the one integer parser) on a NUL-terminated copy, without its sign.
 */
static bool parse_decimal(piece s, int64_t *out)
{
	char buf[MK_NAME_VALUE_MAX + 1];
	if (s.len == 0 || s.len >= sizeof(buf) || s.p[0] == '-')
		return false;
	memcpy(buf, s.p, s.len);
	buf[s.len] = '\0';
	return mk_parse_range(buf, 0, INT64_MAX, out);
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

/* ---- the flags ---------------------------------------------------------- */

/*
 * Every flag, once: its name, whether it takes "=VALUE", which files take
 * it, and what it does. A flag is known by its name alone ("acks" and
 * "acks=x" are both the acks flag; "tsv=1" is no flag at all), so that one
 * meant for the other kind of file is named as such.
 */
enum { FOR_RECORDS = 1 << 0, FOR_APPEND = 1 << 1 };

typedef struct {
	unsigned kind;            /* FOR_RECORDS or FOR_APPEND: this name's */
	mk_read_params *rp;       /* set when kind is FOR_RECORDS */
	mk_append_params *ap;     /* set when kind is FOR_APPEND */
	unsigned seen;            /* bit i: flags[i] given */
} flag_ctx;

typedef mk_err (*flag_apply)(flag_ctx *c, piece val, mk_strbuf *why);

static mk_err set_max(flag_ctx *c, piece val, mk_strbuf *why)
{
	int64_t n;
	if (!parse_decimal(val, &n) || n < 1)
		return fail(why, "bad max '%.*s' (want N >= 1)", val);
	c->rp->max = n;
	return MK_OK;
}

static mk_err set_acks(flag_ctx *c, piece val, mk_strbuf *why)
{
	if (piece_is(val, "0"))
		c->ap->acks = 0;
	else if (piece_is(val, "1"))
		c->ap->acks = 1;
	else if (piece_is(val, "all") || piece_is(val, "-1"))
		c->ap->acks = MK_ACKS_ALL;
	else
		return fail(why, "bad acks '%.*s' (want 0, 1 or all)", val);
	return MK_OK;
}

static mk_err set_key(flag_ctx *c, piece val, mk_strbuf *why)
{
	(void)why;
	/* ':' and '/' cannot reach here; any other byte is fine */
	memcpy(c->ap->key, val.p, val.len);
	c->ap->key[val.len] = '\0';
	c->ap->key_len = (int)val.len;
	c->ap->has_key = true;
	return MK_OK;
}

/* An identifier value into dst (MK_NAME_VALUE_MAX + 1 bytes); bad says
 * what is refused, with the value. */
static mk_err set_ident(char *dst, piece val, const char *bad, mk_strbuf *why)
{
	if (!ident_ok(val))
		return fail(why, bad, val);
	memcpy(dst, val.p, val.len);
	dst[val.len] = '\0';
	return MK_OK;
}

static mk_err set_producer(flag_ctx *c, piece val, mk_strbuf *why)
{
	return set_ident(c->ap->producer, val, "bad producer name '%.*s'", why);
}

static mk_err set_seq(flag_ctx *c, piece val, mk_strbuf *why)
{
	int64_t n;
	if (!parse_decimal(val, &n) || n > INT32_MAX)
		return fail(why, "bad seq '%.*s'", val);
	c->ap->seq = n;
	return MK_OK;
}

static mk_err set_txn(flag_ctx *c, piece val, mk_strbuf *why)
{
	return set_ident(c->ap->txn, val, "bad transaction id '%.*s'", why);
}

/*
 * A bare flag is data: the format it selects (on either kind of file), or
 * the read parameter it turns on. A value flag has its apply function.
 */
static const struct flag_def {
	const char *name;
	bool has_value;           /* NAME=VALUE; otherwise bare NAME */
	unsigned files;           /* FOR_RECORDS | FOR_APPEND */
	flag_apply apply;         /* value flags */
	mk_format format;         /* bare: this format, or PLAIN for none */
	size_t read_flag;         /* bare, no format: offset of a bool in
				   * mk_read_params */
} flags[] = {
	{ "tsv", false, FOR_RECORDS | FOR_APPEND, NULL, MK_FORMAT_TSV, 0 },
	{ "json", false, FOR_RECORDS, NULL, MK_FORMAT_JSON, 0 },
	{ "committed", false, FOR_RECORDS, NULL, MK_FORMAT_PLAIN,
	  offsetof(mk_read_params, committed) },
	{ "follow", false, FOR_RECORDS, NULL, MK_FORMAT_PLAIN,
	  offsetof(mk_read_params, follow) },
	{ "max", true, FOR_RECORDS, set_max, MK_FORMAT_PLAIN, 0 },
	{ "acks", true, FOR_APPEND, set_acks, MK_FORMAT_PLAIN, 0 },
	{ "key", true, FOR_APPEND, set_key, MK_FORMAT_PLAIN, 0 },
	{ "producer", true, FOR_APPEND, set_producer, MK_FORMAT_PLAIN, 0 },
	{ "seq", true, FOR_APPEND, set_seq, MK_FORMAT_PLAIN, 0 },
	{ "txn", true, FOR_APPEND, set_txn, MK_FORMAT_PLAIN, 0 },
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))
_Static_assert(NFLAGS <= 32, "seen is a 32-bit set");

static size_t flag_index(const char *name)
{
	for (size_t i = 0; i < NFLAGS; i++)
		if (!strcmp(flags[i].name, name))
			return i;
	return NFLAGS;
}

/* A bare flag's effect (flags[] says which). */
static void set_bare(flag_ctx *c, const struct flag_def *f)
{
	if (f->format != MK_FORMAT_PLAIN && c->rp)
		c->rp->format = f->format;
	else if (f->format != MK_FORMAT_PLAIN)
		c->ap->format = f->format;
	else
		*(bool *)((char *)c->rp + f->read_flag) = true;
}

/*
 * The flag a piece names: a bare flag by its exact name, a value flag by
 * its name alone or followed by '=' (*has_eq and *val then tell which).
 */
static const struct flag_def *find_flag(piece flag, bool *has_eq, piece *val)
{
	const char *eq = memchr(flag.p, '=', flag.len);
	piece name = { flag.p, eq ? (size_t)(eq - flag.p) : flag.len };
	*has_eq = eq != NULL;
	if (eq)
		*val = (piece){ eq + 1, flag.len - name.len - 1 };
	for (size_t i = 0; i < NFLAGS; i++) {
		if (!piece_is(name, flags[i].name))
			continue;
		if (!flags[i].has_value && eq)
			return NULL;     /* "tsv=1" */
		return &flags[i];
	}
	return NULL;
}

/* One flag of a name: known, for this kind of file, once, valid. */
static mk_err apply_flag(void *vctx, piece flag, mk_strbuf *why)
{
	flag_ctx *c = vctx;
	bool has_eq;
	piece val = { flag.p, 0 }, name = flag;
	const struct flag_def *f = find_flag(flag, &has_eq, &val);
	if (f && !(f->files & c->kind))
		return fail(why, c->kind == FOR_RECORDS
				 ? "flag '%.*s' is for append files"
				 : "flag '%.*s' is for records files", flag);
	if (!f || (f->has_value && !has_eq))
		return fail(why, "unknown flag '%.*s'", flag);
	unsigned bit = 1u << (f - flags);
	if (has_eq)
		name.len = (size_t)(val.p - 1 - flag.p);
	if (c->seen & bit)
		return fail(why, "flag '%.*s' given twice", name);
	c->seen |= bit;
	if (f->has_value && val.len > MK_NAME_VALUE_MAX)
		return fail(why, "value of '%.*s' too long", flag);
	if (f->apply) {
		mk_err err = f->apply(c, val, why);
		if (err)
			return err;
	} else {
		set_bare(c, f);
	}
	unsigned fmt = 1u << flag_index("tsv") | 1u << flag_index("json");
	if ((c->seen & fmt) == fmt)
		return fail0(why, "flags 'tsv' and 'json' exclude each other");
	return MK_OK;
}

/* ---- records ------------------------------------------------------------ */

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

bool mk_name_view(const char *name, const char *view, char *base, size_t cap)
{
	size_t n = strlen(name), v = strlen(view);
	if (n <= v || strcmp(name + n - v, view) != 0 || n - v >= cap)
		return false;
	memcpy(base, name, n - v);
	base[n - v] = '\0';
	return true;
}

/* records or batches: the base name is 7 characters either way. */
static mk_err parse_read(const char *name, mk_read_params *out,
			 mk_strbuf *why)
{
	if (strchr(name, '/'))
		return fail0(why, "'/' in name");

	mk_read_params p = {
		.pos = { MK_POS_EARLIEST, 0 },
		.format = MK_FORMAT_PLAIN,
		.committed = false,
		.follow = false,
		.max = -1,
	};
	flag_ctx c = { FOR_RECORDS, &p, NULL, 0 };
	const char *s = name + 7;
	if (*s == '@') {
		const char *start = s + 1;
		const char *end = strchr(start, ':');
		if (!end)
			end = start + strlen(start);
		mk_err err = parse_pos((piece){ start, (size_t)(end - start) },
				       &p.pos, why);
		if (err)
			return err;
		s = end;
	}
	mk_err err = each_flag(s, apply_flag, &c, why);
	if (err)
		return err;
	*out = p;
	return MK_OK;
}

mk_err mk_name_parse_poll(const char *name, mk_read_params *out,
			  mk_strbuf *why)
{
	if (mk_name_classify(name) != MK_NAME_POLL)
		return fail0(why, "not a poll name");
	if (strchr(name, '/'))
		return fail0(why, "'/' in name");
	mk_read_params p = {
		.pos = { MK_POS_EARLIEST, 0 },   /* unused: the member's positions */
		.format = MK_FORMAT_PLAIN,
		.committed = false,
		.follow = false,
		.max = -1,
	};
	flag_ctx c = { FOR_RECORDS, &p, NULL, 0 };
	mk_err err = each_flag(name + 4, apply_flag, &c, why);
	if (err)
		return err;
	*out = p;
	return MK_OK;
}

/* ---- append ------------------------------------------------------------- */

mk_err mk_name_parse_append(const char *name, mk_append_params *out,
			    mk_strbuf *why)
{
	if (mk_name_classify(name) != MK_NAME_APPEND)
		return fail0(why, "not an append name");
	if (strchr(name, '/'))
		return fail0(why, "'/' in name");

	mk_append_params p;
	memset(&p, 0, sizeof(p));
	p.acks = MK_ACKS_DEFAULT;
	p.format = MK_FORMAT_PLAIN;
	p.has_key = false;
	p.key_len = 0;
	p.seq = -1;
	flag_ctx c = { FOR_APPEND, NULL, &p, 0 };

	mk_err err = each_flag(name + 6, apply_flag, &c, why);
	if (err)
		return err;
	if ((c.seen & 1u << flag_index("seq")) &&
	    !(c.seen & 1u << flag_index("producer")))
		return fail0(why, "seq= needs producer=");
	*out = p;
	return MK_OK;
}
