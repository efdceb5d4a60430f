/*
 * log_checkpoint.c — the log's files beside its segments and its entries
 * in the log directory's checkpoints (log_checkpoint.h): their texts,
 * their atomic replacement, and the parser of DIR/checkpoint.
 */
#include "log_checkpoint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ckptfile.h"
#include "fileio.h"
#include "log_internal.h"
#include "logdir.h"
#include "parse.h"
#include "xalloc.h"

void mk_log_ckpt_text_init(mk_log_ckpt_text *t)
{
	mk_strbuf_init(&t->segs, 0);
	mk_strbuf_init(&t->epochs, 0);
	t->start = t->recovery_point = 0;
}

void mk_log_ckpt_text_release(mk_log_ckpt_text *t)
{
	mk_strbuf_release(&t->segs);
	mk_strbuf_release(&t->epochs);
}

void mk_log_ckpt_format(const mk_log *log, mk_log_ckpt_text *t)
{
	mk_strbuf *out = &t->segs;
	mk_strbuf_reset(out);
	mk_strbuf_reset(&t->epochs);
	t->start = log->start_offset;
	t->recovery_point = log->recovery_point;
	mk_ckpt_format_epochs(&t->epochs, log->epochs.v, log->epochs.n);
	mk_strbuf_addstr(out, "version 2\n");
	/* The segments below the recovery point: a missing one is damage
	 * (open refuses the log), never a silent gap. */
	bool any = false;
	for (size_t i = 0; i < log->nbases; i++) {
		int64_t b = log->bases[i];
		if (b < log->start_offset && i + 1 < log->nbases &&
		    log->bases[i + 1] <= log->start_offset)
			continue;           /* wholly below the log start */
		if (b >= log->recovery_point)
			break;
		mk_strbuf_addstr(out, any ? " " : "segments ");
		mk_strbuf_addf(out, "%lld", (long long)b);
		any = true;
	}
	if (any)
		mk_strbuf_addch(out, '\n');
}

/* The checkpoint's copy of the segment list is read by the flusher under
 * state_lock. */
void mk_log_ckpt_mirror_bases(mk_log *log)
{
	pthread_mutex_lock(&log->state_lock);
	if (log->bases_cap < log->nsegs) {
		log->bases_cap = log->segs_cap;
		log->bases = mk_xrealloc(log->bases, log->bases_cap * sizeof(*log->bases));
	}
	for (size_t i = 0; i < log->nsegs; i++)
		log->bases[i] = log->segs[i]->base;
	log->nbases = log->nsegs;
	pthread_mutex_unlock(&log->state_lock);
}

/* Replace path with text unless last says it holds exactly that; last
 * follows (emptied on a failure: the file's text is then unknown). */
static mk_err store_file(const char *path, const mk_strbuf *text,
			 mk_strbuf *last, const char *points, mk_strbuf *why)
{
	if (last->len == text->len &&
	    memcmp(last->buf, text->buf, text->len) == 0)
		return MK_OK;
	mk_err err = mk_file_replace_fp(path, text->buf, text->len, points);
	mk_strbuf_reset(last);
	if (err)
		return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: write failed: %s",
				path, strerror(errno));
	mk_strbuf_add(last, text->buf, text->len);
	return MK_OK;
}

/* Under ckpt_lock, state_lock not held (or before the flusher exists):
 * the log's files, then its entries in the log directory's table (the
 * order log_checkpoint.h gives: the table never runs ahead of them). */
mk_err mk_log_ckpt_store(mk_log *log, const mk_log_ckpt_text *t,
			 mk_strbuf *why)
{
	mk_err err = store_file(log->ckpt_path, &t->segs, &log->ckpt_last,
				"log.ckpt", why);
	if (!err)
		err = store_file(log->epochs_path, &t->epochs, &log->epochs_last,
				 "log.epochs", why);
	if (err)
		return err;
	mk_logdir_set(log->logdir, log->topic, log->partition, MK_LOGDIR_START,
		      t->start);
	mk_logdir_set(log->logdir, log->topic, log->partition,
		      MK_LOGDIR_RECOVERY, t->recovery_point);
	return MK_OK;
}

mk_err mk_log_ckpt_write(mk_log *log, bool durable)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_log_ckpt_text text;
	mk_log_ckpt_text_init(&text);
	mk_log_ckpt_mirror_bases(log);
	pthread_mutex_lock(&log->ckpt_lock);
	pthread_mutex_lock(&log->state_lock);
	mk_log_ckpt_format(log, &text);
	pthread_mutex_unlock(&log->state_lock);
	mk_err err = mk_log_ckpt_store(log, &text, &why);
	pthread_mutex_unlock(&log->ckpt_lock);
	mk_log_ckpt_text_release(&text);
	if (!err && durable)
		err = mk_logdir_sync(log->logdir, &why);
	else if (!err)
		mk_logdir_kick(log->logdir);
	if (err) {
		mk_strbuf_reset(&log->err);
		mk_strbuf_add(&log->err, why.buf, why.len);
	}
	mk_strbuf_release(&why);
	return err;
}

mk_err mk_log_ckpt_write_without(mk_log *log, size_t first, size_t n,
				 mk_strbuf *why)
{
	mk_log_ckpt_mirror_bases(log);
	mk_log_ckpt_text text;
	mk_log_ckpt_text_init(&text);
	pthread_mutex_lock(&log->ckpt_lock);
	pthread_mutex_lock(&log->state_lock);
	memmove(log->bases + first, log->bases + first + n,
		(log->nbases - first - n) * sizeof(*log->bases));
	log->nbases -= n;
	mk_log_ckpt_format(log, &text);
	pthread_mutex_unlock(&log->state_lock);
	mk_err err = mk_log_ckpt_store(log, &text, why);
	pthread_mutex_unlock(&log->ckpt_lock);
	mk_log_ckpt_text_release(&text);
	return err;
}

/*
 * A space, then a decimal integer in [lo, hi] (core/base/parse.h) ending at the
 * next space or at the end of the line; *p moves past it.
 */
static bool parse_num(char **p, int64_t lo, int64_t hi, int64_t *out)
{
	char *s = *p;
	if (*s != ' ')
		return false;
	s++;
	char *end = s + strcspn(s, " ");
	char saved = *end;
	*end = '\0';
	bool ok = mk_parse_range(s, lo, hi, out);
	*end = saved;
	if (ok)
		*p = end;
	return ok;
}

/*
 * Whether line is a "KEY N" line for a key not *seen yet; then *seen says
 * whether N is a valid offset (into *out).
 */
static bool offset_line(char *line, const char *key, bool *seen,
			int64_t *out)
{
	size_t k = strlen(key);
	if (*seen || strncmp(line, key, k) != 0 || line[k] != ' ')
		return false;
	char *p = line + k;
	*seen = parse_num(&p, 0, INT64_MAX, out) && !*p;
	return true;
}

/* An "epoch E START" line's numbers (after "epoch"), in order after the
 * entries so far; NULL or the reason it is bad. */
static const char *epoch_line(char *p, mk_log_checkpoint *c, size_t *cap)
{
	int64_t a, b;
	if (!parse_num(&p, 0, INT32_MAX, &a) ||
	    !parse_num(&p, 0, INT64_MAX, &b) || *p)
		return "bad epoch line";
	if (c->nepochs && (a <= c->epochs[c->nepochs - 1].epoch ||
			   b <= c->epochs[c->nepochs - 1].start_offset))
		return "epochs out of order";
	if (c->nepochs == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		c->epochs = mk_xrealloc(c->epochs, *cap * sizeof(*c->epochs));
	}
	c->epochs[c->nepochs++] = (mk_epoch_entry){ (int32_t)a, b };
	return NULL;
}

/* A "segments B..." line's bases (after "segments"), ascending; NULL or
 * the reason it is bad. */
static const char *segments_line(char *p, mk_log_checkpoint *c)
{
	size_t bcap = 0;
	int64_t a;
	while (*p) {
		if (!parse_num(&p, 0, INT64_MAX, &a) ||
		    (c->nbases && a <= c->bases[c->nbases - 1]))
			return "bad segments line";
		if (c->nbases == bcap) {
			bcap = bcap ? bcap * 2 : 16;
			c->bases = mk_xrealloc(c->bases, bcap * sizeof(*c->bases));
		}
		c->bases[c->nbases++] = a;
	}
	return NULL;
}

/* One line after the version's; NULL or the reason it is bad. Version 1
 * alone has the offsets and the epochs. */
static const char *body_line(char *line, mk_log_checkpoint *c, bool *start,
			     bool *rp, size_t *cap)
{
	bool v1 = c->version == 1;
	if (v1 && offset_line(line, "log_start_offset", start, &c->start_offset))
		return *start ? NULL : "bad log_start_offset";
	if (v1 && offset_line(line, "recovery_point", rp, &c->recovery_point))
		return *rp ? NULL : "bad recovery_point";
	if (v1 && !strncmp(line, "epoch ", 6))
		return epoch_line(line + 5, c, cap);
	if (!strncmp(line, "segments ", 9) && !c->nbases)
		return segments_line(line + 8, c);
	return "unknown line";
}

mk_err mk_log_checkpoint_parse(const char *path, char *text,
			       mk_log_checkpoint *c, mk_strbuf *why)
{
	memset(c, 0, sizeof(*c));
	c->start_offset = c->recovery_point = -1;
	bool start = false, rp = false;
	size_t cap = 0;
	int lineno = 0;
	const char *bad = NULL;
	for (char *line = text, *next; line && *line && !bad; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (!next) {
			bad = "missing newline";
			break;
		}
		*next++ = '\0';
		if (c->version)
			bad = body_line(line, c, &start, &rp, &cap);
		else if (!strcmp(line, "version 1") || !strcmp(line, "version 2"))
			c->version = line[8] - '0';
		else
			bad = "unknown version";
	}
	if (!bad && (!c->version || (c->version == 1 && !(start && rp))))
		bad = "missing fields";
	if (bad) {
		mk_why(why, "%s: line %d: %s", path, lineno, bad);
		free(c->epochs);
		free(c->bases);
		memset(c, 0, sizeof(*c));
		return MK_KAFKA_STORAGE_ERROR;
	}
	if (c->version == 2)
		c->start_offset = c->recovery_point = -1;
	return MK_OK;
}

/* The epochs of a log directory's leader-epoch-checkpoint or, without
 * one, of a version-1 checkpoint (NULL, 0 when neither says any). */
static void peek_epochs(const char *dir, mk_epoch_entry **v, size_t *n)
{
	mk_strbuf path = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	bool missing;
	*v = NULL;
	*n = 0;
	mk_strbuf_addf(&path, "%s/" MK_LOG_EPOCHS_NAME, dir);
	if (!mk_file_read(path.buf, &text, &missing) && !missing) {
		(void)mk_ckpt_parse_epochs(path.buf, text.buf, text.len, v, n,
					   NULL);
		goto out;
	}
	mk_strbuf_reset(&path);
	mk_strbuf_reset(&text);
	mk_strbuf_addf(&path, "%s/" MK_LOG_CKPT_NAME, dir);
	mk_log_checkpoint ck;
	if (!mk_file_read(path.buf, &text, &missing) && !missing &&
	    !mk_log_checkpoint_parse(path.buf, text.buf, &ck, NULL)) {
		*v = ck.epochs;
		*n = ck.nepochs;
		free(ck.bases);
	}
out:
	mk_strbuf_release(&path);
	mk_strbuf_release(&text);
}

int32_t mk_log_peek_latest_epoch(const char *dir)
{
	mk_epoch_entry *v;
	size_t n;
	peek_epochs(dir, &v, &n);
	int32_t e = n ? v[n - 1].epoch : -1;
	free(v);
	return e;
}
