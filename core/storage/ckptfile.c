/*
 * ckptfile.c — Kafka's checkpoint text files (ckptfile.h): the version and
 * count lines every one starts with, then the entries of its kind.
 */
#include "ckptfile.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "topic_name.h"
#include "xalloc.h"

/* At most this many fields an entry line is cut into (one more than any
 * format has, to tell a line with too many). */
#define MAX_FIELDS 4

/* An entry format: its fields (shape, for a line without that many) and
 * what takes a line's (NULL, or the reason it is bad). */
typedef struct {
	int nfields;
	const char *shape;
	const char *(*take)(void *arg, char **f);
} entry_format;

/* Cut a line whose fields are one space apart: how many (at most
 * MAX_FIELDS), or -1 when one is empty (two spaces, a space at either
 * end, an empty line). */
static int split(char *line, char **f)
{
	int nf = 0;
	for (char *s = line; nf < MAX_FIELDS;) {
		char *sp = strchr(s, ' ');
		if (sp)
			*sp = '\0';
		if (!*s)
			return -1;
		f[nf++] = s;
		if (!sp)
			break;
		s = sp + 1;
	}
	return nf;
}

/*
 * The version line ("0"), the count line, then exactly that many entry
 * lines, each handed to fn; every line ends in a newline.
 */
static mk_err parse_lines(const char *path, char *text, size_t len,
			  const entry_format *fmt, void *arg, mk_strbuf *why)
{
	char bad[128] = "";
	int lineno = 0;
	int64_t count = -1, seen = 0;
	const char *nul = memchr(text, '\0', len);
	if (nul) {
		/* Never a file this writer made: the lines before it are not
		 * trusted either. */
		int at = 1;
		for (const char *p = text; p < nul; p++)
			at += *p == '\n';
		return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: line %d: NUL byte",
				path, at);
	}
	for (char *line = text; *line && !*bad;) {
		lineno++;
		char *nl = strchr(line, '\n');
		if (!nl) {
			snprintf(bad, sizeof(bad), "missing newline");
			break;
		}
		*nl = '\0';
		if (lineno == 1 && strcmp(line, "0") != 0)
			snprintf(bad, sizeof(bad), "unknown version (Kafka's 0 expected)");
		else if (lineno == 2 && !mk_parse_range(line, 0, INT32_MAX, &count))
			snprintf(bad, sizeof(bad), "bad entry count");
		else if (lineno > 2 && seen == count)
			snprintf(bad, sizeof(bad), "more entries than the count %lld",
				 (long long)count);
		else if (lineno > 2) {
			char *f[MAX_FIELDS];
			int nf = split(line, f);
			const char *r = nf < 0 ? "an empty field"
				      : nf != fmt->nfields ? fmt->shape
				      : fmt->take(arg, f);
			if (r)
				snprintf(bad, sizeof(bad), "%s", r);
			else
				seen++;
		}
		line = nl + 1;
	}
	if (!*bad && lineno == 0)
		snprintf(bad, sizeof(bad), "empty file");
	else if (!*bad && lineno == 1)
		snprintf(bad, sizeof(bad), "missing entry count");
	else if (!*bad && seen < count)
		snprintf(bad, sizeof(bad), "only %lld of the %lld entries the count says",
			 (long long)seen, (long long)count);
	if (!*bad)
		return MK_OK;
	return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: line %d: %s", path,
			lineno ? lineno : 1, bad);
}

/* What a parse gathers: the entries of one format or the other. */
typedef struct {
	mk_ckpt_offset *offsets;
	mk_epoch_entry *epochs;
	size_t n;
} entries;

/* ---- OffsetCheckpointFile: TOPIC PARTITION OFFSET ----------------------- */

static const char *offset_line(void *arg, char **f)
{
	entries *o = arg;
	int64_t pv, ov;
	if (!mk_topic_name_valid(f[0]))
		return "bad topic name";
	if (!mk_parse_range(f[1], 0, INT32_MAX, &pv))
		return "bad partition";
	if (!mk_parse_range(f[2], 0, INT64_MAX, &ov))
		return "bad offset";
	o->offsets = mk_xreallocarray(o->offsets, o->n + 1, sizeof(*o->offsets));
	o->offsets[o->n++] = (mk_ckpt_offset){ mk_xstrdup(f[0]), (int32_t)pv,
						ov };
	return NULL;
}

static const entry_format offset_format = {
	3, "not TOPIC PARTITION OFFSET", offset_line
};

static int cmp_offset(const void *a, const void *b)
{
	const mk_ckpt_offset *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);
	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

mk_err mk_ckpt_parse_offsets(const char *path, char *text, size_t len,
			     mk_ckpt_offset **out, size_t *n, mk_strbuf *why)
{
	entries o = { NULL, NULL, 0 };
	mk_ckpt_offset *v;
	*out = NULL;
	*n = 0;
	mk_err err = parse_lines(path, text, len, &offset_format, &o, why);
	v = o.offsets;
	if (!err && o.n > 1) {
		qsort(v, o.n, sizeof(*v), cmp_offset);
		for (size_t i = 1; i < o.n && !err; i++)
			if (!cmp_offset(&v[i - 1], &v[i]))
				err = mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: %s %d: given twice",
					       path, v[i].topic, (int)v[i].partition);
	}
	if (err) {
		mk_ckpt_offsets_free(v, o.n);
		return err;
	}
	*out = v;
	*n = o.n;
	return MK_OK;
}

void mk_ckpt_offsets_free(mk_ckpt_offset *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].topic);
	free(v);
}

void mk_ckpt_format_offsets(mk_strbuf *out, const mk_ckpt_offset *v,
			    size_t n)
{
	mk_strbuf_addf(out, "0\n%zu\n", n);
	for (size_t i = 0; i < n; i++)
		mk_strbuf_addf(out, "%s %d %lld\n", v[i].topic, (int)v[i].partition,
			       (long long)v[i].offset);
}

/* ---- LeaderEpochCheckpointFile: EPOCH START_OFFSET ---------------------- */

static const char *epoch_line(void *arg, char **f)
{
	entries *e = arg;
	const mk_epoch_entry *prev = e->n ? &e->epochs[e->n - 1] : NULL;
	int64_t a, b;
	if (!mk_parse_range(f[0], 0, INT32_MAX, &a) ||
	    !mk_parse_range(f[1], 0, INT64_MAX, &b))
		return "bad epoch line";
	if (prev && (a <= prev->epoch || b <= prev->start_offset))
		return "epochs out of order";
	e->epochs = mk_xreallocarray(e->epochs, e->n + 1, sizeof(*e->epochs));
	e->epochs[e->n++] = (mk_epoch_entry){ (int32_t)a, b };
	return NULL;
}

static const entry_format epoch_format = {
	2, "not EPOCH START_OFFSET", epoch_line
};

mk_err mk_ckpt_parse_epochs(const char *path, char *text, size_t len,
			    mk_epoch_entry **out, size_t *n, mk_strbuf *why)
{
	entries e = { NULL, NULL, 0 };
	mk_err err = parse_lines(path, text, len, &epoch_format, &e, why);
	if (err) {
		free(e.epochs);
		e.epochs = NULL;
		e.n = 0;
	}
	*out = e.epochs;
	*n = e.n;
	return err;
}

void mk_ckpt_format_epochs(mk_strbuf *out, const mk_epoch_entry *v, size_t n)
{
	mk_strbuf_addf(out, "0\n%zu\n", n);
	for (size_t i = 0; i < n; i++)
		mk_strbuf_addf(out, "%d %lld\n", (int)v[i].epoch,
			       (long long)v[i].start_offset);
}
