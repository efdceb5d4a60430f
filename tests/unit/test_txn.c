/*
 * Unit tests of transactions: the aborted-transaction index
 * (core/storage/txnindex.c), a fetch reduced to what its reader sees
 * (core/storage/visible.c), the producer state's open transactions and its
 * snapshot (core/storage/producer_state.c), and the coordinator (core/coordination/txn.c):
 * its state machine, the LSO and read_committed fetches it leads to,
 * fencing by init, offsets committed only with the transaction, timeouts
 * on the manual clock, and recovery from every state by a crash (SIGKILL
 * from a failpoint in a forked child) at each step of an end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster.h"
#include "codec.h"
#include "failpoint.h"
#include "group.h"
#include "producer.h"
#include "producer_state.h"
#include "testlib.h"
#include "txn.h"
#include "txnindex.h"
#include "visible.h"

/* ---- the index and the producer state ---------------------------------- */

static mk_batch_view view(uint16_t flags, int64_t pid, int64_t base,
			  int32_t delta)
{
	mk_batch_view b;
	memset(&b, 0, sizeof(b));
	b.meta.flags = flags;
	b.meta.producer_id = pid;
	b.meta.producer_epoch = 0;
	b.meta.base_sequence = (flags & (MK_BATCH_COMMIT_MARKER | MK_BATCH_ABORT_MARKER)) ? -1 : 0;
	b.meta.base_offset = base;
	b.last_offset_delta = delta;
	return b;
}

static void test_index(void **state)
{
	(void)state;
	mk_aborted_list l, r;
	mk_aborted_init(&l);
	mk_aborted_init(&r);
	mk_aborted_add(&l, &(mk_aborted_txn){ 7, 0, 4, 5 });
	mk_aborted_add(&l, &(mk_aborted_txn){ 8, 2, 9, 10 });
	mk_aborted_add(&l, &(mk_aborted_txn){ 7, 10, 12, 13 });
	mk_aborted_range(&l, 5, 10, &r);
	assert_int_equal(r.n, 1);       /* [2, 9] only: [0,4] ends before, [10,12] starts at the end */
	assert_int_equal(r.v[0].pid, 8);
	mk_aborted_range(&l, 0, 100, &r);
	assert_int_equal(r.n, 3);
	mk_batch_view b = view(MK_BATCH_TRANSACTIONAL, 8, 3, 0);
	assert_true(mk_aborted_hides(&l, &b));
	b = view(MK_BATCH_TRANSACTIONAL, 7, 5, 0);     /* between 7's two */
	assert_false(mk_aborted_hides(&l, &b));
	b = view(0, 8, 3, 0);                          /* not transactional */
	assert_false(mk_aborted_hides(&l, &b));
	b = view(MK_BATCH_TRANSACTIONAL, 7, 11, 0);
	assert_true(mk_aborted_hides(&l, &b));
	/* Kafka's .txnindex bytes: the entries whose marker is in [4, 12). */
	mk_strbuf bytes = MK_STRBUF_INIT;
	mk_txnindex_encode(&l, 4, 12, &bytes);
	/* version 0, then producerId, firstOffset, lastOffset and
	 * lastStableOffset as big-endian i64s */
#define BE64(v) 0, 0, 0, 0, 0, 0, 0, v
	static const uint8_t want[2 * MK_TXNINDEX_ENTRY] = {
		0, 0, BE64(7), BE64(0), BE64(4), BE64(5),
		0, 0, BE64(8), BE64(2), BE64(9), BE64(10),
	};
#undef BE64
	assert_int_equal(bytes.len, sizeof(want));
	assert_memory_equal(bytes.buf, want, sizeof(want));
	mk_strbuf_reset(&bytes);
	mk_txnindex_encode(&l, 13, INT64_MAX, &bytes);
	assert_int_equal(bytes.len, 0);
	mk_strbuf_release(&bytes);

	mk_aborted_trim(&l, 5);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.v[0].first, 2);
	mk_aborted_free(&l);
	mk_aborted_free(&r);
}

/* ---- a fetch reduced to what its reader sees (visible.h) ----------------- */

/* One batch of n records from base: pid -1 plain, else transactional of
 * that producer; marker a control batch of that kind (n ignored). */
static void put_batch(mk_strbuf *out, int64_t base, int n, int64_t pid,
		      uint16_t marker)
{
	mk_batch_meta m = {
		.flags = pid >= 0 ? MK_BATCH_TRANSACTIONAL | marker : 0,
		.base_offset = base, .leader_epoch = 0, .producer_id = pid,
		.producer_epoch = pid >= 0 ? 0 : -1,
		.base_sequence = pid >= 0 && !marker ? 0 : -1,
	};
	if (marker) {
		mk_frame_marker(out, &m, 1);
		return;
	}
	mk_batch_builder b;
	mk_builder_init(&b, &m);
	for (int i = 0; i < n; i++) {
		char v[16];
		snprintf(v, sizeof(v), "%lld", (long long)(base + i));
		mk_builder_add(&b, 1, MK_BYTES_NULL, mk_bytes_of(v, strlen(v)),
			       NULL, 0);
	}
	mk_builder_finish(&b);
	mk_strbuf_add(out, b.frame.buf, b.frame.len);
	mk_builder_release(&b);
}

static void seen_record(void *arg, const mk_record_view *rec)
{
	mk_strbuf_addf(arg, "%lld ", (long long)rec->offset);
}

static size_t seen_batch(void *arg, const mk_batch_view *b, int64_t from,
			 int64_t end, size_t max, int64_t *next)
{
	return mk_visible_records(b, from, end, max, seen_record, arg, next);
}

/* The offsets f shows from *pos on, at most max; *pos moved. */
static const char *shown(const mk_fetched *f, size_t max, int64_t *pos,
			 mk_strbuf *out)
{
	mk_strbuf_reset(out);
	mk_visible_batches(f, max, pos, seen_batch, out);
	return out->len ? out->buf : "";
}

/*
 * Data 0-1, producer 7's aborted 2-3 and its ABORT marker at 4, producer
 * 8's committed 5-6 and its COMMIT marker at 7, data 8-10: markers are
 * never shown, the aborted list hides 2-3, nothing at or past the visible
 * end is shown and the position stops there, and it moves past hidden
 * batches but not past one the reader had no room for.
 */
static void test_visible(void **state)
{
	(void)state;
	mk_strbuf frames = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	put_batch(&frames, 0, 2, -1, 0);
	put_batch(&frames, 2, 2, 7, 0);
	put_batch(&frames, 4, 1, 7, MK_BATCH_ABORT_MARKER);
	put_batch(&frames, 5, 2, 8, 0);
	put_batch(&frames, 7, 1, 8, MK_BATCH_COMMIT_MARKER);
	put_batch(&frames, 8, 3, -1, 0);
	mk_aborted_list ab;
	mk_aborted_init(&ab);
	mk_aborted_add(&ab, &(mk_aborted_txn){ 7, 2, 4, 5 });
	int64_t pos = 0;

	/* read_uncommitted: the aborted data too, the markers never. */
	mk_fetched f = { frames.buf, frames.len, 100, NULL };
	assert_string_equal(shown(&f, SIZE_MAX, &pos, &out), "0 1 2 3 5 6 8 9 10 ");
	assert_int_equal(pos, 11);
	/* read_committed: the aborted transaction hidden. */
	f.aborted = &ab;
	pos = 0;
	assert_string_equal(shown(&f, SIZE_MAX, &pos, &out), "0 1 5 6 8 9 10 ");
	assert_int_equal(pos, 11);
	/* From inside a batch. */
	pos = 9;
	assert_string_equal(shown(&f, SIZE_MAX, &pos, &out), "9 10 ");
	assert_int_equal(pos, 11);
	/* Clamped at a visible end inside a batch, and at one on a batch's
	 * start (past the COMMIT marker: the position moves over it). */
	f.visible = 9;
	pos = 0;
	assert_string_equal(shown(&f, SIZE_MAX, &pos, &out), "0 1 5 6 8 ");
	assert_int_equal(pos, 9);
	f.visible = 8;
	pos = 0;
	assert_string_equal(shown(&f, SIZE_MAX, &pos, &out), "0 1 5 6 ");
	assert_int_equal(pos, 8);
	/* Nothing visible past the position: nothing, the position stays. */
	pos = 8;
	assert_string_equal(shown(&f, SIZE_MAX, &pos, &out), "");
	assert_int_equal(pos, 8);
	/* At most 3: over the hidden batch and the marker, not past 5's
	 * batch, whose 6 is left for the next read. */
	f.visible = 100;
	pos = 0;
	assert_string_equal(shown(&f, 3, &pos, &out), "0 1 5 ");
	assert_int_equal(pos, 6);
	assert_string_equal(shown(&f, 3, &pos, &out), "6 8 9 ");
	assert_int_equal(pos, 10);
	/* A partial last frame: the whole ones only. */
	f.len = frames.len - 3;
	pos = 0;
	assert_string_equal(shown(&f, SIZE_MAX, &pos, &out), "0 1 5 6 ");
	assert_int_equal(pos, 8);
	/* An empty fetch. */
	f.len = 0;
	pos = 0;
	assert_string_equal(shown(&f, SIZE_MAX, &pos, &out), "");
	assert_int_equal(pos, 0);
	mk_aborted_free(&ab);
	mk_strbuf_release(&frames);
	mk_strbuf_release(&out);
}

static void test_pstate(void **state)
{
	(void)state;
	mk_producer_state ps, back;
	mk_pstate_init(&ps);
	mk_pstate_init(&back);
	mk_batch_view b = view(0, 5, 0, 1);          /* plain idempotent */
	mk_pstate_apply(&ps, &b);
	assert_int_equal(mk_pstate_first_open(&ps), INT64_MAX);
	b = view(MK_BATCH_TRANSACTIONAL, 7, 2, 1);   /* 7 opens at 2 */
	mk_pstate_apply(&ps, &b);
	b = view(MK_BATCH_TRANSACTIONAL, 8, 4, 0);   /* 8 opens at 4 */
	mk_pstate_apply(&ps, &b);
	b = view(MK_BATCH_TRANSACTIONAL, 7, 5, 0);
	mk_pstate_apply(&ps, &b);
	assert_int_equal(mk_pstate_first_open(&ps), 2);
	b = view(MK_BATCH_TRANSACTIONAL | MK_BATCH_ABORT_MARKER, 7, 6, 0);
	mk_pstate_apply(&ps, &b);
	assert_int_equal(mk_pstate_first_open(&ps), 4);
	assert_int_equal(ps.aborted.n, 1);
	assert_int_equal(ps.aborted.v[0].first, 2);
	assert_int_equal(ps.aborted.v[0].last, 6);
	assert_int_equal(ps.aborted.v[0].lso, 4);    /* 8's still open */

	/* The snapshot keeps the open transaction and the aborted one. */
	mk_strbuf text = MK_STRBUF_INIT, again = MK_STRBUF_INIT;
	mk_pstate_format(&ps, &text);
	assert_int_equal(mk_pstate_parse(&back, text.buf), MK_OK);
	mk_pstate_format(&back, &again);
	assert_string_equal(text.buf, again.buf);
	assert_int_equal(mk_pstate_first_open(&back), 4);
	assert_int_equal(back.aborted.n, 1);

	b = view(MK_BATCH_TRANSACTIONAL | MK_BATCH_COMMIT_MARKER, 8, 7, 0);
	mk_pstate_apply(&ps, &b);
	assert_int_equal(mk_pstate_first_open(&ps), INT64_MAX);
	assert_int_equal(ps.aborted.n, 1);           /* a commit adds nothing */

	/* A snapshot of before the LSO field: 0, which can only be too low. */
	assert_int_equal(mk_pstate_parse(&back, "producer-snapshot 2\ncovered_to 7\naborted 4 1 6\n"), MK_OK);
	assert_int_equal(back.aborted.v[0].lso, 0);
	assert_int_not_equal(mk_pstate_parse(&back, "producer-snapshot 2\ncovered_to 7\naborted 4 1 6 8\n"), MK_OK);

	/* Malformed transaction lines are damage. */
	assert_int_not_equal(mk_pstate_parse(&back, "producer-snapshot 2\ncovered_to 5\nopen 4 1\n"), MK_OK);
	assert_int_not_equal(mk_pstate_parse(&back, "producer-snapshot 2\ncovered_to 5\naborted 4 3 2\n"), MK_OK);
	assert_int_not_equal(mk_pstate_parse(&back, "producer-snapshot 2\ncovered_to 9\naborted 4 1 5\naborted 4 1 3\n"), MK_OK);
	assert_int_equal(mk_pstate_parse(&back, "producer-snapshot 1\ncovered_to 5\nproducer 4 0\n"), MK_OK);
	mk_strbuf_release(&text);
	mk_strbuf_release(&again);
	mk_pstate_free(&ps);
	mk_pstate_free(&back);
}

/* ---- the coordinator ----------------------------------------------------- */

typedef struct {
	char dir[64];
	mk_config cfg;
	mk_cluster *c;
	mk_groups *g;
	mk_txns *t;
	mk_producers *ps;
} fixture;

static void open_all(fixture *f)
{
	f->c = tl_cluster_open(f->dir, &f->cfg);
	assert_int_equal(mk_groups_open(f->c, &f->g, NULL), MK_OK);
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_txns_open(f->c, f->g, &f->t, &why), MK_OK);
	mk_txns_recover(f->t);
	mk_strbuf_release(&why);
	f->ps = mk_producers_new(f->c);
}

static void close_all(fixture *f)
{
	mk_producers_free(f->ps);
	mk_txns_close(f->t);
	mk_groups_close(f->g);
	mk_cluster_close(f->c);
	f->ps = NULL;
	f->t = NULL;
	f->g = NULL;
	f->c = NULL;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	tl_tmpdir(f->dir, sizeof(f->dir), "txn");
	tl_config(&f->cfg, 1);
	open_all(f);
	tl_create_topic(f->c, "t", 2, 1, NULL, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	if (f->c)
		close_all(f);
	tl_rmtree(f->dir);
	free(f);
	return 0;
}

static mk_producer *txn_producer(fixture *f, const char *id, int partition)
{
	mk_topic *t = mk_cluster_topic(f->c, "t");
	assert_non_null(t);
	mk_producer_opts o = { .acks = MK_PRODUCER_ACKS_DEFAULT, .seq = -1,
			       .txn = id, .txns = f->t };
	mk_producer *p = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_producer_open(f->ps, t, partition, &o, &p, &why), MK_OK);
	mk_strbuf_release(&why);
	mk_topic_put(t);
	return p;
}

static mk_err send(fixture *f, mk_producer *p, const char *v1, const char *v2)
{
	mk_record_in r[2] = {
		{ MK_BYTES_NULL, mk_bytes_of(v1, strlen(v1)), NULL, 0 },
		{ MK_BYTES_NULL, v2 ? mk_bytes_of(v2, strlen(v2)) : MK_BYTES_NULL, NULL, 0 },
	};
	size_t taken;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = tl_producer_send(f->c, p, r, v2 ? 2 : 1, &taken, &why);
	mk_strbuf_release(&why);
	return err;
}

static mk_partition_info info(fixture *f, int partition)
{
	mk_topic *t = mk_cluster_topic(f->c, "t");
	mk_partition_info pi;
	mk_partition_info_get(mk_topic_partition(t, partition), &pi);
	mk_topic_put(t);
	return pi;
}

/* The values read_committed (or not) returns from partition 0, joined. */
static void read_values(fixture *f, int partition, bool committed, mk_strbuf *out)
{
	mk_topic *t = mk_cluster_topic(f->c, "t");
	mk_partition *p = mk_topic_partition(t, partition);
	mk_strbuf buf = MK_STRBUF_INIT;
	mk_aborted_list ab;
	mk_aborted_init(&ab);
	int64_t visible;
	mk_strbuf_reset(out);
	assert_int_equal(mk_partition_fetch_isolated(p, 0, 1 << 20, committed ? &ab : NULL,
						     &buf, &visible, NULL), MK_OK);
	size_t pos = 0;
	mk_batch_view b;
	while (pos < buf.len &&
	       !mk_frame_decode_header((const uint8_t *)buf.buf + pos, buf.len - pos,
				       0, false, &b, NULL)) {
		pos += b.frame_len;
		if (mk_batch_is_control(&b) || (committed && mk_aborted_hides(&ab, &b)))
			continue;
		mk_record_iter it;
		mk_record_view rec;
		mk_record_iter_init(&it, &b);
		while (mk_record_next(&it, &rec))
			if (rec.offset < visible)
				mk_strbuf_addf(out, "%.*s ", (int)rec.value.len, rec.value.ptr);
	}
	mk_aborted_free(&ab);
	mk_strbuf_release(&buf);
	mk_topic_put(t);
}

static mk_txn_state state_of(fixture *f, const char *id)
{
	mk_txn_info ti;
	assert_int_equal(mk_txn_describe(f->t, id, &ti, NULL), MK_OK);
	mk_txn_state s = ti.state;
	mk_txn_info_free(&ti);
	return s;
}

static void test_commit_abort(void **state)
{
	fixture *f = *state;
	mk_strbuf why = MK_STRBUF_INIT, v = MK_STRBUF_INIT;
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, &why), &why), MK_OK);
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_TRANSACTION_ALREADY_EXISTS);
	assert_int_equal(tl_done(mk_txn_create(f->t, "a:b", &tl_call, NULL), NULL), MK_INVALID_REQUEST);
	mk_txn_info ti;
	assert_int_equal(mk_txn_describe(f->t, "tx", &ti, NULL), MK_OK);
	assert_int_equal(ti.state, MK_TXN_EMPTY);
	assert_true(ti.pid >= MK_TXN_PID_BASE);
	assert_int_equal(ti.epoch, 0);
	mk_txn_info_free(&ti);
	/* Nothing open: commit and abort change nothing. */
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", true, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(state_of(f, "tx"), MK_TXN_EMPTY);

	mk_producer *p = txn_producer(f, "tx", 0);
	assert_int_equal(send(f, p, "a", "b"), MK_OK);
	assert_int_equal(state_of(f, "tx"), MK_TXN_ONGOING);
	mk_partition_info pi = info(f, 0);
	assert_int_equal(pi.hw, 2);
	assert_int_equal(pi.lso, 0);              /* held by the open transaction */
	read_values(f, 0, true, &v);
	assert_string_equal(v.buf, "");
	read_values(f, 0, false, &v);
	assert_string_equal(v.buf, "a b ");
	/* A second transactional id on the same partition. */
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx2", &tl_call, NULL), NULL), MK_OK);
	mk_producer *p2 = txn_producer(f, "tx2", 0);
	assert_int_equal(send(f, p2, "x", NULL), MK_OK);

	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", true, &tl_call, &why), &why), MK_OK);
	assert_int_equal(state_of(f, "tx"), MK_TXN_COMPLETE_COMMIT);
	pi = info(f, 0);
	assert_int_equal(pi.leo, 4);              /* a, b, x, the marker */
	assert_int_equal(pi.lso, 2);              /* tx2 still open at 2 */
	read_values(f, 0, true, &v);
	assert_string_equal(v.buf, "a b ");

	assert_int_equal(tl_done(mk_txn_end(f->t, "tx2", false, &tl_call, &why), &why), MK_OK);
	assert_int_equal(state_of(f, "tx2"), MK_TXN_COMPLETE_ABORT);
	pi = info(f, 0);
	assert_int_equal(pi.lso, pi.hw);
	assert_int_equal(pi.hw, 5);
	read_values(f, 0, true, &v);
	assert_string_equal(v.buf, "a b ");       /* x aborted, markers hidden */
	read_values(f, 0, false, &v);
	assert_string_equal(v.buf, "a b x ");     /* read_uncommitted shows it */

	/* The next write begins the next transaction. */
	assert_int_equal(send(f, p, "c", NULL), MK_OK);
	assert_int_equal(state_of(f, "tx"), MK_TXN_ONGOING);
	assert_int_equal(info(f, 0).lso, 5);
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", true, &tl_call, NULL), NULL), MK_OK);
	read_values(f, 0, true, &v);
	assert_string_equal(v.buf, "a b c ");

	/* rmdir: refused while open, then the id's pid comes back at a new
	 * epoch when it is made again. */
	assert_int_equal(send(f, p, "d", NULL), MK_OK);
	assert_int_equal(tl_done(mk_txn_delete(f->t, "tx", &tl_call, NULL), NULL), MK_CONCURRENT_TRANSACTIONS);
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", false, &tl_call, NULL), NULL), MK_OK);
	int64_t pid;
	int16_t epoch;
	assert_int_equal(mk_txn_producer(f->t, "tx", &pid, &epoch, NULL), MK_OK);
	assert_int_equal(tl_done(mk_txn_delete(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	assert_false(mk_txn_exists(f->t, "tx"));
	assert_int_equal(send(f, p, "e", NULL), MK_TRANSACTIONAL_ID_NOT_FOUND);
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	int64_t pid2;
	int16_t epoch2;
	assert_int_equal(mk_txn_producer(f->t, "tx", &pid2, &epoch2, NULL), MK_OK);
	assert_int_equal(pid2, pid);
	assert_int_equal(epoch2, epoch + 1);
	assert_int_equal(send(f, p, "e", NULL), MK_PRODUCER_FENCED);

	mk_producer_close(p, &why);
	mk_producer_close(p2, &why);
	mk_strbuf_release(&why);
	mk_strbuf_release(&v);
}

static void test_fencing(void **state)
{
	fixture *f = *state;
	mk_strbuf v = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	mk_producer *old = txn_producer(f, "tx", 1);
	assert_int_equal(send(f, old, "zombie", NULL), MK_OK);
	assert_int_equal(tl_done(mk_txn_init(f->t, "tx", &tl_call, &why), &why), MK_OK);
	mk_txn_info ti;
	assert_int_equal(mk_txn_describe(f->t, "tx", &ti, NULL), MK_OK);
	assert_int_equal(ti.epoch, 1);
	assert_int_equal(ti.state, MK_TXN_COMPLETE_ABORT);   /* init aborted it */
	mk_txn_info_free(&ti);
	assert_int_equal(send(f, old, "late", NULL), MK_PRODUCER_FENCED);
	mk_producer *cur = txn_producer(f, "tx", 1);
	assert_int_equal(send(f, cur, "fresh", NULL), MK_OK);
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", true, &tl_call, NULL), NULL), MK_OK);
	read_values(f, 1, true, &v);
	assert_string_equal(v.buf, "fresh ");
	mk_producer_close(old, &why);
	mk_producer_close(cur, &why);
	mk_strbuf_release(&v);
	mk_strbuf_release(&why);
}

static int64_t committed_offset(fixture *f, const char *group, int partition)
{
	mk_group_info gi;
	assert_int_equal(mk_group_describe(f->g, group, NULL, &gi, NULL), MK_OK);
	int64_t off = -1;
	for (size_t i = 0; i < gi.nparts; i++)
		if (!strcmp(gi.parts[i].topic, "t") && gi.parts[i].partition == partition)
			off = gi.parts[i].committed;
	mk_group_info_free(&gi);
	return off;
}

static void test_offsets(void **state)
{
	fixture *f = *state;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	/* A member, whose commits are not the transaction's. */
	const char *topics[] = { "t" };
	assert_int_equal(tl_done(mk_group_join(f->g, "g", "m1", topics, 1, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	mk_producer *p = txn_producer(f, "tx", 0);
	assert_int_equal(send(f, p, "a", NULL), MK_OK);
	mk_txn_offset o = { "g", "t", 1, 0 };
	assert_int_equal(tl_done(mk_txn_stage_offsets(f->t, "tx", &o, 1, &tl_call, NULL), NULL), MK_OK);
	mk_txn_offset bad = { "nope", "t", 1, 0 };
	assert_int_equal(tl_done(mk_txn_stage_offsets(f->t, "tx", &bad, 1, &tl_call, NULL), NULL), MK_GROUP_ID_NOT_FOUND);
	assert_int_equal(committed_offset(f, "g", 1), -1);
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", false, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(committed_offset(f, "g", 1), -1);   /* aborted: not committed */
	o.offset = 0;
	assert_int_equal(tl_done(mk_txn_stage_offsets(f->t, "tx", &o, 1, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(state_of(f, "tx"), MK_TXN_ONGOING);  /* staging begins one */
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", true, &tl_call, &why), &why), MK_OK);
	assert_int_equal(committed_offset(f, "g", 1), 0);
	mk_producer_close(p, &why);
	mk_strbuf_release(&why);
}

static void test_timeout(void **state)
{
	fixture *f = *state;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	mk_producer *p = txn_producer(f, "tx", 0);
	assert_int_equal(send(f, p, "a", NULL), MK_OK);
	int n = -1;
	assert_int_equal(mk_cluster_clock_advance(f->c, f->cfg.transaction_timeout_ms - 1, NULL), MK_OK);
	assert_int_equal(tl_done(mk_txns_expire(f->t, &n, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(n, 0);
	assert_int_equal(state_of(f, "tx"), MK_TXN_ONGOING);
	assert_int_equal(mk_cluster_clock_advance(f->c, 1, NULL), MK_OK);
	assert_int_equal(tl_done(mk_txns_expire(f->t, &n, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(n, 1);
	assert_int_equal(state_of(f, "tx"), MK_TXN_COMPLETE_ABORT);
	assert_int_equal(info(f, 0).lso, info(f, 0).hw);
	/* The timeout bumped the epoch: the writer is fenced. */
	assert_int_equal(send(f, p, "b", NULL), MK_PRODUCER_FENCED);
	mk_producer_close(p, &why);
	mk_strbuf_release(&why);
}

/* A keyed record to partition 0 of topic, in transaction id (or none). */
static void send_kv(fixture *f, const char *topic, const char *id,
		    const char *k, const char *v)
{
	mk_topic *t = mk_cluster_topic(f->c, topic);
	mk_producer_opts o = { .acks = MK_PRODUCER_ACKS_DEFAULT, .seq = -1,
			       .txn = id, .txns = f->t };
	mk_producer *p = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_producer_open(f->ps, t, 0, &o, &p, &why), MK_OK);
	mk_record_in r = { mk_bytes_of(k, strlen(k)), mk_bytes_of(v, strlen(v)), NULL, 0 };
	size_t taken;
	assert_int_equal(tl_producer_send(f->c, p, &r, 1, &taken, &why), MK_OK);
	assert_int_equal(mk_producer_close(p, &why), MK_OK);
	mk_strbuf_release(&why);
	mk_topic_put(t);
}

/* The values of partition 0 of topic, everything stored (uncommitted). */
static void stored_values(fixture *f, const char *topic, mk_strbuf *out)
{
	mk_topic *t = mk_cluster_topic(f->c, topic);
	mk_partition *p = mk_topic_partition(t, 0);
	mk_strbuf buf = MK_STRBUF_INIT;
	int64_t visible;
	mk_strbuf_reset(out);
	assert_int_equal(mk_partition_fetch(p, 0, 1 << 20, &buf, &visible, NULL), MK_OK);
	size_t pos = 0;
	mk_batch_view b;
	while (pos < buf.len &&
	       !mk_frame_decode_header((const uint8_t *)buf.buf + pos, buf.len - pos,
				       0, false, &b, NULL)) {
		pos += b.frame_len;
		mk_record_iter it;
		mk_record_view rec;
		mk_record_iter_init(&it, &b);
		while (mk_record_next(&it, &rec))
			mk_strbuf_addf(out, "%s ", mk_batch_is_control(&b) ? "|" :
				       (rec.value.len == 2 && !memcmp(rec.value.ptr, "v1", 2)) ? "v1" :
				       (rec.value.len == 2 && !memcmp(rec.value.ptr, "v2", 2)) ? "v2" : "z");
	}
	mk_strbuf_release(&buf);
	mk_topic_put(t);
}

/* Compaction discards aborted records (they never replace a committed
 * value) and keeps the markers; an open transaction holds the cleaning
 * point at the LSO. */
static void test_compaction(void **state)
{
	fixture *f = *state;
	tl_create_topic(f->c, "c", 1, 1, "cleanup.policy=compact", "segment.bytes=64");
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	send_kv(f, "c", NULL, "k", "v1");
	send_kv(f, "c", "tx", "k", "v2");
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", false, &tl_call, NULL), NULL), MK_OK);
	send_kv(f, "c", NULL, "z", "z1");
	send_kv(f, "c", NULL, "z", "z2");
	mk_strbuf v = MK_STRBUF_INIT;
	stored_values(f, "c", &v);
	assert_string_equal(v.buf, "v1 v2 | z z ");
	mk_topic *t = mk_cluster_topic(f->c, "c");
	mk_partition *p = mk_topic_partition(t, 0);
	assert_int_equal(mk_partition_compact(p, NULL), MK_OK);
	stored_values(f, "c", &v);
	assert_string_equal(v.buf, "v1 | z z ");  /* v2 aborted: gone, v1 stays (z2 is in the active segment) */

	/* An open transaction: nothing at or past its first offset is cleaned. */
	send_kv(f, "c", "tx", "k", "v2");         /* open, offset 5 */
	send_kv(f, "c", NULL, "z", "z3");
	send_kv(f, "c", NULL, "z", "z4");
	assert_int_equal(mk_partition_compact(p, NULL), MK_OK);
	stored_values(f, "c", &v);
	assert_string_equal(v.buf, "v1 | z v2 z z ");
	mk_strbuf_release(&v);
	mk_topic_put(t);
}

/* ---- recovery ------------------------------------------------------------- */

/* Two partitions and offsets in a transaction tx, then commit (or abort)
 * in a forked child armed to die at point@n; the parent reopens. */
static void crash_end_at(fixture *f, const char *point, int n, bool commit)
{
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	mk_producer *p0 = txn_producer(f, "tx", 0), *p1 = txn_producer(f, "tx", 1);
	assert_int_equal(send(f, p0, "a", "b"), MK_OK);
	assert_int_equal(send(f, p1, "c", NULL), MK_OK);
	mk_txn_offset o = { "g", "t", 0, 1 };
	assert_int_equal(tl_done(mk_txn_stage_offsets(f->t, "tx", &o, 1, &tl_call, NULL), NULL), MK_OK);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_producer_close(p0, &why);
	mk_producer_close(p1, &why);
	close_all(f);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		open_all(f);
		if (point)
			mk_failpoint_arm(point, n);
		tl_done(mk_txn_end(f->t, "tx", commit, &tl_call, NULL), NULL);
		_exit(point ? 3 : 0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (point) {
		assert_true(WIFSIGNALED(st));
		assert_int_equal(WTERMSIG(st), SIGKILL);
	}
	open_all(f);
	mk_strbuf_release(&why);
}

/* After any crash during an end that recorded Prepare: finished at open. */
static void check_finished(fixture *f, bool commit)
{
	mk_strbuf v = MK_STRBUF_INIT;
	assert_int_equal(state_of(f, "tx"),
			 commit ? MK_TXN_COMPLETE_COMMIT : MK_TXN_COMPLETE_ABORT);
	for (int part = 0; part < 2; part++) {
		mk_partition_info pi = info(f, part);
		assert_int_equal(pi.lso, pi.hw);
		read_values(f, part, true, &v);
		assert_string_equal(v.buf, !commit ? "" : part ? "c " : "a b ");
	}
	assert_int_equal(committed_offset(f, "g", 0), commit ? 1 : -1);
	mk_strbuf_release(&v);
}

static void test_crash_after_prepare(void **state)
{
	crash_end_at(*state, "txn.end.after-prepare", 1, true);
	check_finished(*state, true);
}

static void test_crash_after_first_marker(void **state)
{
	crash_end_at(*state, "txn.end.after-marker", 1, true);
	check_finished(*state, true);
}

static void test_crash_after_markers_abort(void **state)
{
	crash_end_at(*state, "txn.end.after-marker", 2, false);
	check_finished(*state, false);
}

static void test_crash_after_offsets(void **state)
{
	crash_end_at(*state, "txn.end.after-offsets", 1, true);
	check_finished(*state, true);
}

static void test_crash_after_complete(void **state)
{
	crash_end_at(*state, "txn.end.after-complete", 1, true);
	check_finished(*state, true);
}

/* Before Prepare (the log has Ongoing): the transaction stays open, its
 * LSO held, and can still be ended. */
static void test_crash_ongoing(void **state)
{
	fixture *f = *state;
	crash_end_at(f, "txn.end.after-prepare", 1, true);   /* set up */
	/* Start a second transaction and crash before its end records
	 * anything: a child that writes and is killed. */
	close_all(f);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		open_all(f);
		mk_producer *p = txn_producer(f, "tx", 0);
		send(f, p, "open", NULL);
		kill(getpid(), SIGKILL);
		_exit(3);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	open_all(f);
	assert_int_equal(state_of(f, "tx"), MK_TXN_ONGOING);
	mk_partition_info pi = info(f, 0);
	assert_int_equal(pi.lso, 3);        /* a, b, marker; "open" at 3 */
	assert_int_equal(pi.hw, 4);
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", false, &tl_call, NULL), NULL), MK_OK);
	pi = info(f, 0);
	assert_int_equal(pi.lso, pi.hw);
	mk_strbuf v = MK_STRBUF_INIT;
	read_values(f, 0, true, &v);
	assert_string_equal(v.buf, "a b ");
	mk_strbuf_release(&v);
}

/* A clean remount keeps everything: ids, epochs, aborted index. */
static void test_remount(void **state)
{
	fixture *f = *state;
	crash_end_at(f, NULL, 0, false);
	check_finished(f, false);
	close_all(f);
	open_all(f);
	check_finished(f, false);
	int64_t pid;
	int16_t epoch;
	assert_int_equal(mk_txn_producer(f->t, "tx", &pid, &epoch, NULL), MK_OK);
	assert_true(pid >= MK_TXN_PID_BASE);
	assert_int_equal(tl_done(mk_txn_create(f->t, "other", &tl_call, NULL), NULL), MK_OK);
	int64_t pid2;
	assert_int_equal(mk_txn_producer(f->t, "other", &pid2, &epoch, NULL), MK_OK);
	assert_int_equal(pid2, pid + 1);
}

/* The transaction log without a leader at open: the daemon still opens,
 * changes wait (LEADER_NOT_AVAILABLE), and the first call after the
 * broker is back reads the log. */
static void test_log_unavailable(void **state)
{
	fixture *f = *state;
	close_all(f);
	tl_config(&f->cfg, 2);
	open_all(f);
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	mk_topic *t = mk_cluster_topic(f->c, MK_TXN_TOPIC);
	mk_partition_info pi;
	mk_partition_info_get(mk_topic_partition(t, 0), &pi);
	mk_topic_put(t);
	int leader = pi.leader;
	assert_true(leader == 1 || leader == 2);
	/* (a broker crash loses what was not flushed) */
	assert_int_equal(mk_cluster_flush(f->c, NULL), MK_OK);
	assert_int_equal(mk_cluster_broker_crash(f->c, leader, false, NULL), MK_OK);
	close_all(f);
	open_all(f);
	assert_false(mk_txn_exists(f->t, "tx"));
	assert_int_equal(tl_done(mk_txn_create(f->t, "other", &tl_call, NULL), NULL), MK_LEADER_NOT_AVAILABLE);
	assert_int_equal(mk_cluster_broker_restart(f->c, leader, NULL), MK_OK);
	assert_true(mk_txn_exists(f->t, "tx"));
	assert_int_equal(tl_done(mk_txn_create(f->t, "other", &tl_call, NULL), NULL), MK_OK);
}

/* Followers track transactions too: a promoted follower holds the LSO
 * of the open transaction and takes its marker. */
static void test_promotion(void **state)
{
	fixture *f = *state;
	close_all(f);
	tl_config(&f->cfg, 2);
	f->cfg.auto_replication = 1;       /* followers fetch: acks=all returns */
	open_all(f);
	mk_cluster_start(f->c);
	tl_create_topic(f->c, "r", 1, 2, NULL, NULL);
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	mk_topic *t = mk_cluster_topic(f->c, "r");
	mk_partition *p = mk_topic_partition(t, 0);
	mk_producer_opts o = { .acks = MK_PRODUCER_ACKS_DEFAULT, .seq = -1,
			       .txn = "tx", .txns = f->t };
	mk_producer *pr = NULL;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_producer_open(f->ps, t, 0, &o, &pr, &why), MK_OK);
	assert_int_equal(send(f, pr, "a", "b"), MK_OK);
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	assert_int_equal(pi.lso, 0);
	assert_int_equal(pi.hw, 2);
	int other = pi.leader == 1 ? 2 : 1;
	assert_int_equal(mk_cluster_promote(f->c, other, "r", 0, false, &why), MK_OK);
	mk_partition_info_get(p, &pi);
	assert_int_equal(pi.leader, other);
	assert_int_equal(pi.lso, 0);              /* the new leader knows it is open */
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", false, &tl_call, &why), &why), MK_OK);
	mk_partition_info_get(p, &pi);
	assert_int_equal(pi.lso, pi.hw);
	assert_int_equal(pi.hw, 3);
	mk_aborted_list ab;
	mk_aborted_init(&ab);
	mk_strbuf buf = MK_STRBUF_INIT;
	int64_t visible;
	assert_int_equal(mk_partition_fetch_isolated(p, 0, 1 << 20, &ab, &buf, &visible, NULL), MK_OK);
	assert_int_equal(ab.n, 1);                /* the abort is indexed on the new leader */
	assert_int_equal(ab.v[0].first, 0);
	assert_int_equal(ab.v[0].last, 2);
	mk_aborted_free(&ab);
	mk_strbuf_release(&buf);
	mk_producer_close(pr, &why);
	mk_strbuf_release(&why);
	mk_topic_put(t);
}

/* A marker that cannot be written (no leader) leaves the Prepare state:
 * new writes are refused, the other decision too, and writing the same
 * decision again once the leader is back finishes it. */
static void test_prepared_retry(void **state)
{
	fixture *f = *state;
	close_all(f);
	tl_config(&f->cfg, 2);
	f->cfg.auto_replication = 1;
	f->cfg.offsets_topic_replication_factor = 2;   /* the log survives */
	open_all(f);
	mk_cluster_start(f->c);
	tl_create_topic(f->c, "u", 1, 1, NULL, NULL);
	assert_int_equal(tl_done(mk_txn_create(f->t, "tx", &tl_call, NULL), NULL), MK_OK);
	mk_topic *u = mk_cluster_topic(f->c, "u");
	mk_partition *pu = mk_topic_partition(u, 0);
	mk_partition_info pi;
	mk_partition_info_get(pu, &pi);
	int broker = pi.leader;                        /* the one to crash */
	mk_topic *lt = mk_cluster_topic(f->c, MK_TXN_TOPIC);
	mk_partition_info_get(mk_topic_partition(lt, 0), &pi);
	if (pi.leader == broker)
		assert_int_equal(mk_cluster_promote(f->c, broker == 1 ? 2 : 1,
						    MK_TXN_TOPIC, 0, false, NULL), MK_OK);
	mk_topic_put(lt);
	mk_producer *pt = txn_producer(f, "tx", 0);
	assert_int_equal(send(f, pt, "a", NULL), MK_OK);
	send_kv(f, "u", "tx", "k", "v");
	assert_int_equal(mk_cluster_flush(f->c, NULL), MK_OK);
	assert_int_equal(mk_cluster_broker_crash(f->c, broker, false, NULL), MK_OK);
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", true, &tl_call, &why), &why), MK_LEADER_NOT_AVAILABLE);
	assert_int_equal(state_of(f, "tx"), MK_TXN_PREPARE_COMMIT);
	assert_int_equal(send(f, pt, "b", NULL), MK_CONCURRENT_TRANSACTIONS);
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", false, &tl_call, NULL), NULL), MK_INVALID_TXN_STATE);
	assert_int_equal(mk_cluster_broker_restart(f->c, broker, NULL), MK_OK);
	assert_int_equal(tl_done(mk_txn_end(f->t, "tx", true, &tl_call, &why), &why), MK_OK);
	assert_int_equal(state_of(f, "tx"), MK_TXN_COMPLETE_COMMIT);
	mk_partition_info_get(pu, &pi);
	assert_int_equal(pi.lso, pi.hw);
	pi = info(f, 0);
	assert_int_equal(pi.lso, pi.hw);
	mk_strbuf v = MK_STRBUF_INIT;
	read_values(f, 0, true, &v);
	assert_string_equal(v.buf, "a ");
	mk_strbuf_release(&v);
	mk_producer_close(pt, &why);
	mk_strbuf_release(&why);
	mk_topic_put(u);
}

static void replicate_once(fixture *f)
{
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
}

/* A call under manual replication: fetch rounds until it completes. */
static mk_err finish_by_rounds(fixture *f, mk_err err, mk_coord_call *c,
			       mk_strbuf *why)
{
	for (int i = 0; !err && mk_coord_call_pending(c) && i < 8; i++) {
		replicate_once(f);
		err = mk_coord_call_resume(c, why);
	}
	assert_false(mk_coord_call_pending(c));
	return err;
}

/*
 * Manual replication, __transaction_state with two replicas: the first
 * batch to a partition waits for its registration, which waits for the
 * ISR. Nothing blocks: the append takes the batch and holds it, a check
 * says it is owed and watches the coordinator; the fetch round that
 * acknowledges the registration lets the next check append it; the
 * round after acknowledges the batch. The commit then marks it.
 */
static void test_registration_held(void **state)
{
	fixture *f = *state;
	close_all(f);
	tl_config(&f->cfg, 2);
	f->cfg.offsets_topic_replication_factor = 2;
	open_all(f);
	tl_create_topic(f->c, "r", 1, 2, NULL, NULL);
	mk_coord_call c = { 0 };
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(finish_by_rounds(f, mk_txn_create(f->t, "tx", &c, &why), &c, &why),
			 MK_OK);
	mk_topic *t = mk_cluster_topic(f->c, "r");
	mk_partition *p = mk_topic_partition(t, 0);
	mk_producer_opts o = { .acks = MK_PRODUCER_ACKS_DEFAULT, .seq = -1,
			       .txn = "tx", .txns = f->t };
	mk_producer *pr = NULL;
	assert_int_equal(mk_producer_open(f->ps, t, 0, &o, &pr, &why), MK_OK);
	mk_record_in r = { MK_BYTES_NULL, mk_bytes_of("a", 1), NULL, 0 };
	size_t taken;
	assert_int_equal(mk_producer_append(pr, &r, 1, &taken, &why), MK_OK);
	assert_int_equal(taken, 1);                   /* taken, held */
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	assert_int_equal(pi.leo, 0);                  /* not appended yet */
	bool pending;
	mk_ack_watch w;
	assert_int_equal(mk_producer_check(pr, false, &pending, &w, &why), MK_OK);
	assert_true(pending);
	assert_ptr_equal(w.coord, mk_txns_runtime(f->t));
	assert_null(w.p);
	replicate_once(f);                            /* the registration's record */
	assert_int_equal(mk_producer_check(pr, false, &pending, &w, &why), MK_OK);
	assert_true(pending);                         /* now the batch's ack */
	assert_non_null(w.p);
	mk_partition_info_get(p, &pi);
	assert_int_equal(pi.leo, 1);
	assert_int_equal(state_of(f, "tx"), MK_TXN_ONGOING);
	assert_int_equal(tl_producer_settle(f->c, pr, true, &why), MK_OK);
	mk_partition_info_get(p, &pi);
	assert_int_equal(pi.hw, 1);
	assert_int_equal(pi.lso, 0);                  /* open */
	assert_int_equal(finish_by_rounds(f, mk_txn_end(f->t, "tx", true, &c, &why), &c, &why),
			 MK_OK);
	assert_int_equal(state_of(f, "tx"), MK_TXN_COMPLETE_COMMIT);
	mk_partition_info_get(p, &pi);
	assert_int_equal(pi.lso, pi.hw);
	assert_int_equal(pi.hw, 2);                   /* the batch and its marker */
	assert_int_equal(mk_producer_close(pr, &why), MK_OK);
	mk_strbuf_release(&why);
	mk_topic_put(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_visible),
		cmocka_unit_test(test_pstate),
		cmocka_unit_test_setup_teardown(test_commit_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fencing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offsets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_after_prepare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_after_first_marker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_after_markers_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_after_offsets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_after_complete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_ongoing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_unavailable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_promotion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepared_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_registration_held, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
