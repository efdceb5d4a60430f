/*
 * fuzz_names.c — libFuzzer target for the file-name parameter parser
 * (fs/names.c, SPEC section 3).
 *
 * The input, cut at its first NUL and capped at NAME_CAP bytes, is a name.
 * It is checked as it is, and also with "records", "append" and "poll"
 * put in front, so that the flags part is fuzzed without the mutator having to
 * find a base name first. For each name:
 *
 *   - mk_name_classify agrees with a reference (base word, then NUL, '@' or
 *     ':' for records, NUL or ':' for append) and mk_name_has_params is
 *     true exactly for a records/append name with anything after the base;
 *   - mk_name_parse_records / mk_name_parse_append either fail with
 *     MK_INVALID_REQUEST, a reason, and the output untouched (all or
 *     nothing), or succeed with a result in range:
 *       records: pos.kind a known kind with value >= 0, max == -1 or >= 1,
 *                format plain, tsv or json;
 *       append:  acks in {DEFAULT, 0, 1, ALL}, format plain or tsv,
 *                0 <= key_len <= MK_NAME_VALUE_MAX with no ':', '/' or NUL
 *                in the key, producer/txn empty or identifiers of at most
 *                MK_NAME_VALUE_MAX bytes, seq == -1 unless producer is set
 *                and never above INT32_MAX;
 *     a name classified OTHER never parses, and no name parses as both;
 *     parsing with why == NULL gives the same result;
 *   - an accepted name is read again flag by flag by a small reference
 *     reader in this file: every flag known and given once, tsv not with
 *     json, seq= only with producer=, values as SPEC 3 allows (acks 0, 1,
 *     all or -1; numbers plain digits), and each agreeing with the result;
 *   - an accepted name is printed back in a canonical form (and with its
 *     flags in reverse order, and records@earliest spelled out), which must
 *     parse to the same parameters and print identically again;
 *   - an accepted name with a '/' or an empty flag appended, or with its
 *     last flag repeated, is rejected;
 *   - "batches..." (MK_NAME_BATCHES) parses with mk_name_parse_batches
 *     exactly as the same name with "records" in front of its parameters,
 *     except that committed is refused; mk_name_txt_view accepts exactly
 *     the names ending in ":txt" and gives back the rest.
 *
 * Any violation aborts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_names: check failed: %s (line %d)\n", \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

/* Room for values longer than MK_NAME_VALUE_MAX, several of them. */
#define NAME_CAP 600

/* ---- reference classification ------------------------------------------ */

static mk_name_base ref_classify(const char *name)
{
	if (strncmp(name, "records", 7) == 0 &&
	    (name[7] == '\0' || name[7] == '@' || name[7] == ':'))
		return MK_NAME_RECORDS;
	if (strncmp(name, "append", 6) == 0 &&
	    (name[6] == '\0' || name[6] == ':'))
		return MK_NAME_APPEND;
	if (strncmp(name, "poll", 4) == 0 &&
	    (name[4] == '\0' || name[4] == ':'))
		return MK_NAME_POLL;
	if (strncmp(name, "batches", 7) == 0 &&
	    (name[7] == '\0' || name[7] == '@' || name[7] == ':'))
		return MK_NAME_BATCHES;
	return MK_NAME_OTHER;
}

static bool ident_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* A NUL-terminated string in a buffer of MK_NAME_VALUE_MAX + 1. */
static size_t bounded_len(const char *buf)
{
	const char *nul = memchr(buf, '\0', MK_NAME_VALUE_MAX + 1);
	CHECK(nul != NULL);
	return (size_t)(nul - buf);
}

/* ---- records: invariants, canonical form --------------------------------- */

static void check_read_params(const mk_read_params *p)
{
	switch (p->pos.kind) {
	case MK_POS_EARLIEST:
	case MK_POS_LATEST:
		CHECK(p->pos.value == 0);
		break;
	case MK_POS_OFFSET:
	case MK_POS_BACK:
	case MK_POS_TIME:
		CHECK(p->pos.value >= 0);
		break;
	default:
		CHECK(!"pos.kind out of range");
	}
	CHECK(p->max == -1 || p->max >= 1);
	CHECK(p->format == MK_FORMAT_PLAIN || p->format == MK_FORMAT_TSV ||
	      p->format == MK_FORMAT_JSON);
	/* bools hold 0 or 1 (not a stray byte of the sentinel) */
	unsigned char b;
	memcpy(&b, &p->committed, 1);
	CHECK(b <= 1);
	memcpy(&b, &p->follow, 1);
	CHECK(b <= 1);
}

static bool same_read(const mk_read_params *a, const mk_read_params *b)
{
	return a->pos.kind == b->pos.kind && a->pos.value == b->pos.value &&
	       a->format == b->format && a->committed == b->committed &&
	       a->follow == b->follow && a->max == b->max;
}

/*
 * records[@POS][:tsv|:json][:committed][:follow][:max=N]; POS is left out
 * for earliest unless `spell_earliest`; `reverse` prints the flags last
 * to first.
 */
static void print_records(const mk_read_params *p, bool spell_earliest,
			  bool reverse, mk_strbuf *out)
{
	mk_strbuf_reset(out);
	mk_strbuf_addstr(out, "records");
	switch (p->pos.kind) {
	case MK_POS_EARLIEST:
		if (spell_earliest)
			mk_strbuf_addstr(out, "@earliest");
		break;
	case MK_POS_LATEST:
		mk_strbuf_addstr(out, "@latest");
		break;
	case MK_POS_OFFSET:
		mk_strbuf_addf(out, "@%lld", (long long)p->pos.value);
		break;
	case MK_POS_BACK:
		mk_strbuf_addf(out, "@-%lld", (long long)p->pos.value);
		break;
	case MK_POS_TIME:
		mk_strbuf_addf(out, "@ts=%lld", (long long)p->pos.value);
		break;
	}

	char flags[4][32];
	int n = 0;
	if (p->format == MK_FORMAT_TSV)
		strcpy(flags[n++], "tsv");
	else if (p->format == MK_FORMAT_JSON)
		strcpy(flags[n++], "json");
	if (p->committed)
		strcpy(flags[n++], "committed");
	if (p->follow)
		strcpy(flags[n++], "follow");
	if (p->max != -1)
		snprintf(flags[n++], sizeof(flags[0]), "max=%lld",
			 (long long)p->max);
	for (int i = 0; i < n; i++) {
		mk_strbuf_addch(out, ':');
		mk_strbuf_addstr(out, flags[reverse ? n - 1 - i : i]);
	}
}

static void reparse_records(const mk_read_params *p, bool spell_earliest,
			    bool reverse)
{
	mk_strbuf name = MK_STRBUF_INIT, again = MK_STRBUF_INIT;
	mk_strbuf why = MK_STRBUF_INIT;
	print_records(p, spell_earliest, reverse, &name);
	CHECK(mk_name_classify(name.buf) == MK_NAME_RECORDS);
	mk_read_params q;
	memset(&q, 0xa5, sizeof(q));
	mk_err err = mk_name_parse_records(name.buf, &q, &why);
	if (err)
		fprintf(stderr, "fuzz_names: '%s' rejected: %s\n", name.buf,
			why.buf);
	CHECK(err == MK_OK);
	check_read_params(&q);
	CHECK(same_read(p, &q));
	print_records(&q, spell_earliest, reverse, &again);
	CHECK(again.len == name.len && memcmp(again.buf, name.buf, name.len) == 0);
	mk_strbuf_release(&why);
	mk_strbuf_release(&again);
	mk_strbuf_release(&name);
}

/* ---- append: invariants, canonical form ---------------------------------- */

static void check_append_params(const mk_append_params *p)
{
	CHECK(p->acks == MK_ACKS_DEFAULT || p->acks == 0 || p->acks == 1 ||
	      p->acks == MK_ACKS_ALL);
	CHECK(p->format == MK_FORMAT_PLAIN || p->format == MK_FORMAT_TSV);
	unsigned char b;
	memcpy(&b, &p->has_key, 1);
	CHECK(b <= 1);
	CHECK(p->key_len >= 0 && p->key_len <= MK_NAME_VALUE_MAX);
	if (!p->has_key)
		CHECK(p->key_len == 0);
	CHECK(p->key[p->key_len] == '\0');
	for (int i = 0; i < p->key_len; i++)
		CHECK(p->key[i] != '\0' && p->key[i] != ':' && p->key[i] != '/');

	size_t plen = bounded_len(p->producer);
	CHECK(plen == 0 || ident_ok(p->producer));
	size_t tlen = bounded_len(p->txn);
	CHECK(tlen == 0 || ident_ok(p->txn));

	CHECK(p->seq >= -1 && p->seq <= INT32_MAX);
	if (plen == 0)
		CHECK(p->seq == -1);
}

static bool same_append(const mk_append_params *a, const mk_append_params *b)
{
	return a->acks == b->acks && a->format == b->format &&
	       a->has_key == b->has_key && a->key_len == b->key_len &&
	       memcmp(a->key, b->key, (size_t)a->key_len) == 0 &&
	       strcmp(a->producer, b->producer) == 0 && a->seq == b->seq &&
	       strcmp(a->txn, b->txn) == 0;
}

/* append[:tsv][:acks=V][:key=K][:producer=P][:seq=N][:txn=T] */
static void print_append(const mk_append_params *p, bool reverse,
			 mk_strbuf *out)
{
	mk_strbuf flags[6];
	int n = 0;
	for (int i = 0; i < 6; i++)
		mk_strbuf_init(&flags[i], 0);
	if (p->format == MK_FORMAT_TSV)
		mk_strbuf_addstr(&flags[n++], "tsv");
	if (p->acks != MK_ACKS_DEFAULT)
		mk_strbuf_addf(&flags[n++], "acks=%s",
			       p->acks == 0 ? "0" : p->acks == 1 ? "1" : "all");
	if (p->has_key) {
		mk_strbuf_addstr(&flags[n], "key=");
		mk_strbuf_add(&flags[n++], p->key, (size_t)p->key_len);
	}
	if (p->producer[0])
		mk_strbuf_addf(&flags[n++], "producer=%s", p->producer);
	if (p->seq != -1)
		mk_strbuf_addf(&flags[n++], "seq=%lld", (long long)p->seq);
	if (p->txn[0])
		mk_strbuf_addf(&flags[n++], "txn=%s", p->txn);

	mk_strbuf_reset(out);
	mk_strbuf_addstr(out, "append");
	for (int i = 0; i < n; i++) {
		const mk_strbuf *f = &flags[reverse ? n - 1 - i : i];
		mk_strbuf_addch(out, ':');
		mk_strbuf_add(out, f->buf, f->len);
	}
	for (int i = 0; i < 6; i++)
		mk_strbuf_release(&flags[i]);
}

static void reparse_append(const mk_append_params *p, bool reverse)
{
	mk_strbuf name = MK_STRBUF_INIT, again = MK_STRBUF_INIT;
	mk_strbuf why = MK_STRBUF_INIT;
	print_append(p, reverse, &name);
	CHECK(strlen(name.buf) == name.len);
	CHECK(mk_name_classify(name.buf) == MK_NAME_APPEND);
	mk_append_params q;
	memset(&q, 0xa5, sizeof(q));
	mk_err err = mk_name_parse_append(name.buf, &q, &why);
	if (err)
		fprintf(stderr, "fuzz_names: '%s' rejected: %s\n", name.buf,
			why.buf);
	CHECK(err == MK_OK);
	check_append_params(&q);
	CHECK(same_append(p, &q));
	print_append(&q, reverse, &again);
	CHECK(again.len == name.len && memcmp(again.buf, name.buf, name.len) == 0);
	mk_strbuf_release(&why);
	mk_strbuf_release(&again);
	mk_strbuf_release(&name);
}

/*
 * A second reading of an accepted name, flag by flag, straight from SPEC
 * section 3: every part must be a known one, given at most once, and agree
 * with what the parser returned. This catches a parser that accepts too
 * much (acks=2, tsv with json) where the result alone still looks fine.
 */
typedef struct {
	const char *p;
	size_t len;
} part;

static bool part_is(part s, const char *lit)
{
	return s.len == strlen(lit) && memcmp(s.p, lit, s.len) == 0;
}

static bool part_prefix(part s, const char *prefix, part *val)
{
	size_t n = strlen(prefix);
	if (s.len < n || memcmp(s.p, prefix, n) != 0)
		return false;
	*val = (part){ s.p + n, s.len - n };
	return true;
}

/* Non-empty decimal digits fitting int64, at most MK_NAME_VALUE_MAX. */
static bool ref_decimal(part s, int64_t *out)
{
	if (s.len == 0 || s.len > MK_NAME_VALUE_MAX)
		return false;
	int64_t v = 0;
	for (size_t i = 0; i < s.len; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return false;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, s.p[i] - '0', &v))
			return false;
	}
	*out = v;
	return true;
}

/* The next ':'-separated part of *s (which starts at a ':'). */
static part next_flag(const char **s)
{
	const char *start = *s + 1;
	const char *end = strchr(start, ':');
	if (!end)
		end = start + strlen(start);
	*s = end;
	return (part){ start, (size_t)(end - start) };
}

static void ref_records(const char *name, const mk_read_params *p)
{
	const char *s = name + 7;
	int64_t n;
	part val;

	if (*s == '@') {
		part pos = next_flag(&s);
		CHECK(pos.len >= 1 && pos.len <= MK_NAME_VALUE_MAX);
		switch (p->pos.kind) {
		case MK_POS_EARLIEST:
			CHECK(part_is(pos, "earliest"));
			break;
		case MK_POS_LATEST:
			CHECK(part_is(pos, "latest"));
			break;
		case MK_POS_OFFSET:
			CHECK(ref_decimal(pos, &n) && n == p->pos.value);
			break;
		case MK_POS_BACK:
			CHECK(pos.p[0] == '-');
			CHECK(ref_decimal((part){ pos.p + 1, pos.len - 1 }, &n) &&
			      n == p->pos.value);
			break;
		case MK_POS_TIME:
			CHECK(part_prefix(pos, "ts=", &val));
			CHECK(ref_decimal(val, &n) && n == p->pos.value);
			break;
		}
	} else {
		CHECK(p->pos.kind == MK_POS_EARLIEST);
	}

	int tsv = 0, json = 0, committed = 0, follow = 0, max = 0;
	while (*s) {
		CHECK(*s == ':');
		part f = next_flag(&s);
		if (part_is(f, "tsv")) {
			tsv++;
		} else if (part_is(f, "json")) {
			json++;
		} else if (part_is(f, "committed")) {
			committed++;
		} else if (part_is(f, "follow")) {
			follow++;
		} else if (part_prefix(f, "max=", &val)) {
			max++;
			CHECK(ref_decimal(val, &n) && n >= 1 && n == p->max);
		} else {
			fprintf(stderr, "fuzz_names: flag '%.*s' accepted\n",
				(int)f.len, f.p);
			CHECK(!"unknown records flag accepted");
		}
	}
	CHECK(tsv <= 1 && json <= 1 && committed <= 1 && follow <= 1 &&
	      max <= 1);
	CHECK(!(tsv && json));
	CHECK(p->format == (tsv ? MK_FORMAT_TSV :
			    json ? MK_FORMAT_JSON : MK_FORMAT_PLAIN));
	CHECK(p->committed == (committed == 1));
	CHECK(p->follow == (follow == 1));
	CHECK((p->max == -1) == (max == 0));
}

static void ref_append(const char *name, const mk_append_params *p)
{
	const char *s = name + 6;
	int tsv = 0, acks = 0, key = 0, producer = 0, seq = 0, txn = 0;
	int64_t n;
	part val;

	while (*s) {
		CHECK(*s == ':');
		part f = next_flag(&s);
		if (part_is(f, "tsv")) {
			tsv++;
		} else if (part_prefix(f, "acks=", &val)) {
			acks++;
			if (part_is(val, "0") || part_is(val, "1"))
				CHECK(p->acks == val.p[0] - '0');
			else if (part_is(val, "all") || part_is(val, "-1"))
				CHECK(p->acks == MK_ACKS_ALL);
			else
				CHECK(!"bad acks value accepted");
		} else if (part_prefix(f, "key=", &val)) {
			key++;
			CHECK(val.len <= MK_NAME_VALUE_MAX);
			CHECK(p->has_key && (size_t)p->key_len == val.len &&
			      memcmp(p->key, val.p, val.len) == 0);
		} else if (part_prefix(f, "producer=", &val)) {
			producer++;
			CHECK(strlen(p->producer) == val.len &&
			      memcmp(p->producer, val.p, val.len) == 0);
		} else if (part_prefix(f, "seq=", &val)) {
			seq++;
			CHECK(ref_decimal(val, &n) && n <= INT32_MAX &&
			      n == p->seq);
		} else if (part_prefix(f, "txn=", &val)) {
			txn++;
			CHECK(strlen(p->txn) == val.len &&
			      memcmp(p->txn, val.p, val.len) == 0);
		} else {
			fprintf(stderr, "fuzz_names: flag '%.*s' accepted\n",
				(int)f.len, f.p);
			CHECK(!"unknown append flag accepted");
		}
	}
	CHECK(tsv <= 1 && acks <= 1 && key <= 1 && producer <= 1 && seq <= 1 &&
	      txn <= 1);
	CHECK(!seq || producer);
	CHECK(p->format == (tsv ? MK_FORMAT_TSV : MK_FORMAT_PLAIN));
	CHECK(acks || p->acks == MK_ACKS_DEFAULT);
	CHECK(p->has_key == (key == 1));
	CHECK(producer || p->producer[0] == '\0');
	CHECK(seq || p->seq == -1);
	CHECK(txn || p->txn[0] == '\0');
}

/* ---- names derived from an accepted one ---------------------------------- */

static bool parses(const char *name)
{
	mk_read_params rp;
	mk_append_params ap;
	mk_name_base base = mk_name_classify(name);
	if (base == MK_NAME_RECORDS)
		return mk_name_parse_records(name, &rp, NULL) == MK_OK;
	if (base == MK_NAME_APPEND)
		return mk_name_parse_append(name, &ap, NULL) == MK_OK;
	return false;
}

/* `name` was accepted: these variations of it must not be. */
static void check_spoiled(const char *name)
{
	size_t len = strlen(name);
	char *buf = malloc(2 * len + 2);
	CHECK(buf != NULL);

	memcpy(buf, name, len);
	strcpy(buf + len, "/");
	CHECK(!parses(buf));
	strcpy(buf + len, ":");
	CHECK(!parses(buf));

	/* the last flag again (values never hold ':', so this is the flag) */
	const char *last = strrchr(name, ':');
	if (last) {
		size_t flen = len - (size_t)(last - name);
		memcpy(buf + len, last, flen);
		buf[len + flen] = '\0';
		CHECK(!parses(buf));
	}
	free(buf);
}

/* ---- one name ------------------------------------------------------------- */

static void check_name(const char *name)
{
	mk_name_base base = mk_name_classify(name);
	CHECK(base == MK_NAME_OTHER || base == MK_NAME_RECORDS ||
	      base == MK_NAME_APPEND || base == MK_NAME_POLL ||
	      base == MK_NAME_BATCHES);
	CHECK(base == ref_classify(name));
	bool has = mk_name_has_params(name);
	if (base == MK_NAME_OTHER)
		CHECK(!has);
	else
		CHECK(has == (name[base == MK_NAME_RECORDS || base == MK_NAME_BATCHES ? 7 :
				   base == MK_NAME_APPEND ? 6 : 4] != '\0'));

	/* poll: the flags of records, no position, all or nothing */
	mk_read_params pp, psent;
	memset(&pp, 0x5a, sizeof(pp));
	psent = pp;
	mk_err perr = mk_name_parse_poll(name, &pp, NULL);
	if (perr) {
		CHECK(perr == MK_INVALID_REQUEST);
		CHECK(memcmp(&pp, &psent, sizeof(pp)) == 0);
	} else {
		CHECK(base == MK_NAME_POLL);
		CHECK(strchr(name, '/') == NULL && strchr(name, '@') == NULL);
		check_read_params(&pp);
		CHECK(pp.pos.kind == MK_POS_EARLIEST);
	}

	/* batches: the records grammar under another base, no committed */
	{
		mk_read_params bp, rp0;
		mk_err berr = mk_name_parse_batches(name, &bp, NULL);
		if (base != MK_NAME_BATCHES) {
			CHECK(berr == MK_INVALID_REQUEST);
		} else {
			size_t n = strlen(name);
			char *as_records = malloc(n + 1);
			CHECK(as_records != NULL);
			memcpy(as_records, "records", 7);
			memcpy(as_records + 7, name + 7, n - 7 + 1);
			mk_err rerr0 = mk_name_parse_records(as_records, &rp0, NULL);
			if (rerr0 || rp0.committed) {
				CHECK(berr == MK_INVALID_REQUEST);
			} else {
				CHECK(berr == MK_OK);
				CHECK(same_read(&bp, &rp0));
			}
			free(as_records);
		}
		char txt[NAME_CAP + 32];
		size_t n = strlen(name);
		bool is_txt = n > 4 && strcmp(name + n - 4, ":txt") == 0 &&
			      n - 4 < sizeof(txt);
		CHECK(mk_name_txt_view(name, txt, sizeof(txt)) == is_txt);
		if (is_txt)
			CHECK(strlen(txt) == n - 4 && !memcmp(txt, name, n - 4));
	}

	/* records */
	mk_read_params rp, rsent;
	mk_strbuf why = MK_STRBUF_INIT;
	memset(&rp, 0x5a, sizeof(rp));
	rsent = rp;
	mk_err rerr = mk_name_parse_records(name, &rp, &why);
	if (rerr) {
		CHECK(rerr == MK_INVALID_REQUEST);
		CHECK(why.len > 0);
		CHECK(memcmp(&rp, &rsent, sizeof(rp)) == 0);
	} else {
		CHECK(base == MK_NAME_RECORDS);
		CHECK(strchr(name, '/') == NULL);
		check_read_params(&rp);
		ref_records(name, &rp);
		if (!has) {
			mk_read_params def = { { MK_POS_EARLIEST, 0 },
					       MK_FORMAT_PLAIN, false, false,
					       -1 };
			CHECK(same_read(&rp, &def));
		}
	}
	mk_read_params rp2;
	memset(&rp2, 0x5a, sizeof(rp2));
	CHECK(mk_name_parse_records(name, &rp2, NULL) == rerr);
	if (!rerr) {
		CHECK(same_read(&rp, &rp2));
		for (int v = 0; v < 4; v++)
			reparse_records(&rp, v & 1, v & 2);
		check_spoiled(name);
	}

	/* append */
	mk_append_params ap, asent;
	mk_strbuf_reset(&why);
	memset(&ap, 0x5a, sizeof(ap));
	asent = ap;
	mk_err aerr = mk_name_parse_append(name, &ap, &why);
	if (aerr) {
		CHECK(aerr == MK_INVALID_REQUEST);
		CHECK(why.len > 0);
		CHECK(memcmp(&ap, &asent, sizeof(ap)) == 0);
	} else {
		CHECK(base == MK_NAME_APPEND);
		CHECK(strchr(name, '/') == NULL);
		check_append_params(&ap);
		ref_append(name, &ap);
		if (!has) {
			CHECK(ap.acks == MK_ACKS_DEFAULT &&
			      ap.format == MK_FORMAT_PLAIN && !ap.has_key &&
			      ap.producer[0] == '\0' && ap.seq == -1 &&
			      ap.txn[0] == '\0');
		}
	}
	mk_append_params ap2;
	memset(&ap2, 0x5a, sizeof(ap2));
	CHECK(mk_name_parse_append(name, &ap2, NULL) == aerr);
	if (!aerr) {
		CHECK(same_append(&ap, &ap2));
		reparse_append(&ap, false);
		reparse_append(&ap, true);
		check_spoiled(name);
	}

	CHECK(rerr != MK_OK || aerr != MK_OK);
	mk_strbuf_release(&why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const prefixes[] = { "", "records", "append", "poll",
						"batches" };
	char name[16 + NAME_CAP + 1];

	/* the name ends at the first NUL, or at NAME_CAP bytes */
	size_t len = size < NAME_CAP ? size : NAME_CAP;
	const uint8_t *nul = memchr(data, '\0', len);
	if (nul)
		len = (size_t)(nul - data);

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t plen = strlen(prefixes[i]);
		memcpy(name, prefixes[i], plen);
		memcpy(name + plen, data, len);
		name[plen + len] = '\0';
		check_name(name);
	}
	return 0;
}
