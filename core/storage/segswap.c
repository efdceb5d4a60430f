/*
 * segswap.c — the journaled swap of cleaned segments (segswap.h).
 *
 * Journal text: "version 1", then "new BASE" lines, "old BASE" lines, a
 * line "state", and the cleaner state verbatim up to the end of the file.
 */
#include "segswap.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failpoint.h"
#include "fileio.h"
#include "parse.h"

/* A segment's files, the .log first, then its two indexes (segment.h). */
/* (A cleaned segment is staged without a .txnindex: the log writes it
 * after the swap, txnindex.h. An old segment's goes with it, unless the
 * cleaned one takes its base: that one is set right by the same write.) */
#define NSUFFIXES 4
static const char *const suffixes[NSUFFIXES] = {
	".log", ".index", ".timeindex", ".txnindex",
};

static void seg_path(mk_strbuf *out, const char *dir, const char *sub,
		     int64_t base, const char *suffix)
{
	mk_strbuf_reset(out);
	if (sub)
		mk_strbuf_addf(out, "%s/%s/%020lld%s", dir, sub, (long long)base,
			       suffix);
	else
		mk_strbuf_addf(out, "%s/%020lld%s", dir, (long long)base, suffix);
}

/* Delete every file in DIR/cleaned (it holds files only). */
static mk_err clear_staging(const char *dir, mk_strbuf *why)
{
	mk_strbuf p = MK_STRBUF_INIT;
	mk_strbuf_addf(&p, "%s/" MK_SEGSWAP_STAGING, dir);
	DIR *d = opendir(p.buf);
	mk_err err = MK_OK;
	if (!d) {
		if (errno != ENOENT)
			err = mk_io_error(why, p.buf, "cannot list");
		mk_strbuf_release(&p);
		return err;
	}
	size_t base_len = p.len;
	bool any = false;
	struct dirent *de;
	while ((de = readdir(d)) && !err) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		mk_strbuf_setlen(&p, base_len);
		mk_strbuf_addf(&p, "/%s", de->d_name);
		if (unlink(p.buf) && errno != ENOENT)
			err = mk_io_error(why, p.buf, "cannot delete");
		any = true;
	}
	closedir(d);
	mk_strbuf_setlen(&p, base_len);
	if (!err && any && mk_fsync_dir(p.buf))
		err = mk_io_error(why, p.buf, "fsync failed");
	mk_strbuf_release(&p);
	return err;
}

mk_err mk_segswap_prepare(const char *dir, mk_strbuf *out, mk_strbuf *why)
{
	mk_strbuf_reset(out);
	mk_strbuf_addf(out, "%s/" MK_SEGSWAP_STAGING, dir);
	if (mk_mkdirs(out->buf))
		return mk_io_error(why, out->buf, "cannot create");
	return clear_staging(dir, why);
}

/* Apply a committed swap; idempotent (recovery may run it again). */
static mk_err apply(const char *dir, const int64_t *olds, size_t nold,
		    const int64_t *news, size_t nnew, const char *state,
		    size_t state_len, mk_strbuf *why)
{
	mk_strbuf from = MK_STRBUF_INIT, to = MK_STRBUF_INIT;
	mk_err err = MK_OK;
	/* Indexes first, the .log last: a staged .log still present means
	 * this segment is not moved yet. */
	for (size_t i = 0; i < nnew && !err; i++) {
		for (int s = NSUFFIXES - 1; s >= 0 && !err; s--) {
			seg_path(&from, dir, MK_SEGSWAP_STAGING, news[i], suffixes[s]);
			seg_path(&to, dir, NULL, news[i], suffixes[s]);
			if (rename(from.buf, to.buf) && errno != ENOENT)
				err = mk_io_error(why, from.buf, "cannot move");
			if (!err && s == 0 && i == 0)
				MK_FAILPOINT("cleaner.swap.moved-one");
		}
	}
	if (!err)
		MK_FAILPOINT("cleaner.swap.moved");
	for (size_t i = 0; i < nold && !err; i++) {
		bool reused = false;
		for (size_t j = 0; j < nnew; j++)
			reused |= news[j] == olds[i];
		if (reused)
			continue;
		for (int s = 0; s < NSUFFIXES && !err; s++) {
			seg_path(&to, dir, NULL, olds[i], suffixes[s]);
			if (unlink(to.buf) && errno != ENOENT)
				err = mk_io_error(why, to.buf, "cannot delete");
		}
		if (!err && i + 1 < nold)
			MK_FAILPOINT("cleaner.swap.deleted-one");
	}
	if (!err && mk_fsync_dir(dir))
		err = mk_io_error(why, dir, "fsync failed");
	if (!err)
		MK_FAILPOINT("cleaner.swap.deleted");
	if (!err) {
		mk_strbuf_reset(&to);
		mk_strbuf_addf(&to, "%s/" MK_SEGSWAP_STATE, dir);
		if (mk_file_replace(to.buf, state, state_len))
			err = mk_io_error(why, to.buf, "cannot write");
	}
	if (!err)
		MK_FAILPOINT("cleaner.swap.state");
	if (!err) {
		mk_strbuf_reset(&to);
		mk_strbuf_addf(&to, "%s/" MK_SEGSWAP_JOURNAL, dir);
		if (unlink(to.buf) && errno != ENOENT)
			err = mk_io_error(why, to.buf, "cannot delete");
		else if (mk_fsync_dir(dir))
			err = mk_io_error(why, dir, "fsync failed");
	}
	if (!err)
		MK_FAILPOINT("cleaner.swap.done");
	mk_strbuf_release(&from);
	mk_strbuf_release(&to);
	return err;
}

mk_err mk_segswap_commit(const char *dir, const int64_t *olds, size_t nold,
			 const int64_t *news, size_t nnew, const char *state,
			 size_t state_len, mk_strbuf *why)
{
	MK_FAILPOINT("cleaner.swap.staged");
	mk_strbuf text = MK_STRBUF_INIT, path = MK_STRBUF_INIT;
	mk_strbuf_addstr(&text, "version 1\n");
	for (size_t i = 0; i < nnew; i++)
		mk_strbuf_addf(&text, "new %lld\n", (long long)news[i]);
	for (size_t i = 0; i < nold; i++)
		mk_strbuf_addf(&text, "old %lld\n", (long long)olds[i]);
	mk_strbuf_addstr(&text, "state\n");
	mk_strbuf_add(&text, state, state_len);
	mk_strbuf_addf(&path, "%s/" MK_SEGSWAP_JOURNAL, dir);
	mk_err err = MK_OK;
	if (mk_file_replace(path.buf, text.buf, text.len))
		err = mk_io_error(why, path.buf, "cannot write");
	mk_strbuf_release(&text);
	mk_strbuf_release(&path);
	if (err)
		return err;
	MK_FAILPOINT("cleaner.swap.journal");
	return apply(dir, olds, nold, news, nnew, state, state_len, why);
}

static void push(int64_t **v, size_t *n, size_t *cap, int64_t x)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*v = mk_xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = x;
}

mk_err mk_segswap_recover(const char *dir, mk_strbuf *why)
{
	mk_strbuf path = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/" MK_SEGSWAP_JOURNAL, dir);
	bool missing = true;
	mk_err err = MK_OK;
	if (mk_file_read(path.buf, &text, &missing)) {
		err = mk_io_error(why, path.buf, "cannot read");
		goto out;
	}
	if (missing) {
		/* Nothing was committed: whatever is staged is dropped. */
		err = clear_staging(dir, why);
		goto out;
	}
	int64_t *news = NULL, *olds = NULL;
	size_t nnew = 0, nold = 0, capn = 0, capo = 0;
	const char *state = NULL;
	bool ok = !strncmp(text.buf, "version 1\n", 10);
	for (char *line = text.buf + 10, *nl; ok && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl) {
			ok = false;
			break;
		}
		*nl = '\0';
		int64_t v;
		if (!strcmp(line, "state")) {
			state = nl + 1;
			break;
		} else if (!strncmp(line, "new ", 4) && mk_parse_i64(line + 4, &v) &&
			   v >= 0) {
			push(&news, &nnew, &capn, v);
		} else if (!strncmp(line, "old ", 4) && mk_parse_i64(line + 4, &v) &&
			   v >= 0) {
			push(&olds, &nold, &capo, v);
		} else {
			ok = false;
		}
	}
	if (!ok || !state) {
		/* The journal is written atomically: this is outside damage. */
		mk_why(why, "%s: malformed journal", path.buf);
		err = MK_KAFKA_STORAGE_ERROR;
	} else {
		err = apply(dir, olds, nold, news, nnew, state,
			    text.len - (size_t)(state - text.buf), why);
		if (!err)
			err = clear_staging(dir, why);
	}
	free(news);
	free(olds);
out:
	mk_strbuf_release(&path);
	mk_strbuf_release(&text);
	return err;
}
