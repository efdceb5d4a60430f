/*
 * log_checkpoint.c — the log's checkpoint file (log_checkpoint.h): its
 * text, its atomic replacement and its parser.
 */
#include "log_checkpoint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log_internal.h"
#include "parse.h"
#include "xalloc.h"

void mk_log_ckpt_format(const mk_log *log, mk_strbuf *out)
{
	mk_strbuf_addf(out, "version 1\nlog_start_offset %lld\n"
		       "recovery_point %lld\n", (long long)log->start_offset,
		       (long long)log->recovery_point);
	for (size_t i = 0; i < log->epochs.n; i++)
		mk_strbuf_addf(out, "epoch %d %lld\n", (int)log->epochs.v[i].epoch,
			       (long long)log->epochs.v[i].start_offset);
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

/* Under ckpt_lock, state_lock not held (or before the flusher exists):
 * replace the checkpoint with text (mk_log_ckpt_format's, made under state_lock
 * after ckpt_lock was taken, so writes land in the order of the states
 * they show), unless it already says exactly this (a close or flush with
 * nothing new then costs no fsync). Takes text. */
mk_err mk_log_ckpt_store(mk_log *log, mk_strbuf *text_in, mk_strbuf *why)
{
	mk_strbuf text = *text_in;
	*text_in = (mk_strbuf)MK_STRBUF_INIT;
	if (log->ckpt_last.len == text.len &&
	    memcmp(log->ckpt_last.buf, text.buf, text.len) == 0) {
		mk_strbuf_release(&text);
		return MK_OK;
	}
	mk_err err = mk_file_replace_fp(log->ckpt_path, text.buf, text.len,
					"log.ckpt");
	mk_strbuf_reset(&log->ckpt_last);
	if (!err)
		mk_strbuf_add(&log->ckpt_last, text.buf, text.len);
	mk_strbuf_release(&text);
	if (err)
		mk_strbuf_addf(why, "%s: write failed: %s", log->ckpt_path,
			       strerror(errno));
	return err ? MK_KAFKA_STORAGE_ERROR : MK_OK;
}

mk_err mk_log_ckpt_write(mk_log *log)
{
	mk_strbuf why = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_log_ckpt_mirror_bases(log);
	pthread_mutex_lock(&log->ckpt_lock);
	pthread_mutex_lock(&log->state_lock);
	mk_log_ckpt_format(log, &text);
	pthread_mutex_unlock(&log->state_lock);
	mk_err err = mk_log_ckpt_store(log, &text, &why);
	pthread_mutex_unlock(&log->ckpt_lock);
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
	mk_strbuf text = MK_STRBUF_INIT;
	pthread_mutex_lock(&log->ckpt_lock);
	pthread_mutex_lock(&log->state_lock);
	memmove(log->bases + first, log->bases + first + n,
		(log->nbases - first - n) * sizeof(*log->bases));
	log->nbases -= n;
	mk_log_ckpt_format(log, &text);
	pthread_mutex_unlock(&log->state_lock);
	mk_err err = mk_log_ckpt_store(log, &text, why);
	pthread_mutex_unlock(&log->ckpt_lock);
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

mk_err mk_log_checkpoint_parse(const char *path, char *text,
			       mk_log_checkpoint *c, mk_strbuf *why)
{
	memset(c, 0, sizeof(*c));
	bool version = false, start = false, rp = false;
	size_t cap = 0;
	int lineno = 0;
	const char *bad = NULL;
	for (char *line = text, *next; line && *line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (!next) {
			bad = "missing newline";
			break;
		}
		*next++ = '\0';
		char *p = line;
		int64_t a, b;
		if (!version) {
			if (strcmp(line, "version 1") != 0) {
				bad = "unknown version";
				break;
			}
			version = true;
		} else if (offset_line(line, "log_start_offset", &start,
				       &c->start_offset)) {
			if (!start) {
				bad = "bad log_start_offset";
				break;
			}
		} else if (offset_line(line, "recovery_point", &rp,
				       &c->recovery_point)) {
			if (!rp) {
				bad = "bad recovery_point";
				break;
			}
		} else if (!strncmp(line, "epoch ", 6)) {
			p += 5;
			if (!parse_num(&p, 0, INT32_MAX, &a) ||
			    !parse_num(&p, 0, INT64_MAX, &b) || *p) {
				bad = "bad epoch line";
				break;
			}
			if (c->nepochs &&
			    (a <= c->epochs[c->nepochs - 1].epoch ||
			     b <= c->epochs[c->nepochs - 1].start_offset)) {
				bad = "epochs out of order";
				break;
			}
			if (c->nepochs == cap) {
				cap = cap ? cap * 2 : 8;
				c->epochs = mk_xrealloc(c->epochs,
						    cap * sizeof(*c->epochs));
			}
			c->epochs[c->nepochs++] =
				(mk_epoch_entry){ (int32_t)a, b };
		} else if (!strncmp(line, "segments ", 9) && !c->nbases) {
			p += 8;
			size_t bcap = 0;
			while (*p && !bad) {
				if (!parse_num(&p, 0, INT64_MAX, &a) ||
				    (c->nbases && a <= c->bases[c->nbases - 1])) {
					bad = "bad segments line";
					break;
				}
				if (c->nbases == bcap) {
					bcap = bcap ? bcap * 2 : 16;
					c->bases = mk_xrealloc(c->bases, bcap * sizeof(*c->bases));
				}
				c->bases[c->nbases++] = a;
			}
			if (bad)
				break;
		} else {
			bad = "unknown line";
			break;
		}
	}
	if (!bad && !(version && start && rp))
		bad = "missing fields";
	if (bad) {
		mk_why(why, "%s: line %d: %s", path, lineno, bad);
		free(c->epochs);
		c->epochs = NULL;
		c->nepochs = 0;
		free(c->bases);
		c->bases = NULL;
		c->nbases = 0;
		return MK_KAFKA_STORAGE_ERROR;
	}
	return MK_OK;
}


int32_t mk_log_peek_latest_epoch(const char *dir)
{
	mk_strbuf path = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/" MK_LOG_CKPT_NAME, dir);
	bool missing;
	mk_log_checkpoint ck;
	int32_t e = -1;
	if (!mk_file_read(path.buf, &text, &missing) && !missing &&
	    !mk_log_checkpoint_parse(path.buf, text.buf, &ck, NULL)) {
		if (ck.nepochs)
			e = ck.epochs[ck.nepochs - 1].epoch;
		free(ck.epochs);
		free(ck.bases);
	}
	mk_strbuf_release(&path);
	mk_strbuf_release(&text);
	return e;
}
