/*
 * Unit tests of replication (core/replication/replica.h's pieces, core/replication/cluster*.c): follower
 * fetch, ISR and high watermark, acks, broker crash / restart / promotion,
 * epoch vs hw truncation, metadata across close and reopen, and the
 * background fetchers. Every cluster runs on a manual clock in a temporary
 * directory; replication moves only through explicit fetch rounds unless a
 * test turns on auto mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "codec.h"
#include "config.h"
#include "fileio.h"
#include "log.h"
#include "replica.h"
#include "testlib.h"

/* ---- fixture ------------------------------------------------------------- */

typedef struct {
	char root[64];
	char dir[128];           /* the cluster's data directory */
	mk_config cfg;
	mk_cluster *c;
	mk_topic *t;
	mk_partition *p;         /* partition 0 of t */
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	tl_tmpdir(f->root, sizeof(f->root), "replica");
	snprintf(f->dir, sizeof(f->dir), "%s/data", f->root);
	*state = f;
	return 0;
}

static void close_cluster(fixture *f)
{
	mk_topic_put(f->t);
	f->t = NULL;
	f->p = NULL;
	mk_cluster_close(f->c);
	f->c = NULL;
}

static int teardown(void **state)
{
	fixture *f = *state;
	close_cluster(f);
	tl_rmtree(f->root);
	free(f);
	return 0;
}

/* Defaults, brokers 1..n, manual clock, manual replication. */
static void config(fixture *f, int nbrokers)
{
	tl_config(&f->cfg, nbrokers);
}

static void open_cluster(fixture *f)
{
	f->c = tl_cluster_open(f->dir, &f->cfg);
}

/* Look up topic T (kept referenced in the fixture) and its partition 0. */
static void use_topic(fixture *f, const char *name)
{
	mk_topic_put(f->t);
	f->t = mk_cluster_topic(f->c, name);
	assert_non_null(f->t);
	f->p = mk_topic_partition(f->t, 0);
	assert_non_null(f->p);
}

/* Create topic T with one partition, replication factor rf, overrides. */
static void create(fixture *f, const char *name, int rf, const char *o1,
		   const char *o2)
{
	tl_create_topic(f->c, name, 1, rf, o1, o2);
	use_topic(f, name);
}

/* ---- producing and reading ----------------------------------------------- */

/* A frame holding one record per value (keys null), offsets unassigned. */
static void build(mk_strbuf *frame, const char *const *vals, int n)
{
	mk_strbuf_reset(frame);
	tl_frame(frame, 0, -1, vals, n, NULL);
}

static size_t frame_size(const char *const *vals, int n)
{
	mk_strbuf b = MK_STRBUF_INIT;
	build(&b, vals, n);
	size_t len = b.len;
	mk_strbuf_release(&b);
	return len;
}

static mk_err produce_n(mk_partition *p, const char *const *vals, int n,
			int acks, int64_t *base)
{
	mk_strbuf b = MK_STRBUF_INIT;
	build(&b, vals, n);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_produce_args a = { .acks = acks, .seq = -1, .count = n };
	mk_produce_result res;
	mk_err err = mk_partition_produce(p, (uint8_t *)b.buf, b.len,
					  &a, &res, &why);
	if (!err)
		err = tl_ack_wait(p, &res, &why);   /* as a parked writer */
	if (base)
		*base = res.base;
	mk_strbuf_release(&why);
	mk_strbuf_release(&b);
	return err;
}

/* Produce one record that must succeed; returns its offset. */
static int64_t produce(mk_partition *p, const char *val, int acks)
{
	int64_t base = -1;
	mk_err err = produce_n(p, &val, 1, acks, &base);
	if (err)
		print_error("produce %s: %s\n", val, mk_err_name(err));
	assert_int_equal(err, MK_OK);
	return base;
}

/* Records as a consumer sees them. */
typedef struct {
	int n;
	int nbatches;
	int64_t visible_end;
	int64_t off[64];
	char val[64][32];
} records;

/* Decode every frame of buf into r (appending); returns the frame count. */
static int decode_all(const mk_strbuf *buf, records *r)
{
	size_t pos = 0;
	int frames = 0;
	while (pos < buf->len) {
		mk_batch_view b;
		const char *reason = NULL;
		mk_err err = mk_frame_decode((const uint8_t *)buf->buf + pos,
					     buf->len - pos, 0, &b, &reason);
		if (err)
			print_error("decode at %zu: %s\n", pos, reason ? reason : "");
		assert_int_equal(err, MK_OK);
		mk_record_iter it;
		mk_record_view rec;
		mk_record_iter_init(&it, &b);
		while (mk_record_next(&it, &rec)) {
			assert_true(r->n < 64);
			assert_true(rec.value.len >= 0 && rec.value.len < 32);
			r->off[r->n] = rec.offset;
			memcpy(r->val[r->n], rec.value.ptr, (size_t)rec.value.len);
			r->val[r->n][rec.value.len] = '\0';
			r->n++;
		}
		pos += b.frame_len;
		frames++;
	}
	return frames;
}

/* Consumer fetch from `from` with max_bytes; must succeed. */
static void fetch(mk_partition *p, int64_t from, size_t max_bytes, records *r)
{
	memset(r, 0, sizeof(*r));
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_err err = mk_partition_fetch(p, from, max_bytes, &out, &r->visible_end,
					&why);
	if (err)
		print_error("fetch %lld: %s: %s\n", (long long)from,
			    mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	r->nbatches = decode_all(&out, r);
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

static void fetch_all(mk_partition *p, records *r)
{
	fetch(p, 0, SIZE_MAX, r);
}

/* The values of r joined by commas, for whole-log comparisons. */
static const char *joined(const records *r, char *buf, size_t n)
{
	buf[0] = '\0';
	for (int i = 0; i < r->n; i++) {
		size_t l = strlen(buf);
		snprintf(buf + l, n - l, "%s%s", i ? "," : "", r->val[i]);
	}
	return buf;
}

#define assert_values(r, expect)                                            \
	do {                                                                \
		char buf_[2048];                                            \
		assert_string_equal(joined((r), buf_, sizeof(buf_)), (expect)); \
	} while (0)

/* ---- cluster operations that must succeed ------------------------------- */

static void broker_fetch(fixture *f, int broker)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_cluster_broker_fetch(f->c, broker, &why);
	if (err)
		print_error("fetch on %d: %s: %s\n", broker, mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
}

static void replicate(fixture *f)
{
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
}

static void crash(fixture *f, int broker, bool torn)
{
	assert_int_equal(mk_cluster_broker_crash(f->c, broker, torn, NULL), MK_OK);
}

static void restart(fixture *f, int broker)
{
	assert_int_equal(mk_cluster_broker_restart(f->c, broker, NULL), MK_OK);
}

static mk_err promote(fixture *f, int broker, bool unclean)
{
	return mk_cluster_promote(f->c, broker, f->t->name, 0, unclean, NULL);
}

static void advance(fixture *f, int64_t ms)
{
	assert_int_equal(mk_cluster_clock_advance(f->c, ms, NULL), MK_OK);
}

static void flush(fixture *f)
{
	assert_int_equal(mk_cluster_flush(f->c, NULL), MK_OK);
}

/* ---- inspecting ---------------------------------------------------------- */

static mk_partition_info info(mk_partition *p)
{
	mk_partition_info in;
	mk_partition_info_get(p, &in);
	return in;
}

static int rindex_of(const mk_partition_info *in, int broker)
{
	for (int i = 0; i < in->nreplicas; i++)
		if (in->replicas[i].broker == broker)
			return i;
	fail_msg("broker %d hosts no replica", broker);
	return -1;
}

static int64_t leo_of(mk_partition *p, int broker)
{
	mk_partition_info in = info(p);
	return in.replicas[rindex_of(&in, broker)].leo;
}

static bool in_isr(mk_partition *p, int broker)
{
	mk_partition_info in = info(p);
	return in.replicas[rindex_of(&in, broker)].in_isr;
}

/* The ISR as a sorted, space-separated list of broker ids. */
static const char *isr_of(mk_partition *p, char *buf, size_t n)
{
	mk_partition_info in = info(p);
	buf[0] = '\0';
	for (int b = 0; b <= MK_MAX_BROKERS; b++)
		for (int i = 0; i < in.nreplicas; i++)
			if (in.replicas[i].broker == b && in.replicas[i].in_isr) {
				size_t l = strlen(buf);
				snprintf(buf + l, n - l, "%s%d", l ? " " : "", b);
			}
	return buf;
}

#define assert_isr(p, expect)                                               \
	do {                                                                \
		char buf_[64];                                              \
		assert_string_equal(isr_of((p), buf_, sizeof(buf_)), (expect)); \
	} while (0)

/* ---- a producer blocked in acks=all ------------------------------------- */

typedef struct {
	mk_partition *p;
	mk_strbuf b;
	int acks;
	int64_t base;
	mk_err err;
	atomic_bool done;
	pthread_t thread;
	char why[256];
} async_produce;

static void *produce_main(void *arg)
{
	async_produce *a = arg;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_produce_args args = { .acks = a->acks, .seq = -1, .count = 1 };
	mk_produce_result res;
	a->err = mk_partition_produce(a->p, (uint8_t *)a->b.buf,
				      a->b.len, &args, &res, &why);
	if (!a->err)
		a->err = tl_ack_wait(a->p, &res, &why);
	a->base = res.base;
	snprintf(a->why, sizeof(a->why), "%s", why.buf);
	mk_strbuf_release(&why);
	atomic_store(&a->done, true);
	return NULL;
}

/* Bounded wait: poll cond() with short sleeps, at most about 20 s. */
static bool poll_until(bool (*cond)(void *), void *arg)
{
	for (int i = 0; i < 20000; i++) {
		if (cond(arg))
			return true;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return cond(arg);
}

typedef struct {
	mk_partition *p;
	int64_t leo;
} leo_target;

static bool leader_leo_reached(void *arg)
{
	leo_target *t = arg;
	return info(t->p).leo >= t->leo;
}

/*
 * Start an acks=all produce of one record in a thread and wait (bounded,
 * by polling the leader's LEO) until the leader has appended it, so the
 * thread is now inside the acks=all wait. Asserts it has not returned.
 */
static void start_produce(async_produce *a, mk_partition *p, const char *val)
{
	memset(a, 0, sizeof(*a));
	a->p = p;
	a->acks = -1;
	a->base = -1;
	atomic_init(&a->done, false);
	mk_strbuf_init(&a->b, 0);
	build(&a->b, &val, 1);
	leo_target t = { p, info(p).leo + 1 };
	assert_int_equal(pthread_create(&a->thread, NULL, produce_main, a), 0);
	assert_true(poll_until(leader_leo_reached, &t));
	/* Give the thread a few chances to (wrongly) return. */
	for (int i = 0; i < 50; i++)
		sched_yield();
	assert_false(atomic_load(&a->done));
}

static mk_err finish_produce(async_produce *a)
{
	pthread_join(a->thread, NULL);
	mk_strbuf_release(&a->b);
	assert_true(atomic_load(&a->done));
	return a->err;
}

/* ---- follower fetch ------------------------------------------------------ */

/* Byte-for-byte content of a closed replica log, read with mk_log. */
static void read_log(const fixture *f, int broker, const char *topic,
		     mk_strbuf *out)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/broker-%d/%s-0", f->dir, broker, topic);
	mk_log_config lc = { 1048576, 4096, 0, NULL, NULL };
	mk_log *log = NULL;
	assert_int_equal(mk_log_open(dir, &lc, &log, NULL), MK_OK);
	assert_int_equal(mk_log_read(log, mk_log_start_offset(log),
				     mk_log_end_offset(log), SIZE_MAX, out), MK_OK);
	mk_log_close(log);
}

/*
 * A tiny replica.fetch.max.bytes still moves one whole batch per round,
 * always from the follower's own log end; a budget of exactly two batches
 * moves two. The follower's log ends up byte-identical to the leader's.
 */
static void test_follower_fetch_batches(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.replica_fetch_max_bytes = 1;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, 1);
	assert_int_equal(in.leader_epoch, 0);

	const char *b0[] = { "a0", "a1" }, *b1[] = { "b0", "b1", "b2" },
		   *b2[] = { "c0" };
	int64_t base;
	assert_int_equal(produce_n(f->p, b0, 2, 1, &base), MK_OK);
	assert_int_equal(base, 0);
	assert_int_equal(produce_n(f->p, b1, 3, 1, &base), MK_OK);
	assert_int_equal(base, 2);
	assert_int_equal(produce_n(f->p, b2, 1, 1, &base), MK_OK);
	assert_int_equal(base, 5);
	/* Manual mode: nothing moves until a fetch round. */
	assert_int_equal(leo_of(f->p, 1), 6);
	assert_int_equal(leo_of(f->p, 2), 0);
	assert_int_equal(info(f->p).hw, 0);

	/* Fetching on the leader's broker moves nothing. */
	broker_fetch(f, 1);
	assert_int_equal(leo_of(f->p, 2), 0);

	broker_fetch(f, 2);
	assert_int_equal(leo_of(f->p, 2), 2);     /* one whole batch of 2 */
	assert_int_equal(info(f->p).hw, 2);
	broker_fetch(f, 2);
	assert_int_equal(leo_of(f->p, 2), 5);
	broker_fetch(f, 2);
	assert_int_equal(leo_of(f->p, 2), 6);
	broker_fetch(f, 2);                       /* caught up: no-op */
	assert_int_equal(leo_of(f->p, 2), 6);
	in = info(f->p);
	assert_int_equal(in.hw, 6);
	assert_int_equal(in.leo, 6);

	/* A budget of exactly two frames brings two batches in one round. */
	const char *d0[] = { "d0" }, *d1[] = { "d1", "d2" }, *d2[] = { "d3" };
	close_cluster(f);
	f->cfg.replica_fetch_max_bytes = (int64_t)(frame_size(d0, 1) + frame_size(d1, 2));
	open_cluster(f);
	use_topic(f, "t");
	assert_int_equal(produce_n(f->p, d0, 1, 1, NULL), MK_OK);
	assert_int_equal(produce_n(f->p, d1, 2, 1, NULL), MK_OK);
	assert_int_equal(produce_n(f->p, d2, 1, 1, NULL), MK_OK);
	assert_int_equal(leo_of(f->p, 1), 10);
	replicate(f);
	assert_int_equal(leo_of(f->p, 2), 9);
	replicate(f);
	assert_int_equal(leo_of(f->p, 2), 10);

	/* The follower holds the very same frames (offsets, epochs, CRCs). */
	close_cluster(f);
	mk_strbuf l = MK_STRBUF_INIT, r = MK_STRBUF_INIT;
	read_log(f, 1, "t", &l);
	read_log(f, 2, "t", &r);
	assert_true(l.len > 0);
	assert_int_equal(l.len, r.len);
	assert_memory_equal(l.buf, r.buf, l.len);
	records rec = { 0 };
	assert_int_equal(decode_all(&r, &rec), 6);
	assert_values(&rec, "a0,a1,b0,b1,b2,c0,d0,d1,d2,d3");
	for (int i = 0; i < rec.n; i++)
		assert_int_equal(rec.off[i], i);
	mk_strbuf_release(&l);
	mk_strbuf_release(&r);
}

/* ---- visibility ---------------------------------------------------------- */

/* Consumers read from the leader but never past the high watermark. */
static void test_reads_stop_at_hw(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.replica_fetch_max_bytes = 1;     /* one batch per round */
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	const char *b0[] = { "x0", "x1" }, *b1[] = { "y0" };
	assert_int_equal(produce_n(f->p, b0, 2, 1, NULL), MK_OK);
	assert_int_equal(produce_n(f->p, b1, 1, 1, NULL), MK_OK);

	records r;
	fetch_all(f->p, &r);
	assert_int_equal(r.visible_end, 0);
	assert_int_equal(r.n, 0);
	fetch(f->p, 2, SIZE_MAX, &r);           /* inside the log, above HW */
	assert_int_equal(r.n, 0);
	/* Above the leader's log end is out of range. */
	mk_strbuf out = MK_STRBUF_INIT;
	int64_t vis;
	assert_int_equal(mk_partition_fetch(f->p, 4, SIZE_MAX, &out, &vis, NULL),
			 MK_OFFSET_OUT_OF_RANGE);
	assert_int_equal(mk_partition_fetch(f->p, 3, SIZE_MAX, &out, &vis, NULL),
			 MK_OK);
	assert_int_equal(out.len, 0);
	mk_strbuf_release(&out);

	broker_fetch(f, 2);                     /* follower has batch 0 */
	fetch_all(f->p, &r);
	assert_int_equal(r.visible_end, 2);
	assert_values(&r, "x0,x1");
	fetch(f->p, 1, SIZE_MAX, &r);           /* the batch holding 1 */
	assert_int_equal(r.nbatches, 1);
	fetch(f->p, 2, SIZE_MAX, &r);
	assert_int_equal(r.n, 0);

	broker_fetch(f, 2);
	fetch_all(f->p, &r);
	assert_int_equal(r.visible_end, 3);
	assert_values(&r, "x0,x1,y0");
	for (int i = 0; i < r.n; i++)
		assert_int_equal(r.off[i], i);
	/* A tiny consumer budget still returns one batch. */
	fetch(f->p, 0, 1, &r);
	assert_int_equal(r.nbatches, 1);
	assert_values(&r, "x0,x1");
}

/* acks=0 and acks=1 return at once; the HW waits for the follower. */
static void test_acks_0_and_1(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.log.min_insync_replicas = 2;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	assert_int_equal(produce(f->p, "zero", 0), 0);
	assert_int_equal(produce(f->p, "one", 1), 1);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leo, 2);
	assert_int_equal(in.hw, 0);
	replicate(f);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "zero,one");
	assert_int_equal(r.visible_end, 2);
}

/* ---- the seed chapter's lab ---------------------------------------------- */

/*
 * Chapter 5's lab: brokers 1 and 2, min.insync.replicas=2. An acks=all
 * write stays pending until a fetch round, then has offset 0; an acks=1
 * write gets offset 1 outside the visible end; promoting the follower
 * loses it, and the old leader truncates it at its next fetch.
 */
static void seed_lab(fixture *f, int truncation)
{
	config(f, 2);
	f->cfg.log.min_insync_replicas = 2;
	f->cfg.truncation = truncation;
	open_cluster(f);
	create(f, "events", 2, NULL, NULL);

	async_produce a;
	start_produce(&a, f->p, "safe");
	mk_partition_info in = info(f->p);
	assert_int_equal(in.hw, 0);
	assert_int_equal(in.leo, 1);
	assert_int_equal(leo_of(f->p, 2), 0);
	assert_false(atomic_load(&a.done));      /* acks=all pending */

	replicate(f);
	assert_int_equal(finish_produce(&a), MK_OK);
	assert_int_equal(a.base, 0);
	assert_int_equal(leo_of(f->p, 1), 1);
	assert_int_equal(leo_of(f->p, 2), 1);
	assert_int_equal(info(f->p).hw, 1);

	assert_int_equal(produce(f->p, "at-risk", 1), 1);
	records r;
	fetch_all(f->p, &r);
	assert_int_equal(r.visible_end, 1);
	assert_values(&r, "safe");

	assert_int_equal(promote(f, 2, false), MK_OK);
	in = info(f->p);
	assert_int_equal(in.leader, 2);
	assert_int_equal(in.leader_epoch, 1);
	assert_int_equal(in.leo, 1);
	fetch(f->p, 0, SIZE_MAX, &r);
	assert_values(&r, "safe");
	assert_int_equal(r.visible_end, 1);
	/* The old leader keeps its tail until it fetches... */
	assert_int_equal(leo_of(f->p, 1), 2);
	broker_fetch(f, 1);
	/* ...then truncates it. */
	assert_int_equal(leo_of(f->p, 1), 1);

	/* And follows the new leader from there. */
	assert_int_equal(produce(f->p, "after", 1), 1);
	broker_fetch(f, 1);
	assert_int_equal(leo_of(f->p, 1), 2);
	fetch_all(f->p, &r);
	assert_values(&r, "safe,after");
	close_cluster(f);
	mk_strbuf l = MK_STRBUF_INIT;
	read_log(f, 1, "events", &l);
	records old = { 0 };
	decode_all(&l, &old);
	assert_values(&old, "safe,after");      /* "at-risk" is gone */
	mk_strbuf_release(&l);
}

static void test_seed_lab_epoch(void **state)
{
	seed_lab(*state, MK_TRUNCATE_EPOCH);
}

static void test_seed_lab_hw(void **state)
{
	seed_lab(*state, MK_TRUNCATE_HW);
}

/*
 * After the lab's promotion the old leader is still in the ISR with its
 * divergent tail (offset 1 = "at-risk"). An acks=all write on the new
 * leader gets offset 1 too; it must not count as on broker 1 until broker
 * 1 has fetched it. Otherwise it is acknowledged while broker 1 holds a
 * different record at that offset, and losing broker 2 loses it although
 * an ISR replica survived (docs/filesystem.md section 8).
 */
static void test_acks_all_after_promotion_waits_for_old_leader(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.log.min_insync_replicas = 2;
	open_cluster(f);
	create(f, "events", 2, NULL, NULL);
	assert_int_equal(produce(f->p, "safe", 1), 0);
	replicate(f);
	assert_int_equal(produce(f->p, "at-risk", 1), 1);
	assert_int_equal(promote(f, 2, false), MK_OK);
	assert_isr(f->p, "1 2");

	async_produce a;
	start_produce(&a, f->p, "acked");
	/* The HW must not cover offset 1: broker 1 has something else there. */
	assert_int_equal(info(f->p).hw, 1);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "safe");
	broker_fetch(f, 1);
	assert_int_equal(finish_produce(&a), MK_OK);
	assert_int_equal(a.base, 1);
	assert_int_equal(info(f->p).hw, 2);

	/* Broker 2 dies; broker 1, in the ISR, takes over with the record. */
	crash(f, 2, false);
	assert_int_equal(promote(f, 1, false), MK_OK);
	fetch_all(f->p, &r);
	assert_values(&r, "safe,acked");
}

/* ---- acks=all failures --------------------------------------------------- */

/* ISR below min.insync.replicas: refused before anything is appended. */
static void test_not_enough_replicas(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.log.min_insync_replicas = 2;
	f->cfg.replica_lag_time_max_ms = 1000;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	assert_int_equal(produce(f->p, "ok", 1), 0);
	replicate(f);

	crash(f, 2, false);
	assert_isr(f->p, "1");
	int64_t base = 77;
	const char *v = "refused";
	assert_int_equal(produce_n(f->p, &v, 1, -1, &base), MK_NOT_ENOUGH_REPLICAS);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leo, 1);            /* nothing appended */
	assert_int_equal(in.hw, 1);
	/* acks=1 is still served. */
	assert_int_equal(produce(f->p, "leader-only", 1), 1);

	/* Back and caught up: acks=all works again... */
	restart(f, 2);
	broker_fetch(f, 2);
	assert_isr(f->p, "1 2");
	async_produce a;
	start_produce(&a, f->p, "all");
	broker_fetch(f, 2);
	assert_int_equal(finish_produce(&a), MK_OK);
	assert_int_equal(a.base, 2);

	/* ...until the follower lags past replica.lag.time.max.ms. */
	advance(f, 1001);
	assert_isr(f->p, "1");
	assert_int_equal(produce_n(f->p, &v, 1, -1, NULL), MK_NOT_ENOUGH_REPLICAS);
	assert_int_equal(info(f->p).leo, 3);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "ok,leader-only,all");
}

/* The follower crashes while the write waits: appended, but failed. */
static void test_not_enough_replicas_after_append(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.log.min_insync_replicas = 2;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	async_produce a;
	start_produce(&a, f->p, "m0");
	crash(f, 2, false);
	assert_int_equal(finish_produce(&a), MK_NOT_ENOUGH_REPLICAS_AFTER_APPEND);
	assert_non_null(strstr(a.why, "min.insync.replicas"));
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leo, 1);            /* the batch stays on the leader */
	assert_int_equal(in.leader, 1);
	assert_isr(f->p, "1");
	/* With the ISR at {1}, the HW moves to the leader's end. */
	assert_int_equal(in.hw, 1);
}

/* No follower fetch before request.timeout.ms on the cluster clock. */
static void test_request_timed_out(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.request_timeout_ms = 500;
	f->cfg.replica_lag_time_max_ms = 10000;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	async_produce a;
	start_produce(&a, f->p, "slow");
	advance(f, 499);
	/* Not yet: give it chances to return early, then check. */
	for (int i = 0; i < 20; i++) {
		mk_partition_wake(f->p);
		sched_yield();
	}
	assert_false(atomic_load(&a.done));
	advance(f, 1);
	assert_int_equal(finish_produce(&a), MK_REQUEST_TIMED_OUT);
	/* Appended though: it becomes visible once the follower has it. */
	assert_int_equal(info(f->p).leo, 1);
	assert_isr(f->p, "1 2");
	replicate(f);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "slow");
}

/* A promotion while the write waits fences it. */
static void test_fenced_leader_epoch(void **state)
{
	fixture *f = *state;
	config(f, 3);
	open_cluster(f);
	create(f, "t", 3, NULL, NULL);
	async_produce a;
	start_produce(&a, f->p, "fenced");
	assert_int_equal(promote(f, 2, false), MK_OK);
	assert_int_equal(finish_produce(&a), MK_FENCED_LEADER_EPOCH);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, 2);
	assert_int_equal(in.leader_epoch, 1);
	assert_int_equal(in.leo, 0);            /* never replicated: gone */
	/* The old leader drops it at its next fetch. */
	assert_int_equal(leo_of(f->p, 1), 1);
	replicate(f);
	assert_int_equal(leo_of(f->p, 1), 0);

	/* Re-promoting the same leader also bumps the epoch and fences. */
	start_produce(&a, f->p, "again");
	assert_int_equal(promote(f, 2, false), MK_OK);
	assert_int_equal(finish_produce(&a), MK_FENCED_LEADER_EPOCH);
	assert_int_equal(info(f->p).leader_epoch, 2);
}

/* ---- ISR ----------------------------------------------------------------- */

/* A follower that has not fetched for replica.lag.time.max.ms leaves. */
static void test_isr_time_lag(void **state)
{
	fixture *f = *state;
	config(f, 3);
	f->cfg.replica_lag_time_max_ms = 1000;
	open_cluster(f);
	create(f, "t", 3, NULL, NULL);
	assert_isr(f->p, "1 2 3");
	assert_int_equal(info(f->p).isr_shrinks, 0);
	assert_int_equal(info(f->p).isr_expands, 0);
	advance(f, 1000);                        /* at the limit: still in */
	assert_isr(f->p, "1 2 3");
	broker_fetch(f, 2);                      /* 2 fetches (nothing new) */
	advance(f, 1);
	assert_isr(f->p, "1 2");                 /* 3 is out, 2 is not */
	assert_int_equal(info(f->p).isr_shrinks, 1);
	assert_int_equal(produce(f->p, "m0", 1), 0);
	broker_fetch(f, 2);
	assert_int_equal(info(f->p).hw, 1);      /* 3 no longer holds it back */
	advance(f, 1001);
	assert_isr(f->p, "1");
	assert_int_equal(produce(f->p, "m1", 1), 1);
	assert_int_equal(info(f->p).hw, 2);      /* the leader alone */
	assert_int_equal(info(f->p).isr_shrinks, 2);
	/* A fetch that covers the HW brings them back. */
	replicate(f);
	assert_isr(f->p, "1 2 3");
	assert_int_equal(info(f->p).hw, 2);
	/* Counted per replica moved (Kafka marks once per ISR update). */
	assert_int_equal(info(f->p).isr_shrinks, 2);
	assert_int_equal(info(f->p).isr_expands, 2);
}

/* Two followers leaving at one recomputation count two shrinks, one per
 * replica moved (docs/filesystem.md; Kafka's meter would mark once). */
static void test_isr_shrinks_count_replicas(void **state)
{
	fixture *f = *state;
	config(f, 3);
	f->cfg.replica_lag_max_messages = 2;
	open_cluster(f);
	create(f, "t", 3, NULL, NULL);
	for (int i = 0; i < 3; i++)
		produce(f->p, "m", 1);
	assert_isr(f->p, "1");
	assert_int_equal(info(f->p).isr_shrinks, 2);
	assert_int_equal(info(f->p).isr_expands, 0);
	replicate(f);
	assert_isr(f->p, "1 2 3");
	assert_int_equal(info(f->p).isr_expands, 2);
}

/* Crashes, restarts and an unclean election move replicas through the
 * counters too (one per replica moved); the last member's crash moves
 * nothing. */
static void test_isr_counters_crash_and_unclean(void **state)
{
	fixture *f = *state;
	config(f, 3);
	open_cluster(f);
	create(f, "t", 3, "unclean.leader.election.enable=true", NULL);
	crash(f, 2, false);
	crash(f, 3, false);
	assert_isr(f->p, "1");
	assert_int_equal(info(f->p).isr_shrinks, 2);
	crash(f, 1, false);                      /* the last member stays */
	assert_int_equal(info(f->p).isr_shrinks, 2);
	restart(f, 2);                           /* back, not in the ISR yet */
	assert_int_equal(info(f->p).isr_expands, 0);
	assert_int_equal(promote(f, 2, true), MK_OK);
	assert_isr(f->p, "2");                   /* 1 out, 2 in */
	assert_int_equal(info(f->p).isr_shrinks, 3);
	assert_int_equal(info(f->p).isr_expands, 1);
	restart(f, 3);
	broker_fetch(f, 3);
	assert_isr(f->p, "2 3");
	assert_int_equal(info(f->p).isr_expands, 2);
	assert_int_equal(info(f->p).isr_shrinks, 3);
}

/* A follower more than replica.lag.max.messages behind leaves. */
static void test_isr_offset_lag(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.replica_lag_max_messages = 2;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	produce(f->p, "m0", 1);
	produce(f->p, "m1", 1);
	assert_isr(f->p, "1 2");                 /* lag 2: in */
	assert_int_equal(info(f->p).hw, 0);
	produce(f->p, "m2", 1);
	assert_isr(f->p, "1");                   /* lag 3: out */
	assert_int_equal(info(f->p).hw, 3);
	replicate(f);
	assert_isr(f->p, "1 2");
	assert_int_equal(leo_of(f->p, 2), 3);
}

/*
 * Reading a snapshot never changes the ISR: a follower past
 * replica.lag.time.max.ms without a fetch stays in it, however often the
 * partition is read, until the ISR check runs (docs/filesystem.md section
 * 8a). The clock is moved under the cluster (mk_clock_advance), so that
 * no clock move runs the check; then the check runs by itself.
 */
static void test_isr_snapshot_only_reads(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.replica_lag_time_max_ms = 1000;
	open_cluster(f);
	mk_cluster_start(f->c);                  /* the saver */
	create(f, "t", 2, NULL, NULL);
	produce(f->p, "m0", 1);
	assert_int_equal(info(f->p).hw, 0);      /* broker 2 holds it */
	assert_true(mk_clock_advance(&f->c->clock, 1001));
	uint64_t seq = mk_partition_seq(f->p);
	for (int i = 0; i < 10; i++) {
		assert_isr(f->p, "1 2");
		assert_int_equal(info(f->p).hw, 0);
	}
	assert_int_equal(info(f->p).isr_shrinks, 0);
	assert_int_equal(mk_partition_seq(f->p), seq);   /* nothing moved */
	assert_int_equal(mk_cluster_isr_check(f->c), MK_OK);
	assert_isr(f->p, "1");                   /* the check, saved */
	assert_int_equal(info(f->p).hw, 1);      /* with its effect */
	assert_int_equal(info(f->p).isr_shrinks, 1);
}

/*
 * The ISR check runs on a clock advance and on an explicit fetch round,
 * and each returns once the change is saved: a read right after it sees
 * the shrink and the HW it allows (the saver runs, so the snapshot shows
 * only what the metadata file has).
 */
static void test_isr_check_on_clock_and_fetch_round(void **state)
{
	fixture *f = *state;
	config(f, 3);
	f->cfg.replica_lag_time_max_ms = 1000;
	open_cluster(f);
	mk_cluster_start(f->c);
	create(f, "t", 3, NULL, NULL);
	produce(f->p, "m0", 1);
	advance(f, 1000);                        /* at the limit: in */
	assert_isr(f->p, "1 2 3");
	broker_fetch(f, 2);                      /* 2 fetches m0 */
	assert_int_equal(info(f->p).hw, 0);      /* 3 holds it */
	advance(f, 1);                           /* the check: 3 is out */
	assert_isr(f->p, "1 2");
	assert_int_equal(info(f->p).hw, 1);
	/* Past the limit again with no clock move: a fetch round of any
	 * broker runs the check on every partition. */
	produce(f->p, "m1", 1);
	assert_true(mk_clock_advance(&f->c->clock, 1001));
	assert_isr(f->p, "1 2");                 /* no check yet */
	assert_int_equal(info(f->p).hw, 1);      /* 2 holds it */
	broker_fetch(f, 1);                      /* broker 1 follows nothing */
	assert_isr(f->p, "1");
	assert_int_equal(info(f->p).hw, 2);
	assert_int_equal(info(f->p).isr_shrinks, 2);
}

typedef struct {
	mk_partition *p;
	const char *isr;
} isr_target;

static bool isr_is(void *arg)
{
	isr_target *t = arg;
	char buf[64];
	return !strcmp(isr_of(t->p, buf, sizeof(buf)), t->isr);
}

/*
 * Auto mode with the system clock: the ISR check runs on a thread of its
 * own every replica.lag.time.max.ms / 2, so a follower whose fetcher
 * sleeps (nothing to fetch: it long-polls for an hour) leaves the ISR
 * once replica.lag.time.max.ms has passed, though nothing else touches
 * the partition and a read applies no rule. Waited for, not timed.
 */
static void test_isr_check_task_auto_mode(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.manual_clock = false;
	f->cfg.auto_replication = 1;
	f->cfg.replica_lag_time_max_ms = 100;
	f->cfg.replica_fetch_wait_max_ms = 3600 * 1000;
	f->cfg.fetch_interval_ms = 3600 * 1000;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	mk_cluster_start(f->c);
	isr_target it = { f->p, "1" };
	assert_true(poll_until(isr_is, &it));
	assert_int_equal(info(f->p).isr_shrinks, 1);
}

/* In manual replication an append that decides an ISR change (the
 * message-lag rule) returns once it is saved: the read right after it
 * sees the shrink and its HW, with the saver running. */
static void test_isr_offset_lag_saved_by_append(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.replica_lag_max_messages = 2;
	open_cluster(f);
	mk_cluster_start(f->c);
	create(f, "t", 2, NULL, NULL);
	produce(f->p, "m0", 1);
	produce(f->p, "m1", 1);
	assert_isr(f->p, "1 2");
	produce(f->p, "m2", 1);
	assert_isr(f->p, "1");                   /* lag 3: out, saved */
	assert_int_equal(info(f->p).hw, 3);
	replicate(f);
	assert_isr(f->p, "1 2");                 /* saved by the round */
}

/*
 * Re-entry needs the HW covered: fetching recently and lagging little is
 * not enough. With one batch per round, the follower is back only once
 * its log end reaches the HW.
 */
static void test_isr_reentry_needs_hw(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.replica_fetch_max_bytes = 1;
	f->cfg.replica_lag_time_max_ms = 1000;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	advance(f, 1001);
	assert_isr(f->p, "1");
	produce(f->p, "m0", 1);
	produce(f->p, "m1", 1);
	produce(f->p, "m2", 1);
	assert_int_equal(info(f->p).hw, 3);
	broker_fetch(f, 2);
	assert_int_equal(leo_of(f->p, 2), 1);
	assert_false(in_isr(f->p, 2));           /* fetched now, lag 2, < HW */
	broker_fetch(f, 2);
	assert_int_equal(leo_of(f->p, 2), 2);
	assert_false(in_isr(f->p, 2));
	broker_fetch(f, 2);
	assert_int_equal(leo_of(f->p, 2), 3);
	assert_true(in_isr(f->p, 2));
	/* The HW never moved back meanwhile. */
	assert_int_equal(info(f->p).hw, 3);
}

/* ---- crash and restart --------------------------------------------------- */

/* What was flushed survives a crash; what was not is gone. */
static void test_crash_loses_unflushed_tail(void **state)
{
	fixture *f = *state;
	config(f, 2);
	open_cluster(f);
	create(f, "t", 1, NULL, NULL);           /* on broker 1 only */
	produce(f->p, "kept0", 1);
	produce(f->p, "kept1", 1);
	flush(f);
	produce(f->p, "lost2", 1);
	produce(f->p, "lost3", 1);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "kept0,kept1,lost2,lost3");

	crash(f, 1, false);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, -1);
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	int64_t vis;
	assert_int_equal(mk_partition_fetch(f->p, 0, SIZE_MAX, &out, &vis, &why),
			 MK_LEADER_NOT_AVAILABLE);
	assert_int_equal(produce_n(f->p, (const char *[]){ "x" }, 1, 1, NULL),
			 MK_LEADER_NOT_AVAILABLE);
	assert_int_equal(promote(f, 1, false), MK_BROKER_NOT_AVAILABLE);
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);

	restart(f, 1);
	in = info(f->p);
	assert_int_equal(in.leader, 1);          /* the ISR's last member */
	assert_int_equal(in.leader_epoch, 1);
	assert_int_equal(in.leo, 2);
	assert_int_equal(in.hw, 2);
	fetch_all(f->p, &r);
	assert_values(&r, "kept0,kept1");
	assert_int_equal(produce(f->p, "new2", 1), 2);
	fetch_all(f->p, &r);
	assert_values(&r, "kept0,kept1,new2");
}

/* A torn frame at the end of the active segment is cut on restart. */
static void test_restart_repairs_torn_tail(void **state)
{
	fixture *f = *state;
	config(f, 2);
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	produce(f->p, "m0", 1);
	produce(f->p, "m1", 1);
	replicate(f);
	flush(f);
	produce(f->p, "m2", 1);                  /* unflushed on the leader */
	char seg[256];
	snprintf(seg, sizeof(seg), "%s/broker-1/t-0/%020d.log", f->dir, 0);
	struct stat st;
	assert_int_equal(stat(seg, &st), 0);
	off_t flushed = st.st_size - (off_t)frame_size((const char *[]){ "m2" }, 1);

	crash(f, 1, true);
	assert_int_equal(stat(seg, &st), 0);
	assert_true(st.st_size > flushed);       /* a partial frame is there */

	/* The follower takes over meanwhile and goes on. */
	assert_int_equal(promote(f, 2, false), MK_OK);
	produce(f->p, "n2", 1);

	restart(f, 1);
	assert_int_equal(stat(seg, &st), 0);
	assert_int_equal(st.st_size, flushed);   /* cut to the last whole frame */
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, 2);
	assert_int_equal(leo_of(f->p, 1), 2);
	broker_fetch(f, 1);
	assert_int_equal(leo_of(f->p, 1), 3);
	assert_isr(f->p, "1 2");
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "m0,m1,n2");
	close_cluster(f);
	mk_strbuf l = MK_STRBUF_INIT;
	read_log(f, 1, "t", &l);
	records old = { 0 };
	assert_int_equal(decode_all(&l, &old), 3);
	assert_values(&old, "m0,m1,n2");
	mk_strbuf_release(&l);
}

/* ---- promotion ----------------------------------------------------------- */

static void test_promotion_rules(void **state)
{
	fixture *f = *state;
	config(f, 3);
	f->cfg.replica_lag_max_messages = 1;
	open_cluster(f);
	create(f, "t", 3, NULL, NULL);
	produce(f->p, "m0", 1);
	replicate(f);                            /* everyone has m0 */
	produce(f->p, "m1", 1);
	broker_fetch(f, 2);                      /* 2 has m1, 3 does not */
	produce(f->p, "m2", 1);
	broker_fetch(f, 2);
	assert_isr(f->p, "1 2");                 /* 3 lags by 2 > 1 */
	assert_int_equal(info(f->p).hw, 3);

	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_cluster_promote(f->c, 3, "t", 0, false, &why),
			 MK_INELIGIBLE_REPLICA);
	assert_non_null(strstr(why.buf, "ISR"));
	mk_strbuf_reset(&why);
	/* unclean is refused while the topic does not allow it */
	assert_int_equal(mk_cluster_promote(f->c, 3, "t", 0, true, &why),
			 MK_INELIGIBLE_REPLICA);
	assert_non_null(strstr(why.buf, "unclean.leader.election.enable"));
	mk_strbuf_release(&why);
	assert_int_equal(mk_cluster_promote(f->c, 9, "t", 0, false, NULL),
			 MK_UNKNOWN_BROKER);
	assert_int_equal(mk_cluster_promote(f->c, 2, "nope", 0, false, NULL),
			 MK_UNKNOWN_TOPIC_OR_PARTITION);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, 1);
	assert_int_equal(in.leader_epoch, 0);    /* nothing changed */

	/* An offline broker cannot be promoted, even in the ISR. */
	crash(f, 2, false);
	assert_int_equal(promote(f, 2, false), MK_BROKER_NOT_AVAILABLE);
	restart(f, 2);
}

/* The topic allows unclean election: the lost data is visible as lost. */
static void test_unclean_promotion_loses_data(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.replica_lag_max_messages = 1;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	produce(f->p, "m0", 1);
	replicate(f);
	produce(f->p, "m1", 1);
	produce(f->p, "m2", 1);
	assert_isr(f->p, "1");                   /* 2 lags by 2 */
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "m0,m1,m2");           /* visible: ISR is {1} */
	flush(f);
	crash(f, 1, false);
	assert_int_equal(promote(f, 2, false), MK_INELIGIBLE_REPLICA);
	assert_int_equal(promote(f, 2, true), MK_INELIGIBLE_REPLICA);

	const char *kv[] = { "unclean.leader.election.enable=true" };
	assert_int_equal(mk_cluster_topic_configure(f->c, f->t, kv, 1, NULL), MK_OK);
	assert_int_equal(promote(f, 2, false), MK_INELIGIBLE_REPLICA);
	assert_int_equal(promote(f, 2, true), MK_OK);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, 2);
	assert_int_equal(in.leader_epoch, 1);
	assert_int_equal(in.leo, 1);
	assert_int_equal(in.hw, 1);              /* what 2 lacks is gone */
	assert_isr(f->p, "2");
	fetch_all(f->p, &r);
	assert_values(&r, "m0");
	assert_int_equal(produce(f->p, "n1", 1), 1);

	/* The old leader comes back as a follower and drops m1, m2. */
	restart(f, 1);
	in = info(f->p);
	assert_int_equal(in.leader, 2);
	assert_int_equal(in.leader_epoch, 1);
	assert_int_equal(leo_of(f->p, 1), 3);
	assert_false(in_isr(f->p, 1));           /* its offsets 1, 2 differ */
	broker_fetch(f, 1);
	assert_int_equal(leo_of(f->p, 1), 2);
	assert_isr(f->p, "1 2");
	fetch_all(f->p, &r);
	assert_values(&r, "m0,n1");
	close_cluster(f);
	mk_strbuf l = MK_STRBUF_INIT;
	read_log(f, 1, "t", &l);
	records old = { 0 };
	decode_all(&l, &old);
	assert_values(&old, "m0,n1");
	mk_strbuf_release(&l);
}

/*
 * The old leader rejoins with a divergent tail that is as long as the new
 * leader's log: epoch reconciliation finds the divergence, a plain length
 * comparison would not.
 */
static void test_rejoin_truncates_divergent_tail(void **state)
{
	fixture *f = *state;
	config(f, 2);
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	produce(f->p, "m0", 1);
	replicate(f);
	produce(f->p, "old1", 1);
	produce(f->p, "old2", 1);
	flush(f);
	crash(f, 1, false);
	assert_int_equal(promote(f, 2, false), MK_OK);
	produce(f->p, "new1", 1);
	produce(f->p, "new2", 1);
	restart(f, 1);
	assert_int_equal(leo_of(f->p, 1), 3);   /* m0 old1 old2 */
	assert_int_equal(info(f->p).leo, 3);    /* m0 new1 new2 */
	/* Not in sync while its tail is not the leader's. */
	assert_false(in_isr(f->p, 1));
	assert_int_equal(info(f->p).hw, 3);
	broker_fetch(f, 1);
	assert_int_equal(leo_of(f->p, 1), 3);
	assert_isr(f->p, "1 2");
	produce(f->p, "new3", 1);
	broker_fetch(f, 1);
	close_cluster(f);
	mk_strbuf l = MK_STRBUF_INIT;
	read_log(f, 1, "t", &l);
	records old = { 0 };
	decode_all(&l, &old);
	assert_values(&old, "m0,new1,new2,new3");
	mk_strbuf_release(&l);
}

/* ---- epoch vs hw truncation ---------------------------------------------- */

/*
 * Brokers 1, 2, RF 2, min.insync 1. m0 and m1 with a fetch round after
 * each: the follower's hw_view is one round behind (1). The follower
 * crashes and restarts (hw mode cuts it to its hw_view; epoch mode keeps
 * m1), the leader crashes, the follower is promoted unclean.
 */
static void epoch_vs_hw(fixture *f, int truncation, const char *expect)
{
	config(f, 2);
	f->cfg.truncation = truncation;
	open_cluster(f);
	create(f, "t", 2, "unclean.leader.election.enable=true", NULL);
	produce(f->p, "m0", 1);
	replicate(f);
	produce(f->p, "m1", 1);
	replicate(f);
	mk_partition_info in = info(f->p);
	assert_int_equal(in.hw, 2);
	int r2 = rindex_of(&in, 2);
	assert_int_equal(in.replicas[r2].leo, 2);
	assert_int_equal(in.replicas[r2].hw_view, 1);
	flush(f);

	crash(f, 2, false);
	restart(f, 2);
	int64_t leo2 = leo_of(f->p, 2);
	assert_int_equal(leo2, truncation == MK_TRUNCATE_HW ? 1 : 2);
	crash(f, 1, false);
	assert_int_equal(promote(f, 2, true), MK_OK);
	in = info(f->p);
	assert_int_equal(in.leader, 2);
	assert_int_equal(in.leo, leo2);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, expect);
}

static void test_epoch_keeps_m1(void **state)
{
	epoch_vs_hw(*state, MK_TRUNCATE_EPOCH, "m0,m1");
}

static void test_hw_loses_m1(void **state)
{
	epoch_vs_hw(*state, MK_TRUNCATE_HW, "m0");
}

/*
 * hw mode truncates even the promoted leader to the HW; epoch mode keeps
 * the new leader's whole log.
 */
static void promoted_leader_truncation(fixture *f, int truncation,
				       int64_t leo, const char *expect)
{
	config(f, 3);
	f->cfg.truncation = truncation;
	open_cluster(f);
	create(f, "t", 3, NULL, NULL);
	produce(f->p, "m0", 1);
	replicate(f);
	produce(f->p, "m1", 1);
	broker_fetch(f, 2);                      /* 3 lacks m1: HW 1 */
	assert_int_equal(info(f->p).hw, 1);
	assert_isr(f->p, "1 2 3");
	assert_int_equal(promote(f, 2, false), MK_OK);
	assert_int_equal(info(f->p).leo, leo);
	replicate(f);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, expect);
	assert_int_equal(leo_of(f->p, 1), leo);
	assert_int_equal(leo_of(f->p, 3), leo);
}

static void test_promoted_leader_epoch(void **state)
{
	promoted_leader_truncation(*state, MK_TRUNCATE_EPOCH, 2, "m0,m1");
}

static void test_promoted_leader_hw(void **state)
{
	promoted_leader_truncation(*state, MK_TRUNCATE_HW, 1, "m0");
}

/* ---- metadata ------------------------------------------------------------ */

static void test_state_survives_reopen(void **state)
{
	fixture *f = *state;
	config(f, 3);
	open_cluster(f);
	create(f, "t", 3, NULL, NULL);
	produce(f->p, "m0", 1);
	replicate(f);
	assert_int_equal(promote(f, 2, false), MK_OK);
	assert_int_equal(promote(f, 3, false), MK_OK);
	produce(f->p, "m1", 1);
	replicate(f);
	crash(f, 1, false);
	produce(f->p, "m2", 1);
	replicate(f);
	mk_partition_info before = info(f->p);
	assert_int_equal(before.leader, 3);
	assert_int_equal(before.leader_epoch, 2);
	assert_int_equal(before.hw, 3);
	assert_isr(f->p, "2 3");

	close_cluster(f);
	open_cluster(f);
	use_topic(f, "t");
	mk_partition_info after = info(f->p);
	assert_int_equal(after.leader, 3);
	assert_int_equal(after.leader_epoch, 2);
	assert_int_equal(after.hw, 3);
	assert_int_equal(after.leo, 3);
	assert_int_equal(after.nreplicas, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(after.replicas[i].broker, before.replicas[i].broker);
	assert_isr(f->p, "2 3");
	assert_false(mk_cluster_broker_online(f->c, 1));
	assert_false(info(f->p).replicas[rindex_of(&after, 1)].online);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "m0,m1,m2");

	/* And it goes on: broker 1 rejoins and catches up. */
	restart(f, 1);
	replicate(f);
	assert_isr(f->p, "1 2 3");
	assert_int_equal(leo_of(f->p, 1), 3);
}

/*
 * Closed while the demoted leader still holds its divergent tail (as long
 * as the new leader's log): on reopen the HW must not count that tail.
 */
static void test_reopen_hw_ignores_divergent_tail(void **state)
{
	fixture *f = *state;
	config(f, 2);
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	produce(f->p, "safe", 1);
	replicate(f);
	produce(f->p, "at-risk", 1);
	assert_int_equal(promote(f, 2, false), MK_OK);
	assert_int_equal(produce(f->p, "new1", 1), 1);
	assert_int_equal(info(f->p).hw, 1);
	assert_isr(f->p, "1 2");

	close_cluster(f);
	open_cluster(f);
	use_topic(f, "t");
	mk_partition_info in = info(f->p);
	assert_int_equal(in.leader, 2);
	assert_int_equal(in.leo, 2);
	assert_int_equal(leo_of(f->p, 1), 2);
	assert_int_equal(in.hw, 1);
	records r;
	fetch_all(f->p, &r);
	assert_values(&r, "safe");
	broker_fetch(f, 1);
	assert_int_equal(info(f->p).hw, 2);
	crash(f, 2, false);
	assert_int_equal(promote(f, 1, false), MK_OK);
	fetch_all(f->p, &r);
	assert_values(&r, "safe,new1");
}

/* ---- auto mode ----------------------------------------------------------- */

typedef struct {
	mk_partition *p;
	int64_t leo;
	int nbrokers;
} caught_up;

static bool all_caught_up(void *arg)
{
	caught_up *c = arg;
	mk_partition_info in = info(c->p);
	for (int b = 1; b <= c->nbrokers; b++)
		if (in.replicas[rindex_of(&in, b)].leo != c->leo)
			return false;
	return in.hw == c->leo;
}

/* One workload; in auto mode nothing calls a fetch round. */
static void workload(fixture *f, bool manual, mk_partition_info *end,
		     records *r)
{
	config(f, 3);
	f->cfg.auto_replication = !manual;
	f->cfg.fetch_interval_ms = 2;
	f->cfg.replica_fetch_max_bytes = 1;
	open_cluster(f);
	mk_cluster_start(f->c);
	create(f, "t", 3, NULL, NULL);
	const char *b0[] = { "a", "b" }, *b1[] = { "c" }, *b2[] = { "d", "e", "f" };
	assert_int_equal(produce_n(f->p, b0, 2, 1, NULL), MK_OK);
	assert_int_equal(produce_n(f->p, b1, 1, 1, NULL), MK_OK);
	assert_int_equal(produce_n(f->p, b2, 3, 1, NULL), MK_OK);
	caught_up cu = { f->p, 6, 3 };
	if (manual) {
		for (int i = 0; i < 3; i++)
			replicate(f);
		assert_true(all_caught_up(&cu));
	} else {
		assert_true(poll_until(all_caught_up, &cu));
		/* acks=all completes with nobody calling a fetch round. */
		assert_int_equal(produce(f->p, "g", -1), 6);
		cu.leo = 7;
		assert_true(poll_until(all_caught_up, &cu));
	}
	if (manual) {
		async_produce a;
		start_produce(&a, f->p, "g");
		replicate(f);
		assert_int_equal(finish_produce(&a), MK_OK);
		assert_int_equal(a.base, 6);
		replicate(f);
		cu.leo = 7;
		assert_true(all_caught_up(&cu));
	}
	*end = info(f->p);
	fetch_all(f->p, r);
	close_cluster(f);      /* stops and joins the fetchers */
}

static void test_auto_matches_manual(void **state)
{
	fixture *f = *state;
	mk_partition_info man, aut;
	records rm, ra;
	workload(f, true, &man, &rm);
	mk_remove_tree(f->dir);
	workload(f, false, &aut, &ra);
	assert_int_equal(man.leo, 7);
	assert_int_equal(aut.leo, man.leo);
	assert_int_equal(aut.hw, man.hw);
	assert_int_equal(aut.leader, man.leader);
	assert_int_equal(aut.leader_epoch, man.leader_epoch);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(aut.replicas[i].broker, man.replicas[i].broker);
		assert_int_equal(aut.replicas[i].leo, man.replicas[i].leo);
		assert_int_equal(aut.replicas[i].in_isr, man.replicas[i].in_isr);
		assert_true(aut.replicas[i].in_isr);
	}
	char a[256], m[256];
	assert_string_equal(joined(&ra, a, sizeof(a)), joined(&rm, m, sizeof(m)));
	assert_string_equal(a, "a,b,c,d,e,f,g");
}

/*
 * The manual clock is bounded by MK_CLOCK_MAX_MS (year 9999): an advance
 * or a set past it is refused and changes nothing (INT64_MAX used to be
 * accepted and saved); the bound itself is reachable and survives a
 * reopen.
 */
static void test_clock_advance_cannot_wrap(void **state)
{
	fixture *f = *state;
	config(f, 1);
	open_cluster(f);
	assert_int_equal(mk_cluster_clock_set(f->c, 1000, NULL), MK_OK);
	assert_int_equal(mk_cluster_clock_advance(f->c, INT64_MAX, NULL),
			 MK_INVALID_REQUEST);
	assert_int_equal(mk_cluster_clock_set(f->c, INT64_MAX, NULL),
			 MK_INVALID_REQUEST);
	assert_int_equal(mk_cluster_clock_set(f->c, MK_CLOCK_MAX_MS + 1, NULL),
			 MK_INVALID_REQUEST);
	assert_int_equal(mk_cluster_clock_advance(f->c, MK_CLOCK_MAX_MS, NULL),
			 MK_INVALID_REQUEST);
	assert_int_equal(mk_clock_now(&f->c->clock), 1000);
	assert_int_equal(mk_cluster_clock_advance(f->c, MK_CLOCK_MAX_MS - 1000, NULL),
			 MK_OK);
	assert_int_equal(mk_cluster_clock_advance(f->c, 1, NULL),
			 MK_INVALID_REQUEST);
	close_cluster(f);
	open_cluster(f);
	assert_int_equal(mk_clock_now(&f->c->clock), MK_CLOCK_MAX_MS);
}

/*
 * The event API: a watcher fires once at the next change (and at once
 * when armed behind the change count), unwatch disarms it; an acks=all
 * ticket is answered by mk_partition_ack_check without any thread
 * waiting: pending until the follower fetches, REQUEST_TIMED_OUT once the
 * manual clock passes the deadline.
 */
typedef struct {
	mk_watch w;
	int fired;
} counting_watch;

static void count_fire(mk_watch *w)
{
	((counting_watch *)w)->fired++;
}

static mk_err produce_deferred(mk_partition *p, const char *val,
			       mk_produce_result *res)
{
	const char *vals[1] = { val };
	mk_strbuf b = MK_STRBUF_INIT;
	build(&b, vals, 1);
	mk_produce_args a = { .acks = -1, .seq = -1, .count = 1 };
	mk_err err = mk_partition_produce(p, (uint8_t *)b.buf, b.len, &a,
					  res, NULL);
	mk_strbuf_release(&b);
	return err;
}

static void test_watch_and_ack_check(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.request_timeout_ms = 500;
	f->cfg.replica_lag_time_max_ms = 10000;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	counting_watch cw = { .w.fn = count_fire };

	uint64_t seen = mk_partition_seq(f->p);
	mk_partition_watch(f->p, &cw.w, seen);
	assert_int_equal(cw.fired, 0);
	mk_produce_result res;
	assert_int_equal(produce_deferred(f->p, "a", &res), MK_OK);
	assert_true(res.pending);
	assert_int_equal(cw.fired, 1);          /* the append fired it, once */
	mk_partition_wake(f->p);
	assert_int_equal(cw.fired, 1);          /* one-shot */
	mk_partition_watch(f->p, &cw.w, seen);  /* armed behind: fires at once */
	assert_int_equal(cw.fired, 2);

	bool pending;
	seen = mk_partition_seq(f->p);
	assert_int_equal(mk_partition_ack_check(f->p, &res.ticket, &pending, NULL), MK_OK);
	assert_true(pending);
	mk_partition_watch(f->p, &cw.w, seen);
	broker_fetch(f, 2);
	assert_int_equal(cw.fired, 3);          /* the fetch fired it */
	assert_int_equal(mk_partition_ack_check(f->p, &res.ticket, &pending, NULL), MK_OK);
	assert_false(pending);

	/* Disarmed: no call after unwatch. */
	mk_partition_watch(f->p, &cw.w, mk_partition_seq(f->p));
	mk_partition_unwatch(f->p, &cw.w);
	mk_partition_wake(f->p);
	assert_int_equal(cw.fired, 3);

	/* A manual clock advance fires the watcher and times the ticket out. */
	assert_int_equal(produce_deferred(f->p, "b", &res), MK_OK);
	mk_partition_watch(f->p, &cw.w, mk_partition_seq(f->p));
	advance(f, 499);
	assert_int_equal(cw.fired, 4);
	assert_int_equal(mk_partition_ack_check(f->p, &res.ticket, &pending, NULL), MK_OK);
	assert_true(pending);
	advance(f, 1);
	assert_int_equal(mk_partition_ack_check(f->p, &res.ticket, &pending, NULL),
			 MK_REQUEST_TIMED_OUT);
	assert_false(pending);
}

/* ---- directories --------------------------------------------------------- */

static bool topdir_flag(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	int flags = 0;
	bool set = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
		   (flags & FS_TOPDIR_FL);
	close(fd);
	return set;
}

/*
 * In auto mode the message-lag rule takes a follower out of the ISR only
 * at the leader's periodic check (every replica.lag.time.max.ms, as
 * Kafka 0.8's isr-expiration task): behind by more than the bound between
 * two checks, it stays; behind at a check, it leaves; it joins again only
 * within the bound. (The fetchers are not started: the fixture fetches.)
 */
static void test_isr_offset_lag_checked_periodically(void **state)
{
	fixture *f = *state;
	config(f, 2);
	f->cfg.auto_replication = 1;
	f->cfg.replica_lag_max_messages = 2;
	f->cfg.replica_lag_time_max_ms = 1000;
	open_cluster(f);
	create(f, "t", 2, NULL, NULL);
	for (int i = 0; i < 3; i++)
		produce(f->p, "m", 1);
	assert_isr(f->p, "1 2");                 /* lag 3, no check yet */
	assert_int_equal(info(f->p).hw, 0);      /* 2 still holds it */
	broker_fetch(f, 2);                      /* caught up in time */
	assert_int_equal(info(f->p).hw, 3);
	advance(f, 1000);                        /* a check: lag 0 */
	assert_isr(f->p, "1 2");
	assert_int_equal(info(f->p).isr_shrinks, 0);
	for (int i = 0; i < 3; i++)
		produce(f->p, "n", 1);
	broker_fetch(f, 2);                      /* fresh, not lagging in time */
	for (int i = 0; i < 3; i++)
		produce(f->p, "o", 1);
	advance(f, 999);
	assert_isr(f->p, "1 2");                 /* lag 3, the check is due at 2000 */
	advance(f, 1);
	assert_isr(f->p, "1");                   /* lag 3 at the check: out */
	assert_int_equal(info(f->p).isr_shrinks, 1);
	assert_int_equal(info(f->p).hw, 9);
	broker_fetch(f, 2);                      /* within the bound: back */
	assert_isr(f->p, "1 2");
	assert_int_equal(info(f->p).isr_expands, 1);
}

/*
 * Auto mode, between two lag checks: an ISR member more than
 * replica.lag.max.messages behind still counts for acks=all and holds the
 * HW back; the waiting writer is answered by the first of: the member
 * catching up (OK, no shrink), the check at replica.lag.time.max.ms
 * (it leaves: OK, or NOT_ENOUGH_REPLICAS_AFTER_APPEND below
 * min.insync.replicas), request.timeout.ms (REQUEST_TIMED_OUT, still in).
 * Broker 3 fetches one batch per round; broker 2 keeps up.
 */
enum { SLOW_CATCHES_UP, SLOW_CHECKED, SLOW_CHECKED_MIN3, SLOW_TIMES_OUT };

static bool produce_done(void *arg)
{
	return atomic_load(&((async_produce *)arg)->done);
}

/* The writer's answer, failing (bounded) rather than hanging. */
static mk_err answer(async_produce *a)
{
	assert_true(poll_until(produce_done, a));
	return finish_produce(a);
}

static void slow_member_between_checks(void **state, int how)
{
	fixture *f = *state;
	config(f, 3);
	f->cfg.auto_replication = 1;
	f->cfg.replica_lag_max_messages = 2;
	f->cfg.replica_lag_time_max_ms = 1000;
	f->cfg.replica_fetch_max_bytes = 1;
	f->cfg.log.min_insync_replicas = how == SLOW_CHECKED_MIN3 ? 3 : 2;
	if (how == SLOW_TIMES_OUT)
		f->cfg.request_timeout_ms = 300;
	open_cluster(f);
	create(f, "t", 3, NULL, NULL);
	for (int i = 0; i < 3; i++)
		produce(f->p, "m", 1);
	for (int i = 0; i < 3; i++)
		broker_fetch(f, 2);
	advance(f, 500);
	async_produce a;
	start_produce(&a, f->p, "all");          /* target 4 */
	broker_fetch(f, 2);
	broker_fetch(f, 3);                      /* 3 has 1 of 4: lag 3 */
	assert_isr(f->p, "1 2 3");               /* no check before 1000 */
	assert_int_equal(info(f->p).hw, 1);      /* 3 holds it back */
	switch (how) {
	case SLOW_CATCHES_UP:
		for (int i = 0; i < 3; i++)
			broker_fetch(f, 3);
		assert_int_equal(answer(&a), MK_OK);
		assert_int_equal(a.base, 3);
		advance(f, 500);                 /* the check finds lag 0 */
		assert_isr(f->p, "1 2 3");
		assert_int_equal(info(f->p).isr_shrinks, 0);
		assert_int_equal(info(f->p).hw, 4);
		return;
	case SLOW_TIMES_OUT:
		advance(f, 300);                 /* 300 ms after the append */
		assert_int_equal(answer(&a), MK_REQUEST_TIMED_OUT);
		assert_isr(f->p, "1 2 3");       /* still no check */
		assert_int_equal(info(f->p).hw, 1);
		return;
	default:
		break;
	}
	broker_fetch(f, 2);                      /* 2 stays fresh */
	advance(f, 499);
	assert_isr(f->p, "1 2 3");
	advance(f, 1);                           /* the check: 3 is out */
	assert_int_equal(answer(&a),
			 how == SLOW_CHECKED ? MK_OK : MK_NOT_ENOUGH_REPLICAS_AFTER_APPEND);
	assert_isr(f->p, "1 2");
	assert_int_equal(info(f->p).isr_shrinks, 1);
	assert_int_equal(info(f->p).hw, 4);      /* the batch stays, committed */
	/* Out, it joins again at any time, once it covers the HW. */
	broker_fetch(f, 3);                      /* 2 of 4: below the HW */
	assert_isr(f->p, "1 2");
	broker_fetch(f, 3);
	broker_fetch(f, 3);
	assert_isr(f->p, "1 2 3");
	assert_int_equal(info(f->p).isr_expands, 1);
}

/*
 * The message-lag check's schedule is the partition's: a promotion
 * neither checks at once nor starts a new period (docs/filesystem.md,
 * "Decision (ISR, the message-lag rule)").
 */
static void test_isr_lag_check_schedule_survives_promotion(void **state)
{
	fixture *f = *state;
	config(f, 3);
	f->cfg.auto_replication = 1;
	f->cfg.replica_lag_max_messages = 2;
	f->cfg.replica_lag_time_max_ms = 1000;
	open_cluster(f);
	create(f, "t", 3, NULL, NULL);
	for (int i = 0; i < 3; i++)
		produce(f->p, "m", 1);
	broker_fetch(f, 2);
	advance(f, 600);
	broker_fetch(f, 2);
	assert_int_equal(promote(f, 2, false), MK_OK);
	assert_int_equal(info(f->p).leader, 2);
	assert_isr(f->p, "1 2 3");               /* 3 lags 3, no check yet */
	assert_int_equal(info(f->p).hw, 0);
	advance(f, 399);
	assert_isr(f->p, "1 2 3");
	advance(f, 1);                           /* 1000: the check */
	assert_isr(f->p, "1 2");
	assert_int_equal(info(f->p).hw, 3);
	assert_int_equal(info(f->p).isr_shrinks, 1);
}

static void test_isr_slow_member_catches_up_before_check(void **state)
{
	slow_member_between_checks(state, SLOW_CATCHES_UP);
}

static void test_isr_slow_member_leaves_at_check(void **state)
{
	slow_member_between_checks(state, SLOW_CHECKED);
}

static void test_isr_slow_member_leaves_below_min_isr(void **state)
{
	slow_member_between_checks(state, SLOW_CHECKED_MIN3);
}

static void test_isr_slow_member_request_times_out(void **state)
{
	slow_member_between_checks(state, SLOW_TIMES_OUT);
}

/*
 * Every broker directory a topic creation makes is marked so that the file
 * system spreads its partition directories (ext4's Orlov top-directory
 * hint): on a file system that takes the mark (the probe says), both
 * replicas' broker directories carry it; elsewhere creation works alike.
 * A broker directory made without it gets it at the next open.
 */
static void test_broker_dirs_spread_partitions(void **state)
{
	fixture *f = *state;
	char probe[160];
	snprintf(probe, sizeof(probe), "%s/probe", f->root);
	assert_int_equal(mkdir(probe, 0755), 0);
	/* Taken and kept (a file system could accept the call and drop
	 * the flag: the mark is a hint, and this test then checks its
	 * absence). */
	bool supported = mk_dir_spread_subdirs(probe) && topdir_flag(probe);
	config(f, 3);
	open_cluster(f);
	create(f, "spread", 2, NULL, NULL);
	char b1[160];
	snprintf(b1, sizeof(b1), "%s/broker-1", f->dir);
	int made = 0;
	for (int b = 1; b <= 3; b++) {
		char bd[160];
		snprintf(bd, sizeof(bd), "%s/broker-%d", f->dir, b);
		struct stat sb;
		if (stat(bd, &sb) == 0) {
			made++;
			assert_int_equal(topdir_flag(bd), supported);
		}
	}
	assert_int_equal(made, 2);
	if (!supported)
		return;
	/* Unmarked (as an older version left it): marked again at open. */
	close_cluster(f);
	int fd = open(b1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	int flags = 0;
	assert_int_equal(ioctl(fd, FS_IOC_GETFLAGS, &flags), 0);
	flags &= ~FS_TOPDIR_FL;
	assert_int_equal(ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);
	close(fd);
	assert_false(topdir_flag(b1));
	open_cluster(f);
	use_topic(f, "spread");
	assert_true(topdir_flag(b1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_follower_fetch_batches),
		T(test_broker_dirs_spread_partitions),
		T(test_isr_offset_lag_checked_periodically),
		T(test_isr_counters_crash_and_unclean),
		T(test_isr_lag_check_schedule_survives_promotion),
		T(test_isr_shrinks_count_replicas),
		T(test_isr_slow_member_catches_up_before_check),
		T(test_isr_slow_member_leaves_at_check),
		T(test_isr_slow_member_leaves_below_min_isr),
		T(test_isr_slow_member_request_times_out),
		T(test_watch_and_ack_check),
		T(test_reads_stop_at_hw),
		T(test_acks_0_and_1),
		T(test_seed_lab_epoch),
		T(test_seed_lab_hw),
		T(test_acks_all_after_promotion_waits_for_old_leader),
		T(test_not_enough_replicas),
		T(test_not_enough_replicas_after_append),
		T(test_request_timed_out),
		T(test_fenced_leader_epoch),
		T(test_isr_time_lag),
		T(test_isr_offset_lag),
		T(test_isr_offset_lag_saved_by_append),
		T(test_isr_snapshot_only_reads),
		T(test_isr_check_on_clock_and_fetch_round),
		T(test_isr_check_task_auto_mode),
		T(test_isr_reentry_needs_hw),
		T(test_crash_loses_unflushed_tail),
		T(test_restart_repairs_torn_tail),
		T(test_promotion_rules),
		T(test_unclean_promotion_loses_data),
		T(test_rejoin_truncates_divergent_tail),
		T(test_epoch_keeps_m1),
		T(test_hw_loses_m1),
		T(test_promoted_leader_epoch),
		T(test_promoted_leader_hw),
		T(test_state_survives_reopen),
		T(test_reopen_hw_ignores_divergent_tail),
		T(test_auto_matches_manual),
		T(test_clock_advance_cannot_wrap),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
