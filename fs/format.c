/*
 * format.c — plain / TSV / JSON record text (docs/filesystem.md section 4).
 *
 * Decisions beyond docs/filesystem.md section 4 (which should say the same):
 *
 *   Parsing
 *   - Lines end at '\n' only. A '\r' before it is data, in plain and TSV
 *     alike (binary-faithful; in TSV a CR meant as data should be written
 *     \r anyway).
 *   - An empty line is a record with an empty (not null) value.
 *   - TSV escapes: \\ \t \n \r \xHH (exactly two hex digits, any case); a
 *     field that is exactly \N is null. Any other backslash sequence, or a
 *     backslash at the end of a field, is INVALID_RECORD.
 *   - TSV shapes: 1 field = VALUE; 2 = KEY VALUE; more = KEY VALUE then
 *     NAME=VALUE headers. With key= in the name only the 1-field shape is
 *     allowed ("key given twice" otherwise).
 *   - A header field is split at its first raw '=' BEFORE unescaping, then
 *     name and value are unescaped separately, so a name can contain '='
 *     written as \x3d. No '=' is INVALID_RECORD; the name may be neither
 *     empty nor \N; a value exactly \N is a null header value.
 *   - A header name longer than 32767 bytes (the frame's i16) and more than
 *     MK_FORMAT_MAX_HEADERS headers are INVALID_RECORD.
 *   - max_line counts the bytes before the '\n'. A partial last line that
 *     is already longer than max_line is MESSAGE_TOO_LARGE even when not
 *     final (it can never become valid). A line of 2 GiB or more is always
 *     MESSAGE_TOO_LARGE (record lengths are i32).
 *
 *   Output
 *   - TSV escaping writes \\ \t \n \r for those bytes, \xHH (lower-case hex)
 *     for other bytes below 0x20 and for 0x7f, and passes bytes >= 0x80
 *     through unchanged, so UTF-8 stays readable. In header names '=' is
 *     also written \x3d, so that every record round-trips exactly.
 *   - JSON: {"offset":N,"timestamp":N,"key":K,"value":V,"headers":{...}}.
 *     A key or value that is not strict UTF-8 (no overlongs, no surrogates,
 *     nothing above U+10FFFF) is given as "key_b64" / "value_b64" (standard
 *     base64 with padding) instead. A header whose name and value are both
 *     UTF-8 goes into "headers" as "name":"value" (null value: null); any
 *     other header goes into "headers_b64" as "b64(name)":"b64(value)",
 *     which is present only when non-empty. Duplicate header names are
 *     emitted as they are (JSON allows it; most parsers keep the last).
 *     Strings escape '"', '\\' and bytes below 0x20 (\b \f \n \r \t or
 *     \u00XX); everything else, 0x7f and non-ASCII included, is literal.
 */
#include "format.h"
#include "xalloc.h"

#include <stdlib.h>

#include <inttypes.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define HEADER_NAME_MAX 32767

/* ---- TSV unescaping ----------------------------------------------------- */

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Unescape [p, p+len) onto out. On a bad escape returns INVALID_RECORD with
 * *bad pointing at the backslash.
 */
static mk_err unescape(const char *p, size_t len, mk_strbuf *out,
		       bool *is_null, const char **bad)
{
	if (len == 2 && p[0] == '\\' && p[1] == 'N') {
		*is_null = true;
		return MK_OK;
	}
	*is_null = false;
	const char *end = p + len;
	mk_strbuf_grow(out, len);
	while (p < end) {
		const char *bs = memchr(p, '\\', (size_t)(end - p));
		if (!bs) {
			mk_strbuf_add(out, p, (size_t)(end - p));
			break;
		}
		mk_strbuf_add(out, p, (size_t)(bs - p));
		if (bs + 1 >= end) {
			*bad = bs;
			return MK_INVALID_RECORD;
		}
		char c;
		switch (bs[1]) {
		case '\\': c = '\\'; p = bs + 2; break;
		case 't': c = '\t'; p = bs + 2; break;
		case 'n': c = '\n'; p = bs + 2; break;
		case 'r': c = '\r'; p = bs + 2; break;
		case 'x': {
			int hi = bs + 2 < end ? hexval((unsigned char)bs[2]) : -1;
			int lo = bs + 3 < end ? hexval((unsigned char)bs[3]) : -1;
			if (hi < 0 || lo < 0) {
				*bad = bs;
				return MK_INVALID_RECORD;
			}
			c = (char)(hi << 4 | lo);
			p = bs + 4;
			break;
		}
		default:
			*bad = bs;
			return MK_INVALID_RECORD;
		}
		mk_strbuf_addch(out, c);
	}
	return MK_OK;
}

mk_err mk_tsv_unescape(const char *p, size_t len, mk_strbuf *out, bool *is_null)
{
	const char *bad;
	return unescape(p, len, out, is_null, &bad);
}

/* ---- TSV escaping ------------------------------------------------------- */

/*
 * The TSV escape of each byte: 0 literal, else the escape letter, or 'x'
 * for \xHH: \\ \t \n \r, \xHH for the other bytes below 0x20 and 0x7f. In
 * header names '=' is also escaped (\x3d); esc_class() adds that.
 */
static const char tsv_esc[256] = {
	['\0'] = 'x', [0x01] = 'x', [0x02] = 'x', [0x03] = 'x', [0x04] = 'x',
	[0x05] = 'x', [0x06] = 'x', [0x07] = 'x', [0x08] = 'x', ['\t'] = 't',
	['\n'] = 'n', [0x0b] = 'x', [0x0c] = 'x', ['\r'] = 'r', [0x0e] = 'x',
	[0x0f] = 'x', [0x10] = 'x', [0x11] = 'x', [0x12] = 'x', [0x13] = 'x',
	[0x14] = 'x', [0x15] = 'x', [0x16] = 'x', [0x17] = 'x', [0x18] = 'x',
	[0x19] = 'x', [0x1a] = 'x', [0x1b] = 'x', [0x1c] = 'x', [0x1d] = 'x',
	[0x1e] = 'x', [0x1f] = 'x', ['\\'] = '\\', [0x7f] = 'x',
};

static inline char esc_class(unsigned char c, bool eq)
{
	return (eq && c == '=') ? 'x' : tsv_esc[c];
}

static void escape(mk_bytes field, mk_strbuf *out, bool eq)
{
	static const char hex[] = "0123456789abcdef";
	if (field.len < 0) {
		mk_strbuf_add(out, "\\N", 2);
		return;
	}
	const uint8_t *p = field.ptr, *end = field.ptr + field.len;
	mk_strbuf_grow(out, (size_t)field.len);
	while (p < end) {
		const uint8_t *run = p;
		while (p < end && !esc_class(*p, eq))
			p++;
		mk_strbuf_add(out, run, (size_t)(p - run));
		if (p == end)
			break;
		char e = esc_class(*p, eq);
		if (e == 'x') {
			char b[4] = { '\\', 'x', hex[*p >> 4], hex[*p & 15] };
			mk_strbuf_add(out, b, 4);
		} else {
			char b[2] = { '\\', e };
			mk_strbuf_add(out, b, 2);
		}
		p++;
	}
}

void mk_tsv_escape(mk_bytes field, mk_strbuf *out)
{
	escape(field, out, false);
}

/* ---- parsing lines ------------------------------------------------------ */

static mk_err line_fail(mk_strbuf *why, mk_err err, size_t lineno,
			const char *msg)
{
	mk_why(why, "line %zu: %s", lineno, msg);
	return err;
}

static mk_err bad_escape(mk_strbuf *why, size_t lineno, const char *bad,
			 const char *fend)
{
	if (!why)
		return MK_INVALID_RECORD;
	size_t n = (size_t)(fend - bad);
	if (n < 2) {
		mk_strbuf_addf(why, "line %zu: backslash at end of field",
			       lineno);
		return MK_INVALID_RECORD;
	}
	size_t show = bad[1] == 'x' ? 4 : 2;
	if (n < show)
		show = n;
	/* the backslash as is, what follows escaped so the message is text */
	mk_strbuf_addf(why, "line %zu: bad escape \\", lineno);
	escape(mk_bytes_of(bad + 1, show - 1), why, false);
	return MK_INVALID_RECORD;
}

/* One field: a slice of the written bytes when it holds no escape, else
 * an offset into the scratch buffer; or null. */
typedef struct {
	const char *direct;   /* NULL: in scratch at off */
	size_t off;
	int32_t len;          /* -1: null */
} span;

/* Fields a TSV line may have: key, value and the headers. */
#define TSV_MAX_FIELDS (2 + MK_FORMAT_MAX_HEADERS)

typedef struct {
	const mk_parse_opts *opts;
	mk_strbuf *scratch;   /* unescaped fields; never moves within a line */
	/* The line as its one scan found it (scan_line): where its first
	 * raw TABs are (a field past the last allowed one is refused before
	 * its end is needed), and whether it has a backslash at all. */
	const char *tabs[TSV_MAX_FIELDS];
	size_t ntabs;
	bool escaped;
	span fields[2 + 2 * MK_FORMAT_MAX_HEADERS];
	mk_header headers[MK_FORMAT_MAX_HEADERS];
} tsv_state;

/*
 * The TSV line scanner. The bytes of one parse call are classified once,
 * 64 at a time, into the bit mask of a block's special bytes (bit i: byte
 * i of the block is a '\n', a TAB or a '\\'; SSE2 compares where there
 * is SSE2, a byte loop elsewhere). A line's end, its TABs and whether it
 * has a backslash are then found by walking the set bits (ctz, clearing
 * the lowest), reading only the special bytes themselves to tell which of
 * the three each is; what remains of a block's mask after one line's '\n'
 * is carried to the next line, so no scan restarts inside a block.
 * Blocks start at buf, buf + 64, ...; a last block shorter than 64 bytes
 * is copied into a zeroed 64-byte buffer first (NUL is none of the
 * three), so nothing past end is ever read, at any length or alignment.
 *
 * (Three masks per block, one per byte class, were tried first: three
 * movemasks and their shifts for every 16 bytes against one, to spare a
 * byte read at the two or three special bytes of a line. They were the
 * slowest of the three scans in a loop parsing cached rows, and behind
 * one mask in the daemon: bench/README.md, "TSV scan by 64-byte masks".)
 *
 * Invariant: each byte of [buf, end) is classified exactly once (a
 * special byte is read once more, to tell which it is), the mask has no
 * bit for a byte before the line being scanned, and no byte outside
 * [buf, end) is read.
 */
typedef struct {
	const char *block;          /* the block the mask describes */
	const char *end;
	uint64_t sp;                /* its special bytes not yet passed */
} tsv_scan;

#if defined(__SSE2__)
/* The mask of the '\n', TAB and '\\' bytes of the 16 at p. */
static inline uint64_t special16(const char *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i e = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')),
					      _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))),
				 _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
	return (uint32_t)_mm_movemask_epi8(e);
}
#endif

/* The mask of the '\n', TAB and '\\' bytes of the 64 bytes at p
 * (written out four times: a loop over the four is not unrolled at -O2,
 * and its shifts by a variable count cost). */
static inline __attribute__((always_inline)) uint64_t classify64(const char *p)
{
#if defined(__SSE2__)
	return special16(p) | special16(p + 16) << 16 |
	       special16(p + 32) << 32 | special16(p + 48) << 48;
#else
	uint64_t m = 0;
	for (int i = 0; i < 64; i++)
		m |= (uint64_t)(p[i] == '\n' || p[i] == '\t' || p[i] == '\\') << i;
	return m;
#endif
}

/* The mask of the n < 64 bytes at p, as if NULs followed them. */
static __attribute__((noinline)) uint64_t classify_tail(const char *p, size_t n)
{
	char tail[64] = { 0 };
	memcpy(tail, p, n);
	return classify64(tail);
}

/* Make the block at p (p < end) the current one. */
static inline __attribute__((always_inline)) void scan_load(tsv_scan *s,
							   const char *p)
{
	s->block = p;
	s->sp = s->end - p >= 64 ? classify64(p)
				 : classify_tail(p, (size_t)(s->end - p));
}

/* A scanner at buf, which holds len > 0 bytes. */
static inline void scan_start(tsv_scan *s, const char *buf, size_t len)
{
	s->end = buf + len;
	scan_load(s, buf);
}

/* One scan of the line where s stands: its TABs (the first
 * TSV_MAX_FIELDS) and whether it has a backslash into st; returns its
 * '\n' (s then stands just past it), or NULL when none comes before end. */
static inline __attribute__((always_inline)) const char *
scan_line(tsv_state *st, tsv_scan *s)
{
	size_t ntabs = 0;
	bool escaped = false;
	for (;;) {
		uint64_t m = s->sp;
		while (m) {
			const char *q = s->block + __builtin_ctzll(m);
			m &= m - 1;
			if (*q == '\n') {
				s->sp = m;
				st->ntabs = ntabs;
				st->escaped = escaped;
				return q;
			}
			if (*q == '\\')
				escaped = true;
			else if (ntabs < TSV_MAX_FIELDS)
				st->tabs[ntabs++] = q;
		}
		if (s->end - s->block <= 64) {
			s->sp = 0;
			st->ntabs = ntabs;
			st->escaped = escaped;
			return NULL;
		}
		scan_load(s, s->block + 64);
	}
}

/* escaped: the line has a backslash somewhere (else no field can). */
static inline mk_err unescape_span(tsv_state *st, const char *p, size_t len,
				   bool escaped, span *out, size_t lineno,
				   mk_strbuf *why)
{
	if (!escaped || !memchr(p, '\\', len)) {
		*out = (span){ p, 0, (int32_t)len };
		return MK_OK;
	}
	bool is_null;
	const char *bad;
	size_t start = st->scratch->len;
	if (unescape(p, len, st->scratch, &is_null, &bad))
		return bad_escape(why, lineno, bad, p + len);
	out->direct = NULL;
	out->off = start;
	out->len = is_null ? -1 : (int32_t)(st->scratch->len - start);
	return MK_OK;
}

static mk_bytes span_bytes(const tsv_state *st, span s)
{
	if (s.len < 0)
		return MK_BYTES_NULL;
	if (s.direct)
		return mk_bytes_of(s.direct, (size_t)s.len);
	return mk_bytes_of(st->scratch->buf + s.off, (size_t)s.len);
}

/*
 * The record of one TSV line that scan_line() has scanned: *key, *value
 * and st->headers[0, *nh). Fields are taken left to right, and the first
 * that is wrong is the line's error.
 */
static inline mk_err tsv_line(tsv_state *st, const char *line, size_t len,
			      size_t lineno, mk_bytes *key_out,
			      mk_bytes *value_out, size_t *nh, mk_strbuf *why)
{
	const char *end = line + len;
	size_t nfields = 0;   /* key/value fields (at most 2) */
	size_t nheaders = 0;
	size_t field = 0;
	const char *f = line;
	mk_err err;

	/* The common line: VALUE or KEY TAB VALUE without a backslash, both
	 * slices of the line as they are. */
	if (!st->escaped && st->ntabs <= 1) {
		*nh = 0;
		if (st->ntabs == 0) {
			*key_out = st->opts->has_key ? st->opts->key : MK_BYTES_NULL;
			*value_out = mk_bytes_of(line, len);
			return MK_OK;
		}
		if (st->opts->has_key)
			return line_fail(why, MK_INVALID_RECORD, lineno,
					 "key given twice (key= and a TSV key)");
		const char *tab = st->tabs[0];
		*key_out = mk_bytes_of(line, (size_t)(tab - line));
		*value_out = mk_bytes_of(tab + 1, (size_t)(end - tab - 1));
		return MK_OK;
	}

	/* Unescaping never lengthens a field: with room for the whole line,
	 * the scratch buffer does not move while the line is parsed. */
	bool escaped = st->escaped;
	if (escaped)
		mk_strbuf_grow(st->scratch, len + 1);
	for (;;) {
		const char *tab = field < st->ntabs ? st->tabs[field] : NULL;
		const char *fend = tab ? tab : end;
		field++;
		if (nfields < 2) {
			err = unescape_span(st, f, (size_t)(fend - f), escaped,
					    &st->fields[nfields], lineno, why);
			if (err)
				return err;
			nfields++;
		} else {
			if (nheaders == MK_FORMAT_MAX_HEADERS)
				return line_fail(why, MK_INVALID_RECORD, lineno,
						 "too many headers");
			const char *eq = memchr(f, '=', (size_t)(fend - f));
			if (!eq)
				return line_fail(why, MK_INVALID_RECORD, lineno,
						 "header without '='");
			span *name = &st->fields[2 + 2 * nheaders];
			span *val = name + 1;
			err = unescape_span(st, f, (size_t)(eq - f), escaped,
					    name, lineno, why);
			if (err)
				return err;
			if (name->len < 0)
				return line_fail(why, MK_INVALID_RECORD, lineno,
						 "null header name");
			if (name->len == 0)
				return line_fail(why, MK_INVALID_RECORD, lineno,
						 "empty header name");
			if (name->len > HEADER_NAME_MAX)
				return line_fail(why, MK_INVALID_RECORD, lineno,
						 "header name too long");
			err = unescape_span(st, eq + 1, (size_t)(fend - eq - 1),
					    escaped, val, lineno, why);
			if (err)
				return err;
			nheaders++;
		}
		if (!tab)
			break;
		f = tab + 1;
	}

	mk_bytes key, value;
	if (nfields == 1) {
		key = st->opts->has_key ? st->opts->key : MK_BYTES_NULL;
		value = span_bytes(st, st->fields[0]);
	} else {
		if (st->opts->has_key)
			return line_fail(why, MK_INVALID_RECORD, lineno,
					 "key given twice (key= and a TSV key)");
		key = span_bytes(st, st->fields[0]);
		value = span_bytes(st, st->fields[1]);
	}
	/* scratch is complete now: pointers into it stay valid */
	for (size_t i = 0; i < nheaders; i++) {
		st->headers[i].name = span_bytes(st, st->fields[2 + 2 * i]);
		st->headers[i].value = span_bytes(st, st->fields[3 + 2 * i]);
	}
	*key_out = key;
	*value_out = value;
	*nh = nheaders;
	return MK_OK;
}

/* mk_parse_records' sink: one more record in the mk_parsed. */
static inline mk_err collect(void *arg, mk_bytes key, mk_bytes value,
			     const mk_header *headers, size_t nheaders)
{
	mk_parsed *out = arg;
	if (out->n == out->alloc) {
		out->alloc = out->alloc ? out->alloc * 2 : 256;
		out->recs = mk_xrealloc(out->recs, out->alloc * sizeof(*out->recs));
	}
	if (out->nhdrs + nheaders > out->hdrs_alloc) {
		while (out->nhdrs + nheaders > out->hdrs_alloc)
			out->hdrs_alloc = out->hdrs_alloc ? out->hdrs_alloc * 2 : 64;
		out->hdrs = mk_xrealloc(out->hdrs, out->hdrs_alloc * sizeof(*out->hdrs));
	}
	if (nheaders)
		memcpy(out->hdrs + out->nhdrs, headers, nheaders * sizeof(*headers));
	out->nhdrs += nheaders;
	/* headers are pointed at once collection ends (hdrs may move) */
	out->recs[out->n++] = (mk_record_in){ key, value, NULL, nheaders };
	return MK_OK;
}

/* Parse lines; TSV fields that need unescaping go to scratch, which is
 * reset before each line unless keep (then it only grows). Inlined into
 * its two callers, so that mk_parse_records' sink (collect) is a direct
 * call, inlined too, not one through a pointer per record. */
static inline __attribute__((always_inline)) mk_err parse_lines(const mk_parse_opts *opts, const char *buf,
			  size_t len, bool final, mk_record_sink sink,
			  void *arg, mk_strbuf *scratch, bool keep,
			  size_t *consumed, mk_strbuf *why)
{
	const char *p = buf, *end = buf + len;
	size_t lineno = 0;
	size_t max = opts->max_line ? opts->max_line : (size_t)INT32_MAX;
	mk_err err = MK_OK;

	if (max > (size_t)INT32_MAX)
		max = INT32_MAX;
	*consumed = 0;

	if (opts->format != MK_FORMAT_TSV) {
		/* plain: no copying, values point into buf */
		mk_bytes key = opts->has_key ? opts->key : MK_BYTES_NULL;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *lend = nl ? nl : end;
			lineno++;
			if ((size_t)(lend - p) > max)
				return line_fail(why, MK_MESSAGE_TOO_LARGE,
						 lineno, "line too long");
			if (!nl && !final)
				break;
			err = sink(arg, key, mk_bytes_of(p, (size_t)(lend - p)),
				   NULL, 0);
			if (err)
				return err;
			p = nl ? nl + 1 : end;
			*consumed = (size_t)(p - buf);
		}
		return MK_OK;
	}

	tsv_state local;
	tsv_state *st = &local;
	tsv_scan scan;
	st->opts = opts;
	st->scratch = scratch;
	if (p < end)
		scan_start(&scan, p, len);
	while (p < end) {
		const char *nl = scan_line(st, &scan);
		const char *lend = nl ? nl : end;
		lineno++;
		if ((size_t)(lend - p) > max) {
			err = line_fail(why, MK_MESSAGE_TOO_LARGE, lineno,
					"line too long");
			break;
		}
		if (!nl && !final)
			break;
		if (!keep)
			mk_strbuf_reset(scratch);
		mk_bytes key, value;
		size_t nh;
		err = tsv_line(st, p, (size_t)(lend - p), lineno, &key, &value,
			       &nh, why);
		if (!err)
			err = sink(arg, key, value, st->headers, nh);
		if (err)
			break;
		p = nl ? nl + 1 : end;
		*consumed = (size_t)(p - buf);
	}
	return err;
}

mk_err mk_parse_lines(const mk_parse_opts *opts, const char *buf, size_t len,
		      bool final, mk_record_sink sink, void *arg,
		      size_t *consumed, mk_strbuf *why)
{
	mk_strbuf scratch = MK_STRBUF_INIT;
	mk_err err = parse_lines(opts, buf, len, final, sink, arg, &scratch,
				 false, consumed, why);
	mk_strbuf_release(&scratch);
	return err;
}

/* ---- records of a write ------------------------------------------------- */

void mk_parsed_reserve(mk_parsed *out, size_t bytes)
{
	mk_strbuf_grow(&out->scratch, bytes + 1);
}

void mk_parsed_reset(mk_parsed *out)
{
	out->n = 0;
	out->nhdrs = 0;
	mk_strbuf_reset(&out->scratch);
}

void mk_parsed_release(mk_parsed *out)
{
	free(out->recs);
	free(out->hdrs);
	mk_strbuf_release(&out->scratch);
	memset(out, 0, sizeof(*out));
}

mk_err mk_parse_records(const mk_parse_opts *opts, const char *buf, size_t len,
			bool final, mk_parsed *out, size_t *consumed,
			mk_strbuf *why)
{
	/* Room for every unescaped byte of buf: the scratch never moves, so
	 * the slices into it stay valid (unescaping never lengthens). */
	mk_strbuf_grow(&out->scratch, len + 1);
	mk_err err = parse_lines(opts, buf, len, final, collect, out,
				 &out->scratch, true, consumed, why);
	size_t h = 0;
	for (size_t i = 0; i < out->n; i++) {
		out->recs[i].headers = out->recs[i].nheaders ? out->hdrs + h : NULL;
		h += out->recs[i].nheaders;
	}
	return err;
}

/* ---- JSON --------------------------------------------------------------- */

/* Decimal digits of v, as printf's %lld writes them; returns the length
 * (at most 20). */
static size_t put_i64(char *dst, int64_t v)
{
	char tmp[20];
	size_t n = 0, len = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		dst[len++] = '-';
	while (n)
		dst[len++] = tmp[--n];
	return len;
}

/* Strict UTF-8: shortest forms only, no surrogates, at most U+10FFFF. */
static bool utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		/* ASCII runs eight bytes at a time */
		while (n - i >= 8) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if (w & 0x8080808080808080ull)
				break;
			i += 8;
		}
		if (i == n)
			break;
		uint8_t c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t need;
		uint8_t lo = 0x80, hi = 0xbf;   /* bounds of the 2nd byte */
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			if (c == 0xe0)
				lo = 0xa0;      /* no overlongs */
			else if (c == 0xed)
				hi = 0x9f;      /* no surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			if (c == 0xf0)
				lo = 0x90;      /* no overlongs */
			else if (c == 0xf4)
				hi = 0x8f;      /* <= U+10FFFF */
		} else {
			return false;
		}
		if (n - i <= need)
			return false;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return false;
		for (size_t k = 2; k <= need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		i += need + 1;
	}
	return true;
}

static void base64(const uint8_t *s, size_t n, mk_strbuf *out)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	mk_strbuf_grow(out, (n + 2) / 3 * 4);
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		char b[4] = { tab[v >> 18], tab[(v >> 12) & 63],
			      tab[(v >> 6) & 63], tab[v & 63] };
		mk_strbuf_add(out, b, 4);
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)s[i] << 16;
		char b[4] = { tab[v >> 18], tab[(v >> 12) & 63], '=', '=' };
		mk_strbuf_add(out, b, 4);
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
		char b[4] = { tab[v >> 18], tab[(v >> 12) & 63],
			      tab[(v >> 6) & 63], '=' };
		mk_strbuf_add(out, b, 4);
	}
}

/* Bytes a JSON string escapes: '"', '\\' and everything below 0x20. */
static const bool json_esc[256] = {
	[0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1,
	[0x06] = 1, [0x07] = 1, [0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1,
	[0x0c] = 1, [0x0d] = 1, [0x0e] = 1, [0x0f] = 1, [0x10] = 1, [0x11] = 1,
	[0x12] = 1, [0x13] = 1, [0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1,
	[0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1, [0x1c] = 1, [0x1d] = 1,
	[0x1e] = 1, [0x1f] = 1, ['"'] = 1, ['\\'] = 1,
};

/* A JSON string of bytes known to be UTF-8. */
static void json_string(const uint8_t *s, size_t n, mk_strbuf *out)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *end = s + n;
	mk_strbuf_grow(out, n + 2);
	mk_strbuf_addch(out, '"');
	while (s < end) {
		const uint8_t *run = s;
		while (s < end && !json_esc[*s])
			s++;
		mk_strbuf_add(out, run, (size_t)(s - run));
		if (s == end)
			break;
		switch (*s) {
		case '"': mk_strbuf_add(out, "\\\"", 2); break;
		case '\\': mk_strbuf_add(out, "\\\\", 2); break;
		case '\b': mk_strbuf_add(out, "\\b", 2); break;
		case '\f': mk_strbuf_add(out, "\\f", 2); break;
		case '\n': mk_strbuf_add(out, "\\n", 2); break;
		case '\r': mk_strbuf_add(out, "\\r", 2); break;
		case '\t': mk_strbuf_add(out, "\\t", 2); break;
		default: {
			char b[6] = { '\\', 'u', '0', '0', hex[*s >> 4],
				      hex[*s & 15] };
			mk_strbuf_add(out, b, 6);
		}
		}
		s++;
	}
	mk_strbuf_addch(out, '"');
}

static bool bytes_utf8(mk_bytes b)
{
	return b.len < 0 || utf8_valid(b.ptr, (size_t)b.len);
}

/* "name":value or "name_b64":value; name is "key" or "value". */
static void json_bytes_member(const char *name, mk_bytes b, mk_strbuf *out)
{
	size_t nlen = strlen(name);
	mk_strbuf_addch(out, '"');
	mk_strbuf_add(out, name, nlen);
	if (b.len < 0) {
		mk_strbuf_add(out, "\":null", 6);
	} else if (utf8_valid(b.ptr, (size_t)b.len)) {
		mk_strbuf_add(out, "\":", 2);
		json_string(b.ptr, (size_t)b.len, out);
	} else {
		mk_strbuf_add(out, "_b64\":\"", 7);
		base64(b.ptr, (size_t)b.len, out);
		mk_strbuf_addch(out, '"');
	}
}

static void json_headers(const mk_record_view *rec, bool want_utf8,
			 mk_strbuf *out)
{
	size_t pos = 0;
	mk_header h;
	bool first = true;
	while (mk_header_next(rec, &pos, &h)) {
		bool utf8 = bytes_utf8(h.name) && bytes_utf8(h.value);
		if (utf8 != want_utf8)
			continue;
		if (!first)
			mk_strbuf_addch(out, ',');
		first = false;
		if (want_utf8) {
			json_string(h.name.ptr, (size_t)h.name.len, out);
			mk_strbuf_addch(out, ':');
			if (h.value.len < 0)
				mk_strbuf_addstr(out, "null");
			else
				json_string(h.value.ptr, (size_t)h.value.len,
					    out);
		} else {
			mk_strbuf_addch(out, '"');
			base64(h.name.ptr, (size_t)h.name.len, out);
			mk_strbuf_add(out, "\":", 2);
			if (h.value.len < 0) {
				mk_strbuf_addstr(out, "null");
			} else {
				mk_strbuf_addch(out, '"');
				base64(h.value.ptr, (size_t)h.value.len, out);
				mk_strbuf_addch(out, '"');
			}
		}
	}
}

static bool any_non_utf8_header(const mk_record_view *rec)
{
	size_t pos = 0;
	mk_header h;
	while (mk_header_next(rec, &pos, &h))
		if (!bytes_utf8(h.name) || !bytes_utf8(h.value))
			return true;
	return false;
}

static void format_json(const mk_record_view *rec, const char *lead,
			size_t lead_len, mk_strbuf *out)
{
	char head[64];
	size_t n = 0;
	if (lead_len) {
		mk_strbuf_addch(out, '{');
		mk_strbuf_add(out, lead, lead_len);
		memcpy(head, "\"offset\":", 9);
		n = 9;
	} else {
		memcpy(head, "{\"offset\":", 10);
		n = 10;
	}
	n += put_i64(head + n, rec->offset);
	memcpy(head + n, ",\"timestamp\":", 13);
	n += 13;
	n += put_i64(head + n, rec->timestamp);
	head[n++] = ',';
	mk_strbuf_add(out, head, n);
	json_bytes_member("key", rec->key, out);
	mk_strbuf_addch(out, ',');
	json_bytes_member("value", rec->value, out);
	if (rec->header_count == 0) {
		mk_strbuf_add(out, ",\"headers\":{}}\n", 15);
		return;
	}
	mk_strbuf_addstr(out, ",\"headers\":{");
	json_headers(rec, true, out);
	mk_strbuf_addch(out, '}');
	if (any_non_utf8_header(rec)) {
		mk_strbuf_addstr(out, ",\"headers_b64\":{");
		json_headers(rec, false, out);
		mk_strbuf_addch(out, '}');
	}
	mk_strbuf_add(out, "}\n", 2);
}

/* ---- output ------------------------------------------------------------- */

static void format_tsv(const mk_record_view *rec, const char *lead,
		       size_t lead_len, mk_strbuf *out)
{
	char head[48];
	if (lead_len)
		mk_strbuf_add(out, lead, lead_len);
	size_t n = put_i64(head, rec->offset);
	head[n++] = '\t';
	n += put_i64(head + n, rec->timestamp);
	head[n++] = '\t';
	mk_strbuf_add(out, head, n);
	escape(rec->key, out, false);
	mk_strbuf_addch(out, '\t');
	escape(rec->value, out, false);
	size_t pos = 0;
	mk_header h;
	while (mk_header_next(rec, &pos, &h)) {
		mk_strbuf_addch(out, '\t');
		escape(h.name, out, true);
		mk_strbuf_addch(out, '=');
		escape(h.value, out, false);
	}
	mk_strbuf_addch(out, '\n');
}

void mk_format_record(mk_format format, const mk_record_view *rec,
		      mk_strbuf *out)
{
	switch (format) {
	case MK_FORMAT_TSV:
		format_tsv(rec, NULL, 0, out);
		break;
	case MK_FORMAT_JSON:
		format_json(rec, NULL, 0, out);
		break;
	case MK_FORMAT_PLAIN:
	default:
		if (rec->value.len > 0)
			mk_strbuf_add(out, rec->value.ptr, (size_t)rec->value.len);
		mk_strbuf_addch(out, '\n');
		break;
	}
}

size_t mk_format_records(mk_format format, const mk_batch_view *b,
			 int64_t from, int64_t end, size_t max,
			 mk_strbuf *out, int64_t *next)
{
	mk_format_lines o = { .format = format };
	return mk_format_records_lines(&o, b, from, end, max, out, next);
}

typedef struct {
	mk_format format;
	mk_strbuf *out;
} fetched_ctx;

static size_t format_batch(void *arg, const mk_batch_view *b, int64_t from,
			   int64_t end, size_t max, int64_t *next)
{
	fetched_ctx *ctx = arg;
	return mk_format_records(ctx->format, b, from, end, max, ctx->out, next);
}

size_t mk_format_fetched(mk_format format, const mk_fetched *f, size_t max,
			 int64_t *next, mk_strbuf *out)
{
	fetched_ctx ctx = { format, out };
	return mk_visible_batches(f, max, next, format_batch, &ctx);
}

size_t mk_format_records_lines(const mk_format_lines *o, const mk_batch_view *b,
			       int64_t from, int64_t end, size_t max,
			       mk_strbuf *out, int64_t *next)
{
	if (max == 0 || mk_batch_is_control(b) ||
	    mk_batch_next_offset(b) <= from || b->meta.base_offset >= end)
		return 0;
	mk_format format = o->format;
	bool plain = format != MK_FORMAT_TSV && format != MK_FORMAT_JSON;
	size_t n = 0, len = out->len;
	/* Plain: each record's value and a newline. Values are bytes of the
	 * (decompressed) records, so their length plus a newline each bounds
	 * the output: one grow, then straight copies. */
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, b);
	size_t rbytes = mk_record_iter_bytes(&it);
	if (plain)
		mk_strbuf_grow(out, rbytes + (size_t)b->record_count);
	else
		mk_strbuf_grow(out, rbytes + (size_t)b->record_count *
				    (o->lead_len + 48));
	while (mk_record_next(&it, &rec)) {
		if (rec.offset < from)
			continue;
		if (rec.offset >= end)
			break;
		if (plain) {
			if (rec.value.len > 0) {
				memcpy(out->buf + len, rec.value.ptr,
				       (size_t)rec.value.len);
				len += (size_t)rec.value.len;
			}
			out->buf[len++] = '\n';
		} else {
			if (format == MK_FORMAT_TSV)
				format_tsv(&rec, o->lead, o->lead_len, out);
			else
				format_json(&rec, o->lead, o->lead_len, out);
			len = out->len;
		}
		if (o->marks)
			o->marks[n] = (mk_format_mark){ len, rec.offset };
		*next = rec.offset + 1;
		if (++n == max)
			break;
	}
	mk_record_iter_release(&it);
	if (plain)
		mk_strbuf_setlen(out, len);
	return n;
}

/* ---- batch headers -------------------------------------------------------- */

static const char *control_name(uint16_t flags)
{
	if (flags & MK_BATCH_COMMIT_MARKER)
		return "commit";
	if (flags & MK_BATCH_ABORT_MARKER)
		return "abort";
	return "false";
}

void mk_format_batch(mk_format format, const mk_batch_info *b, mk_strbuf *out)
{
	bool txn = b->flags & MK_BATCH_TRANSACTIONAL;
	const char *control = control_name(b->flags);
	if (format == MK_FORMAT_JSON) {
		mk_strbuf_addf(out,
			"{\"base_offset\":%" PRId64 ",\"last_offset\":%" PRId64
			",\"count\":%" PRId32 ",\"bytes\":%" PRIu32
			",\"file\":\"%020" PRId64 ".log\",\"position\":%" PRIu64
			",\"leader_epoch\":%" PRId32 ",\"producer_id\":%" PRId64
			",\"producer_epoch\":%d,\"base_sequence\":%" PRId32
			",\"transactional\":%s,\"control\":%s%s%s"
			",\"max_timestamp\":%" PRId64 ",\"crc\":\"%08" PRIx32
			"\",\"compresscodec\":\"%s\"}\n",
			b->base_offset, b->last_offset, b->count, b->bytes,
			b->segment, b->position, b->leader_epoch, b->producer_id,
			b->producer_epoch, b->base_sequence, txn ? "true" : "false",
			strcmp(control, "false") ? "\"" : "", control,
			strcmp(control, "false") ? "\"" : "",
			b->max_timestamp, b->crc, mk_compress_name(b->codec));
		return;
	}
	char sep = format == MK_FORMAT_TSV ? '\t' : ' ';
	mk_strbuf_addf(out,
		"%" PRId64 "%c%" PRId64 "%c%" PRId32 "%c%" PRIu32 "%c%020" PRId64
		".log%c%" PRIu64 "%c%" PRId32 "%c%" PRId64 "%c%d%c%" PRId32
		"%c%s%c%s%c%" PRId64 "%c%08" PRIx32 "%c%s\n",
		b->base_offset, sep, b->last_offset, sep, b->count, sep, b->bytes,
		sep, b->segment, sep, b->position, sep, b->leader_epoch, sep,
		b->producer_id, sep, b->producer_epoch, sep, b->base_sequence, sep,
		txn ? "true" : "false", sep, control, sep, b->max_timestamp, sep,
		b->crc, sep, mk_compress_name(b->codec));
}
