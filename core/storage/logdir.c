/*
 * logdir.c — a broker's log directory and its three offset checkpoint
 * files (logdir.h): the registry of objects, the table, the group-commit
 * writer and the pool's task.
 */
#include "logdir.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckptfile.h"
#include "fileio.h"
#include "flushpool.h"
#include "parse.h"
#include "topic_name.h"
#include "xalloc.h"

const char *const mk_logdir_names[MK_LOGDIR_NFILES] = {
	[MK_LOGDIR_HW] = "replication-offset-checkpoint",
	[MK_LOGDIR_START] = "log-start-offset-checkpoint",
	[MK_LOGDIR_RECOVERY] = "recovery-point-offset-checkpoint",
};

/* Crash points of each file's replacement (fileio.h). */
static const char *const prefixes[MK_LOGDIR_NFILES] = {
	[MK_LOGDIR_HW] = "logdir.high-watermark",
	[MK_LOGDIR_START] = "logdir.log-start",
	[MK_LOGDIR_RECOVERY] = "logdir.recovery-point",
};

/* What a file without entries says: a missing file says the same. */
#define EMPTY_TEXT "0\n0\n"

typedef struct {
	char *topic;
	int32_t partition;
	int64_t val[MK_LOGDIR_NFILES];   /* -1: none */
} entry;

struct mk_logdir {
	char *dir;                      /* canonical (realpath) */
	char *path[MK_LOGDIR_NFILES];
	int refs;                       /* under the registry lock */
	struct mk_logdir *next;         /* the registry's list */
	pthread_mutex_t lock;           /* all below */
	pthread_cond_t cond;            /* a write ended */
	entry *v;                       /* sorted by topic, partition */
	size_t n, cap;
	uint64_t version;               /* changes of the table */
	uint64_t written;               /* the version on disk */
	bool writing;                   /* one writer at a time */
	mk_strbuf last[MK_LOGDIR_NFILES];   /* what each file holds */
	struct mk_flush_pool *pool;     /* runs task; NULL: kicks write (set
					 * once, by the first acquire given
					 * one) */
	mk_flush_task task;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static mk_logdir *registry;

/* ---- the table ------------------------------------------------------------ */

static int key_cmp(const entry *e, const char *topic, int32_t partition)
{
	int c = strcmp(e->topic, topic);
	return c ? c : (e->partition > partition) - (e->partition < partition);
}

/* The index of the first entry not below the key. Under ld->lock. */
static size_t find(const mk_logdir *ld, const char *topic, int32_t partition)
{
	size_t lo = 0, hi = ld->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (key_cmp(&ld->v[mid], topic, partition) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entry of the key, made (no value) when missing. Under ld->lock. */
static entry *entry_of(mk_logdir *ld, const char *topic, int32_t partition)
{
	size_t i = find(ld, topic, partition);
	if (i < ld->n && !key_cmp(&ld->v[i], topic, partition))
		return &ld->v[i];
	if (ld->n == ld->cap) {
		ld->cap = ld->cap ? ld->cap * 2 : 16;
		ld->v = mk_xrealloc(ld->v, ld->cap * sizeof(*ld->v));
	}
	memmove(ld->v + i + 1, ld->v + i, (ld->n - i) * sizeof(*ld->v));
	ld->n++;
	ld->v[i] = (entry){ mk_xstrdup(topic), partition, { -1, -1, -1 } };
	return &ld->v[i];
}

/* One file's text from the table. Under ld->lock. */
static void format_file(const mk_logdir *ld, int file, mk_strbuf *out)
{
	size_t n = 0;
	for (size_t i = 0; i < ld->n; i++)
		n += ld->v[i].val[file] >= 0;
	mk_ckpt_offset *v = mk_xcalloc(n ? n : 1, sizeof(*v));
	n = 0;
	for (size_t i = 0; i < ld->n; i++)
		if (ld->v[i].val[file] >= 0)
			v[n++] = (mk_ckpt_offset){ ld->v[i].topic,
						    ld->v[i].partition,
						    ld->v[i].val[file] };
	mk_ckpt_format_offsets(out, v, n);
	free(v);
}

bool mk_logdir_get(mk_logdir *ld, const char *topic, int32_t partition,
		   int file, int64_t *value)
{
	pthread_mutex_lock(&ld->lock);
	size_t i = find(ld, topic, partition);
	bool found = i < ld->n && !key_cmp(&ld->v[i], topic, partition) &&
		     ld->v[i].val[file] >= 0;
	if (found)
		*value = ld->v[i].val[file];
	pthread_mutex_unlock(&ld->lock);
	return found;
}

void mk_logdir_set(mk_logdir *ld, const char *topic, int32_t partition,
		   int file, int64_t value)
{
	pthread_mutex_lock(&ld->lock);
	entry *e = entry_of(ld, topic, partition);
	if (e->val[file] != value) {
		e->val[file] = value;
		ld->version++;
	}
	pthread_mutex_unlock(&ld->lock);
}

bool mk_logdir_forget(mk_logdir *ld, const char *topic, int32_t partition)
{
	pthread_mutex_lock(&ld->lock);
	size_t i = find(ld, topic, partition);
	bool had = false;
	if (i < ld->n && !key_cmp(&ld->v[i], topic, partition)) {
		for (int f = 0; f < MK_LOGDIR_NFILES; f++)
			had |= ld->v[i].val[f] >= 0;
		free(ld->v[i].topic);
		memmove(ld->v + i, ld->v + i + 1, (ld->n - i - 1) * sizeof(*ld->v));
		ld->n--;
		if (had)
			ld->version++;
	}
	pthread_mutex_unlock(&ld->lock);
	return had;
}

const char *mk_logdir_path(const mk_logdir *ld, int file)
{
	return ld->path[file];
}

/* ---- writing ---------------------------------------------------------------- */

/*
 * Under ld->lock, which it drops while writing, with no other writer: the
 * files whose text changed, until the table's latest version is on disk
 * or a write fails. The one writer meanwhile (`writing`).
 */
static mk_err write_due(mk_logdir *ld, mk_strbuf *why)
{
	mk_err err = MK_OK;
	ld->writing = true;
	while (!err && ld->written < ld->version) {
		uint64_t v = ld->version;
		mk_strbuf text[MK_LOGDIR_NFILES];
		bool change[MK_LOGDIR_NFILES], done[MK_LOGDIR_NFILES] = { false };
		for (int f = 0; f < MK_LOGDIR_NFILES; f++) {
			mk_strbuf_init(&text[f], 0);
			format_file(ld, f, &text[f]);
			change[f] = text[f].len != ld->last[f].len ||
				    memcmp(text[f].buf, ld->last[f].buf, text[f].len);
		}
		pthread_mutex_unlock(&ld->lock);
		for (int f = 0; f < MK_LOGDIR_NFILES && !err; f++) {
			if (!change[f])
				continue;
			if (mk_file_replace_fp(ld->path[f], text[f].buf, text[f].len,
					       prefixes[f]))
				err = mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: write failed: %s",
					       ld->path[f], strerror(errno));
			else
				done[f] = true;
		}
		pthread_mutex_lock(&ld->lock);
		for (int f = 0; f < MK_LOGDIR_NFILES; f++) {
			if (done[f]) {
				mk_strbuf tmp = ld->last[f];
				ld->last[f] = text[f];
				text[f] = tmp;
			}
			mk_strbuf_release(&text[f]);
		}
		if (!err)
			ld->written = v;
	}
	ld->writing = false;
	pthread_cond_broadcast(&ld->cond);
	return err;
}

mk_err mk_logdir_sync(mk_logdir *ld, mk_strbuf *why)
{
	mk_err err = MK_OK;
	pthread_mutex_lock(&ld->lock);
	uint64_t target = ld->version;
	while (ld->written < target) {
		if (ld->writing) {
			pthread_cond_wait(&ld->cond, &ld->lock);
			continue;
		}
		err = write_due(ld, why);
		break;
	}
	pthread_mutex_unlock(&ld->lock);
	return err;
}

/* The pool's task: what is due, unless a writer is at it already (it
 * loops until the latest version is written). */
static void logdir_run(mk_flush_task *t)
{
	mk_logdir *ld = (mk_logdir *)((char *)t - offsetof(mk_logdir, task));
	pthread_mutex_lock(&ld->lock);
	if (!ld->writing && ld->written < ld->version)
		(void)write_due(ld, NULL);   /* retried by the next write */
	pthread_mutex_unlock(&ld->lock);
}

void mk_logdir_kick(mk_logdir *ld)
{
	pthread_mutex_lock(&ld->lock);
	struct mk_flush_pool *pool = ld->pool;
	pthread_mutex_unlock(&ld->lock);
	if (pool)
		mk_flush_pool_submit(pool, &ld->task);
	else
		(void)mk_logdir_sync(ld, NULL);
}

mk_err mk_logdir_sync_all(mk_strbuf *why)
{
	pthread_mutex_lock(&registry_lock);
	size_t n = 0;
	for (mk_logdir *ld = registry; ld; ld = ld->next)
		n++;
	mk_logdir **all = mk_xcalloc(n ? n : 1, sizeof(*all));
	n = 0;
	for (mk_logdir *ld = registry; ld; ld = ld->next) {
		ld->refs++;
		all[n++] = ld;
	}
	pthread_mutex_unlock(&registry_lock);
	mk_err first = MK_OK;
	for (size_t i = 0; i < n; i++) {
		mk_err err = mk_logdir_sync(all[i], first ? NULL : why);
		if (err && !first)
			first = err;
		mk_logdir_release(all[i], true);
	}
	free(all);
	return first;
}

/* ---- lifetime ----------------------------------------------------------------- */

static void logdir_free(mk_logdir *ld)
{
	for (size_t i = 0; i < ld->n; i++)
		free(ld->v[i].topic);
	free(ld->v);
	for (int f = 0; f < MK_LOGDIR_NFILES; f++) {
		free(ld->path[f]);
		mk_strbuf_release(&ld->last[f]);
	}
	pthread_mutex_destroy(&ld->lock);
	pthread_cond_destroy(&ld->cond);
	free(ld->dir);
	free(ld);
}

/* Read one file into the table (a missing one holds nothing); a stale
 * temporary file of it (a write killed before its rename) goes. */
static mk_err read_file(mk_logdir *ld, int f, mk_strbuf *why)
{
	mk_strbuf tmp = MK_STRBUF_INIT;
	mk_strbuf_addf(&tmp, "%s.tmp", ld->path[f]);
	(void)unlink(tmp.buf);
	mk_strbuf_release(&tmp);
	bool missing;
	mk_strbuf *text = &ld->last[f];
	if (mk_file_read(ld->path[f], text, &missing))
		return mk_io_error(why, ld->path[f], "read failed");
	if (missing) {
		mk_strbuf_addstr(text, EMPTY_TEXT);
		return MK_OK;
	}
	char *copy = mk_xmalloc(text->len + 1);
	memcpy(copy, text->buf, text->len + 1);
	mk_ckpt_offset *v;
	size_t n;
	mk_err err = mk_ckpt_parse_offsets(ld->path[f], copy, text->len, &v, &n,
					   why);
	free(copy);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		entry_of(ld, v[i].topic, v[i].partition)->val[f] = v[i].offset;
	mk_ckpt_offsets_free(v, n);
	return MK_OK;
}

static mk_err logdir_new(const char *canon, mk_logdir **out, mk_strbuf *why)
{
	mk_logdir *ld = mk_xcalloc(1, sizeof(*ld));
	ld->dir = mk_xstrdup(canon);
	pthread_mutex_init(&ld->lock, NULL);
	pthread_cond_init(&ld->cond, NULL);
	ld->task.run = logdir_run;
	mk_err err = MK_OK;
	for (int f = 0; f < MK_LOGDIR_NFILES; f++) {
		mk_strbuf p = MK_STRBUF_INIT;
		mk_strbuf_addf(&p, "%s/%s", canon, mk_logdir_names[f]);
		ld->path[f] = mk_strbuf_detach(&p, NULL);
		mk_strbuf_init(&ld->last[f], 0);
	}
	for (int f = 0; f < MK_LOGDIR_NFILES && !err; f++)
		err = read_file(ld, f, why);
	if (err) {
		logdir_free(ld);
		return err;
	}
	*out = ld;
	return MK_OK;
}

mk_err mk_logdir_acquire(const char *dir, struct mk_flush_pool *pool,
			 mk_logdir **out, mk_strbuf *why)
{
	*out = NULL;
	char canon[PATH_MAX];
	if (!realpath(dir, canon))
		return mk_io_error(why, dir, "cannot resolve");
	pthread_mutex_lock(&registry_lock);
	mk_logdir *ld = registry;
	while (ld && strcmp(ld->dir, canon) != 0)
		ld = ld->next;
	mk_err err = MK_OK;
	if (!ld && !(err = logdir_new(canon, &ld, why))) {
		ld->next = registry;
		registry = ld;
	}
	if (ld) {
		ld->refs++;
		pthread_mutex_lock(&ld->lock);
		if (!ld->pool && pool)
			ld->pool = pool;
		pthread_mutex_unlock(&ld->lock);
	}
	pthread_mutex_unlock(&registry_lock);
	*out = ld;
	return err;
}

void mk_logdir_release(mk_logdir *ld, bool write)
{
	if (!ld)
		return;
	pthread_mutex_lock(&registry_lock);
	if (--ld->refs > 0) {
		pthread_mutex_unlock(&registry_lock);
		return;
	}
	mk_logdir **pp = &registry;
	while (*pp != ld)
		pp = &(*pp)->next;
	*pp = ld->next;
	/* Under the registry lock: no new object of this directory reads the
	 * files before this last write is in them. */
	if (ld->pool)
		mk_flush_pool_remove(ld->pool, &ld->task);
	if (write)
		(void)mk_logdir_sync(ld, NULL);
	pthread_mutex_unlock(&registry_lock);
	logdir_free(ld);
}

/* ---- names ---------------------------------------------------------------------- */

bool mk_logdir_owns_name(const char *name)
{
	for (int f = 0; f < MK_LOGDIR_NFILES; f++) {
		size_t k = strlen(mk_logdir_names[f]);
		if (!strncmp(name, mk_logdir_names[f], k) &&
		    (!name[k] || !strcmp(name + k, ".tmp")))
			return true;
	}
	return false;
}

bool mk_logdir_parse_name(const char *name, char *topic, size_t cap,
			  int32_t *partition)
{
	const char *dash = strrchr(name, '-');
	int64_t p;
	char canon[16];
	if (!dash || dash == name || (size_t)(dash - name) >= cap ||
	    !mk_parse_range(dash + 1, 0, INT32_MAX, &p))
		return false;
	snprintf(canon, sizeof(canon), "%d", (int)p);
	if (strcmp(canon, dash + 1) != 0)
		return false;     /* t-01 is no partition's name */
	memcpy(topic, name, (size_t)(dash - name));
	topic[dash - name] = '\0';
	if (!mk_topic_name_valid(topic))
		return false;
	*partition = (int32_t)p;
	return true;
}
