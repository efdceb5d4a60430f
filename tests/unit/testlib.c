/* testlib.c — see testlib.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "ckptfile.h"
#include "fileio.h"
#include "logdir.h"

void tl_tmpdir(char *root, size_t n, const char *tag)
{
	int len = snprintf(root, n, "/tmp/mk-test-%s-XXXXXX", tag);
	assert_true(len > 0 && (size_t)len < n);
	assert_non_null(mkdtemp(root));
}

void tl_rmtree(const char *root)
{
	mk_remove_tree(root);
}

volatile sig_atomic_t tl_xfsz;

void tl_count_xfsz(int sig)
{
	(void)sig;
	tl_xfsz++;
}

int tl_count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int tl_logdir_setup(void **state, const char *tag)
{
	tl_logdir *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	tl_tmpdir(f->root, sizeof(f->root), tag);
	snprintf(f->dir, sizeof(f->dir), "%s/t-0", f->root);
	/* Open file descriptors: a closed log leaves none. */
	f->nfds = tl_count_fds();
	*state = f;
	return 0;
}

void tl_logdir_wipe_kafka_files(const tl_logdir *f)
{
	char path[256];
	for (int i = 0; i < MK_LOGDIR_NFILES; i++) {
		snprintf(path, sizeof(path), "%s/%s", f->root, mk_logdir_names[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/leader-epoch-checkpoint", f->dir);
	unlink(path);
}

void tl_logdir_wipe(const tl_logdir *f)
{
	tl_logdir_wipe_kafka_files(f);
	tl_rmtree(f->dir);
}

int64_t tl_ckpt_offset(const char *dir, int file, const char *topic,
		       int partition)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, mk_logdir_names[file]);
	mk_strbuf text = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	bool missing;
	assert_int_equal(mk_file_read(path, &text, &missing), MK_OK);
	int64_t off = -1;
	if (!missing) {
		mk_ckpt_offset *v;
		size_t n;
		mk_err err = mk_ckpt_parse_offsets(path, text.buf, text.len, &v,
						   &n, &why);
		if (err)
			print_error("%s\n", why.buf);
		assert_int_equal(err, MK_OK);
		for (size_t i = 0; i < n; i++)
			if (!strcmp(v[i].topic, topic) && v[i].partition == partition)
				off = v[i].offset;
		mk_ckpt_offsets_free(v, n);
	}
	mk_strbuf_release(&text);
	mk_strbuf_release(&why);
	return off;
}

int tl_logdir_teardown(void **state)
{
	tl_logdir *f = *state;
	int leaked = tl_count_fds() - f->nfds;
	tl_rmtree(f->root);
	free(f);
	if (leaked)
		print_error("%d file descriptors leaked\n", leaked);
	return leaked ? -1 : 0;
}

void tl_frame(mk_strbuf *out, int64_t base, int32_t epoch,
	      const char *const *vals, int n, const int64_t *ts)
{
	mk_batch_meta meta = { 0, base, epoch, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	for (int i = 0; i < n; i++)
		mk_builder_add(&b, ts ? ts[i] : 1000 + base + i, MK_BYTES_NULL,
			       mk_bytes_of(vals[i], strlen(vals[i])), NULL, 0);
	mk_builder_finish(&b);
	mk_strbuf_add(out, b.frame.buf, b.frame.len);
	mk_builder_release(&b);
}

void tl_config(mk_config *cfg, int nbrokers)
{
	mk_config_defaults(cfg);
	cfg->nbrokers = nbrokers;
	for (int i = 0; i < nbrokers; i++)
		cfg->broker_ids[i] = i + 1;
	cfg->manual_clock = 1;
}

mk_cluster *tl_cluster_open(const char *dir, const mk_config *cfg)
{
	mk_cluster *c = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_cluster_open(dir, cfg, &c, &why);
	if (err)
		print_error("open: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
	return c;
}

void tl_create_topic(mk_cluster *c, const char *name, int partitions, int rf,
		     const char *o1, const char *o2)
{
	const char *ov[2];
	size_t n = 0;
	if (o1)
		ov[n++] = o1;
	if (o2)
		ov[n++] = o2;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_cluster_create_topic(c, name, partitions, rf, ov, n,
					     &why);
	if (err)
		print_error("create: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
}

/* ---- indexes ----------------------------------------------------------- */

mk_index_row *tl_check_index_rows(mk_log *log, int64_t segment,
				  const mk_batch_info *bi, size_t n,
				  size_t *nrows)
{
	mk_index_row *rows;
	size_t nr;
	assert_int_equal(mk_log_index_rows(log, segment, &rows, &nr), MK_OK);
	size_t noff = 0;
	while (noff < nr && rows[noff].position >= 0)
		noff++;
	/* Both indexes have an entry for the first batch, or none. */
	assert_true((noff == 0) == (nr == 0));
	assert_true(noff == 0 || nr > noff);
	if (noff)
		assert_int_equal(rows[noff].offset, rows[0].offset);
	for (size_t r = 0; r < nr; r++) {
		bool time_row = r >= noff;
		assert_true(time_row == (rows[r].position < 0));
		int64_t max_ts = INT64_MIN, before = INT64_MIN;
		bool found = false;
		for (size_t i = 0; i < n; i++) {
			if (bi[i].segment != segment ||
			    bi[i].base_offset > rows[r].offset)
				continue;
			if (bi[i].base_offset < rows[r].offset &&
			    bi[i].max_timestamp > before)
				before = bi[i].max_timestamp;
			if (bi[i].max_timestamp > max_ts)
				max_ts = bi[i].max_timestamp;
			found |= bi[i].base_offset == rows[r].offset &&
				 (time_row ||
				  (int64_t)bi[i].position == rows[r].position);
		}
		assert_true(found);
		if (time_row) {
			/* The max so far, first reached by this batch. */
			assert_int_equal(rows[r].timestamp, max_ts);
			assert_true(before < max_ts || r == noff);
		}
	}
	*nrows = nr;
	return rows;
}

/* ---- events ------------------------------------------------------------- */

typedef struct {
	mk_watch w;              /* first: the callback finds us */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool fired;
} tl_event;

/* Under the owner's lock: record only. */
static void event_fired(mk_watch *w)
{
	tl_event *e = (tl_event *)w;
	pthread_mutex_lock(&e->lock);
	e->fired = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

/* Sleep until the first event of owner after seen (watch and unwatch
 * are the owner's: a partition's or a coordinator's). */
static void sleep_on(void *owner, void (*watch)(void *, mk_watch *, uint64_t),
		     void (*unwatch)(void *, mk_watch *), uint64_t seen,
		     const mk_ack_ticket *ack)
{
	tl_event e = { .w = { .fn = event_fired, .ack = ack } };
	pthread_mutex_init(&e.lock, NULL);
	pthread_cond_init(&e.cond, NULL);
	watch(owner, &e.w, seen);
	pthread_mutex_lock(&e.lock);
	while (!e.fired)
		pthread_cond_wait(&e.cond, &e.lock);
	pthread_mutex_unlock(&e.lock);
	unwatch(owner, &e.w);
	pthread_cond_destroy(&e.cond);
	pthread_mutex_destroy(&e.lock);
}

static void part_watch(void *p, mk_watch *w, uint64_t seen)
{
	mk_partition_watch(p, w, seen);
}

static void part_unwatch(void *p, mk_watch *w)
{
	mk_partition_unwatch(p, w);
}

static void coord_watch(void *rt, mk_watch *w, uint64_t seen)
{
	mk_coord_watch(rt, w, seen);
}

static void coord_unwatch(void *rt, mk_watch *w)
{
	mk_coord_unwatch(rt, w);
}

void tl_coord_sleep(mk_coord *rt, uint64_t seen)
{
	sleep_on(rt, coord_watch, coord_unwatch, seen, NULL);
}

static bool fetchers_run(const mk_cluster *c)
{
	for (int i = 0; i < c->nbrokers; i++)
		if (c->brokers[i].fetcher_started)
			return true;
	return false;
}

void tl_await_coord(mk_cluster *c, mk_coord *rt, uint64_t seen)
{
	if (!fetchers_run(c))
		mk_cluster_replicate(c, NULL);
	else
		tl_coord_sleep(rt, seen);
}

void tl_await_change(mk_cluster *c, mk_partition *p, uint64_t seen,
		     const mk_ack_ticket *ack)
{
	if (!fetchers_run(c)) {
		mk_cluster_replicate(c, NULL);
		return;
	}
	sleep_on(p, part_watch, part_unwatch, seen, ack);
}

mk_err tl_producer_settle(mk_cluster *c, mk_producer *p, bool all,
			  mk_strbuf *why)
{
	for (int round = 0;; round++) {
		bool pending;
		mk_ack_watch w;
		mk_err err = mk_producer_check(p, all, &pending, &w, why);
		if (!pending)
			return err;
		if (round == TL_ROUNDS)
			fail_msg("acknowledgements still owed after %d rounds", round);
		if (w.coord)
			tl_await_coord(c, w.coord, w.seen);
		else
			tl_await_change(c, w.p, w.seen, &w.ticket);
	}
}

mk_err tl_producer_send(mk_cluster *c, mk_producer *p, const mk_record_in *recs,
			size_t n, size_t *taken, mk_strbuf *why)
{
	mk_err err = mk_producer_append(p, recs, n, taken, why);
	mk_err acked = tl_producer_settle(c, p, false, why);
	return err ? err : acked;
}

mk_err tl_producer_flush(mk_cluster *c, mk_producer *p, mk_strbuf *why)
{
	mk_err err = mk_producer_flush_begin(p, why);
	mk_err acked = tl_producer_settle(c, p, true, why);
	return err ? err : acked;
}

mk_coord_call tl_call;

mk_err tl_done(mk_err err, mk_strbuf *why)
{
	if (err) {
		mk_coord_call_forget(&tl_call);
		return err;
	}
	return mk_coord_call_wait(&tl_call, why);
}

mk_err tl_ack_wait(mk_partition *p, const mk_produce_result *res,
		   mk_strbuf *why)
{
	if (!res->pending)
		return MK_OK;
	for (;;) {
		uint64_t seen = mk_partition_seq(p);
		bool pending;
		mk_err err = mk_partition_ack_check(p, &res->ticket, &pending, why);
		if (err || !pending)
			return err;
		sleep_on(p, part_watch, part_unwatch, seen, &res->ticket);
	}
}
