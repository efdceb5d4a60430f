/*
 * Unit tests of the producer path (core only): the broker-side idempotence
 * state (core/storage/producer_state.c), stamping a frame with a producer
 * (mk_frame_set_producer), the partitioner, the topic accumulator on a real
 * cluster, idempotent produce through a partition (window of five, fencing,
 * new epochs), and deduplication that survives a close and reopen and a
 * leader promotion.
 *
 * Every cluster runs on a manual clock in a mkdtemp directory; time moves
 * only through mk_cluster_clock_advance and replication only through
 * explicit fetch rounds.
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
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "cluster.h"
#include "codec.h"
#include "config.h"
#include "fileio.h"
#include "partitioner.h"
#include "producer.h"
#include "producer_state.h"
#include "replica.h"
#include "testlib.h"

/* ======================================================================= */
/* producer state                                                          */
/* ======================================================================= */

/* A batch view as the log would hand it to mk_pstate_apply. */
static mk_batch_view view(int64_t pid, int16_t epoch, int32_t seq,
			  int64_t base, int32_t count)
{
	mk_batch_view b;
	memset(&b, 0, sizeof(b));
	b.meta.producer_id = pid;
	b.meta.producer_epoch = epoch;
	b.meta.base_sequence = seq;
	b.meta.base_offset = base;
	b.last_offset_delta = count - 1;
	b.record_count = count;
	return b;
}

static void apply(mk_producer_state *ps, int64_t pid, int16_t epoch,
		  int32_t seq, int64_t base, int32_t count)
{
	mk_batch_view b = view(pid, epoch, seq, base, count);
	mk_pstate_apply(ps, &b);
}

static mk_err check(const mk_producer_state *ps, int64_t pid, int16_t epoch,
		    int32_t seq, int32_t count, const mk_seq_entry **dup)
{
	const mk_seq_entry *d = (const mk_seq_entry *)1;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_pstate_check(ps, pid, epoch, seq, count, &d, &why);
	if (err)
		assert_true(why.len > 0);    /* every refusal says why */
	else if (!d)
		assert_int_equal(why.len, 0);
	mk_strbuf_release(&why);
	if (dup)
		*dup = d;
	return err;
}

/* A new batch in order: OK and no duplicate. */
#define assert_new(ps, pid, epoch, seq, count)                               \
	do {                                                                 \
		const mk_seq_entry *d_;                                      \
		assert_int_equal(check((ps), (pid), (epoch), (seq), (count), &d_), \
				 MK_OK);                                     \
		assert_null(d_);                                             \
	} while (0)

/* An exact retry: OK with the original offsets. */
#define assert_dup(ps, pid, epoch, seq, count, base)                         \
	do {                                                                 \
		const mk_seq_entry *d_;                                      \
		assert_int_equal(check((ps), (pid), (epoch), (seq), (count), &d_), \
				 MK_OK);                                     \
		assert_non_null(d_);                                         \
		assert_int_equal(d_->base_offset, (base));                  \
		assert_int_equal(d_->first_seq, (seq));                     \
		assert_int_equal(d_->last_offset_delta, (count) - 1);       \
	} while (0)

#define assert_refused(ps, pid, epoch, seq, count, code)                     \
	assert_int_equal(check((ps), (pid), (epoch), (seq), (count), NULL), (code))

static void test_pstate_check_apply(void **state)
{
	(void)state;
	mk_producer_state ps;
	mk_pstate_init(&ps);

	/* An unknown producer must start at sequence 0. */
	assert_null(mk_pstate_find(&ps, 7));
	assert_int_equal(mk_pstate_next_seq(&ps, 7, 0), 0);
	assert_new(&ps, 7, 0, 0, 3);
	assert_refused(&ps, 7, 0, 1, 3, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 7, 0, 5, 1, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);

	apply(&ps, 7, 0, 0, 10, 3);       /* seqs 0..2 at offsets 10..12 */
	const mk_producer_entry *e = mk_pstate_find(&ps, 7);
	assert_non_null(e);
	assert_int_equal(e->epoch, 0);
	assert_int_equal(e->n, 1);
	assert_int_equal(e->recent[0].first_seq, 0);
	assert_int_equal(e->recent[0].last_seq, 2);
	assert_int_equal(e->recent[0].base_offset, 10);
	assert_int_equal(e->recent[0].last_offset_delta, 2);
	assert_int_equal(ps.covered_to, 13);
	assert_int_equal(mk_pstate_next_seq(&ps, 7, 0), 3);
	/* Another epoch has no sequence yet. */
	assert_int_equal(mk_pstate_next_seq(&ps, 7, 1), 0);

	assert_new(&ps, 7, 0, 3, 2);
	assert_dup(&ps, 7, 0, 0, 3, 10);
	/* Not an exact retry: same start, other length; overlapping start. */
	assert_refused(&ps, 7, 0, 0, 2, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 7, 0, 0, 4, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 7, 0, 1, 2, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 7, 0, 2, 1, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	/* A gap. */
	assert_refused(&ps, 7, 0, 4, 1, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	/* Sequences at the top of the 32-bit range (seq= is a script's
	 * number): refused, without arithmetic overflow. */
	assert_refused(&ps, 7, 0, INT32_MAX, 2, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 7, 0, INT32_MAX, 1, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 7, 0, INT32_MAX - 1, 100, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 8, 0, INT32_MAX, 3, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 7, 1, INT32_MAX, 3, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);

	/* Other producers are independent; entries stay sorted by id. */
	assert_new(&ps, 3, 0, 0, 1);
	apply(&ps, 3, 0, 0, 13, 1);
	apply(&ps, 11, 4, 0, 14, 2);
	apply(&ps, 5, 0, 0, 16, 1);
	assert_int_equal(ps.n, 4);
	for (size_t i = 1; i < ps.n; i++)
		assert_true(ps.v[i - 1].pid < ps.v[i].pid);
	assert_int_equal(mk_pstate_find(&ps, 11)->epoch, 4);
	assert_int_equal(mk_pstate_next_seq(&ps, 11, 4), 2);
	assert_int_equal(mk_pstate_next_seq(&ps, 7, 0), 3);
	assert_dup(&ps, 7, 0, 0, 3, 10);
	assert_dup(&ps, 11, 4, 0, 2, 14);
	assert_int_equal(ps.covered_to, 17);

	/* Batches without a producer, and control markers, only advance
	 * what is covered. */
	apply(&ps, -1, -1, -1, 17, 4);
	mk_batch_view m = view(7, 0, 3, 21, 1);
	m.meta.flags = MK_BATCH_TRANSACTIONAL | MK_BATCH_COMMIT_MARKER;
	mk_pstate_apply(&ps, &m);
	assert_int_equal(ps.n, 4);
	assert_int_equal(ps.covered_to, 22);
	assert_int_equal(mk_pstate_next_seq(&ps, 7, 0), 3);
	assert_int_equal(mk_pstate_find(&ps, 7)->n, 1);

	mk_pstate_reset(&ps);
	assert_int_equal(ps.n, 0);
	assert_int_equal(ps.covered_to, 0);
	assert_null(mk_pstate_find(&ps, 7));
	mk_pstate_free(&ps);
}

/*
 * The window is five batches: an exact retry of any of the last five is a
 * duplicate with its own offsets; the sixth-newest and older are refused.
 */
static void test_pstate_window_of_five(void **state)
{
	(void)state;
	mk_producer_state ps;
	mk_pstate_init(&ps);
	/* Batches of 1, 2, 3, ... records: seq and offsets both move. */
	int32_t seq[9];
	int64_t base[9];
	int32_t s = 0;
	int64_t off = 100;
	for (int i = 0; i < 9; i++) {
		seq[i] = s;
		base[i] = off;
		assert_new(&ps, 42, 2, s, i + 1);
		apply(&ps, 42, 2, s, off, i + 1);
		s += i + 1;
		off += i + 1 + 3;       /* other producers' records between */
		const mk_producer_entry *e = mk_pstate_find(&ps, 42);
		assert_int_equal(e->n, i + 1 < MK_PRODUCER_WINDOW ? i + 1 : MK_PRODUCER_WINDOW);
		/* Each of the batches still in the window is a duplicate. */
		for (int j = 0; j <= i; j++) {
			if (i - j < MK_PRODUCER_WINDOW)
				assert_dup(&ps, 42, 2, seq[j], j + 1, base[j]);
			else
				assert_refused(&ps, 42, 2, seq[j], j + 1,
					       MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
		}
	}
	assert_int_equal(MK_PRODUCER_WINDOW, 5);
	assert_int_equal(mk_pstate_next_seq(&ps, 42, 2), s);
	/* The window is oldest first with increasing sequences. */
	const mk_producer_entry *e = mk_pstate_find(&ps, 42);
	for (int k = 0; k < e->n; k++) {
		assert_int_equal(e->recent[k].first_seq, seq[4 + k]);
		if (k)
			assert_true(e->recent[k].first_seq > e->recent[k - 1].last_seq);
	}
	mk_pstate_free(&ps);
}

static void test_pstate_epochs(void **state)
{
	(void)state;
	mk_producer_state ps;
	mk_pstate_init(&ps);
	apply(&ps, 9, 0, 0, 0, 2);
	apply(&ps, 9, 0, 2, 2, 2);

	/* A newer epoch must start at 0 ... */
	assert_refused(&ps, 9, 1, 4, 1, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_refused(&ps, 9, 1, 2, 2, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_new(&ps, 9, 1, 0, 1);
	/* ... also for a producer never seen. */
	assert_refused(&ps, 10, 3, 1, 1, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_new(&ps, 10, 3, 0, 1);

	/* Applying the new epoch drops the old window. */
	apply(&ps, 9, 1, 0, 4, 1);
	const mk_producer_entry *e = mk_pstate_find(&ps, 9);
	assert_int_equal(e->epoch, 1);
	assert_int_equal(e->n, 1);
	assert_int_equal(mk_pstate_next_seq(&ps, 9, 1), 1);
	assert_int_equal(mk_pstate_next_seq(&ps, 9, 0), 0);

	/* The old epoch is fenced, retries included. */
	assert_refused(&ps, 9, 0, 0, 2, MK_PRODUCER_FENCED);
	assert_refused(&ps, 9, 0, 2, 2, MK_PRODUCER_FENCED);
	assert_refused(&ps, 9, 0, 4, 1, MK_PRODUCER_FENCED);
	/* The new one goes on. */
	assert_dup(&ps, 9, 1, 0, 1, 4);
	assert_new(&ps, 9, 1, 1, 5);
	assert_refused(&ps, 9, 1, 2, 1, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	/* Epoch 1 is itself fenced by epoch 2 once 2 writes. */
	apply(&ps, 9, 2, 0, 5, 1);
	assert_refused(&ps, 9, 1, 1, 5, MK_PRODUCER_FENCED);
	assert_refused(&ps, 9, 0, 0, 2, MK_PRODUCER_FENCED);
	mk_pstate_free(&ps);
}

static void format_of(const mk_producer_state *ps, mk_strbuf *out)
{
	mk_strbuf_reset(out);
	mk_pstate_format(ps, out);
}

static void test_pstate_snapshot(void **state)
{
	(void)state;
	mk_producer_state ps, back;
	mk_pstate_init(&ps);
	mk_pstate_init(&back);
	mk_strbuf a = MK_STRBUF_INIT, b = MK_STRBUF_INIT;

	/* Empty. */
	format_of(&ps, &a);
	assert_int_equal(mk_pstate_parse(&back, a.buf), MK_OK);
	assert_int_equal(back.n, 0);
	assert_int_equal(back.covered_to, 0);

	/* Three producers, one with a full window, big ids and offsets. */
	for (int i = 0; i < 7; i++)
		apply(&ps, 5000000000LL, 17, i * 2, 1000 + i * 10, 2);
	apply(&ps, 0, 0, 0, 2000, 1);
	apply(&ps, 12, 32767, 0, 3000000000LL, 40);
	apply(&ps, -1, -1, -1, 3000000040LL, 2);
	format_of(&ps, &a);
	assert_non_null(strstr(a.buf, "producer-snapshot 1\n"));
	assert_int_equal(mk_pstate_parse(&back, a.buf), MK_OK);
	format_of(&back, &b);
	assert_string_equal(a.buf, b.buf);
	assert_int_equal(back.covered_to, 3000000042LL);
	assert_int_equal(back.n, 3);
	const mk_producer_entry *e = mk_pstate_find(&back, 5000000000LL);
	assert_non_null(e);
	assert_int_equal(e->epoch, 17);
	assert_int_equal(e->n, MK_PRODUCER_WINDOW);
	assert_int_equal(e->recent[0].first_seq, 4);
	assert_int_equal(e->recent[0].base_offset, 1020);
	assert_int_equal(mk_pstate_next_seq(&back, 5000000000LL, 17), 14);
	assert_dup(&back, 5000000000LL, 17, 12, 2, 1060);
	assert_refused(&back, 5000000000LL, 17, 2, 2, MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_int_equal(mk_pstate_find(&back, 12)->epoch, 32767);
	assert_dup(&back, 12, 32767, 0, 40, 3000000000LL);
	assert_dup(&back, 0, 0, 0, 1, 2000);

	/* Parsing replaces whatever was there. */
	mk_producer_state one;
	mk_pstate_init(&one);
	apply(&one, 77, 1, 0, 5, 1);
	format_of(&one, &b);
	assert_int_equal(mk_pstate_parse(&back, b.buf), MK_OK);
	assert_int_equal(back.n, 1);
	assert_null(mk_pstate_find(&back, 12));
	assert_int_equal(back.covered_to, 6);
	mk_pstate_free(&one);

	/* Damaged snapshots are refused and leave an empty state. */
	static const char *const bad[] = {
		"",
		"garbage\n",
		"producer-snapshot 3\ncovered_to 5\n",
		"producer-snapshot 1\n",
		"producer-snapshot 1\ncovered_to -3\n",
		"producer-snapshot 1\ncovered_to 5\nproducer x 0\n",
		"producer-snapshot 1\ncovered_to 5\nproducer -4 0\n",
		"producer-snapshot 1\ncovered_to 5\nproducer 4 0 1:2:3\n",
		"producer-snapshot 1\ncovered_to 5\nproducer 4 0 1:2:3:4 junk\n",
		"producer-snapshot 1\ncovered_to 5\nproducer 4 0 1:2:3:4",
		"producer-snapshot 1\ncovered_to 5\nwhat 4 0\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(mk_pstate_parse(&back, a.buf), MK_OK);
		mk_err err = mk_pstate_parse(&back, bad[i]);
		if (err != MK_CORRUPT_MESSAGE)
			print_error("snapshot %zu accepted: %s\n", i, bad[i]);
		assert_int_equal(err, MK_CORRUPT_MESSAGE);
		assert_int_equal(back.n, 0);
		assert_int_equal(back.covered_to, 0);
	}

	mk_strbuf_release(&a);
	mk_strbuf_release(&b);
	mk_pstate_free(&ps);
	mk_pstate_free(&back);
}

/* ======================================================================= */
/* frames                                                                  */
/* ======================================================================= */

static const mk_batch_meta plain_meta = {
	.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
	.producer_epoch = -1, .base_sequence = -1,
};

/* A frame of n records "v0".."vn-1" (keys "k0".. when keyed). */
static void build(mk_batch_builder *b, const char *prefix, int n, bool keyed)
{
	mk_builder_init(b, &plain_meta);
	for (int i = 0; i < n; i++) {
		char k[16], v[32];
		snprintf(k, sizeof(k), "k%d", i);
		snprintf(v, sizeof(v), "%s%d", prefix, i);
		mk_builder_add(b, 1000 + i,
			       keyed ? mk_bytes_of(k, strlen(k)) : MK_BYTES_NULL,
			       mk_bytes_of(v, strlen(v)), NULL, 0);
	}
	mk_builder_finish(b);
}

static void assert_frame(const mk_strbuf *frame, int64_t pid, int16_t epoch,
			 int32_t seq, int64_t base, int32_t leader_epoch, int n,
			 const char *prefix)
{
	mk_batch_view b;
	const char *reason = NULL;
	mk_err err = mk_frame_decode((const uint8_t *)frame->buf, frame->len, 0,
				     &b, &reason);
	if (err)
		print_error("decode: %s\n", reason ? reason : "?");
	assert_int_equal(err, MK_OK);
	assert_int_equal(b.frame_len, frame->len);
	assert_int_equal(b.meta.producer_id, pid);
	assert_int_equal(b.meta.producer_epoch, epoch);
	assert_int_equal(b.meta.base_sequence, seq);
	assert_int_equal(b.meta.base_offset, base);
	assert_int_equal(b.meta.leader_epoch, leader_epoch);
	assert_int_equal(b.record_count, n);
	assert_int_equal(b.last_offset_delta, n - 1);
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, &b);
	int i = 0;
	while (mk_record_next(&it, &rec)) {
		char k[16], v[32];
		snprintf(k, sizeof(k), "k%d", i);
		snprintf(v, sizeof(v), "%s%d", prefix, i);
		assert_int_equal(rec.offset, base + i);
		assert_int_equal(rec.timestamp, 1000 + i);
		assert_int_equal(rec.key.len, (int32_t)strlen(k));
		assert_memory_equal(rec.key.ptr, k, strlen(k));
		assert_int_equal(rec.value.len, (int32_t)strlen(v));
		assert_memory_equal(rec.value.ptr, v, strlen(v));
		i++;
	}
	assert_int_equal(i, n);
}

static void test_frame_set_producer(void **state)
{
	(void)state;
	mk_batch_builder b;
	build(&b, "val", 5, true);
	assert_frame(&b.frame, -1, -1, -1, 0, 0, 5, "val");

	mk_frame_set_producer((uint8_t *)b.frame.buf, b.frame.len,
			      123456789012LL, 7, 42);
	assert_frame(&b.frame, 123456789012LL, 7, 42, 0, 0, 5, "val");
	/* Assigning offsets afterwards keeps the producer fields and the CRC. */
	mk_frame_assign((uint8_t *)b.frame.buf, b.frame.len, 1000, 3);
	assert_frame(&b.frame, 123456789012LL, 7, 42, 1000, 3, 5, "val");
	/* And the other way round; extreme values. */
	mk_frame_set_producer((uint8_t *)b.frame.buf, b.frame.len, INT64_MAX,
			      INT16_MAX, INT32_MAX);
	assert_frame(&b.frame, INT64_MAX, INT16_MAX, INT32_MAX, 1000, 3, 5, "val");
	mk_frame_set_producer((uint8_t *)b.frame.buf, b.frame.len, 0, 0, 0);
	assert_frame(&b.frame, 0, 0, 0, 1000, 3, 5, "val");

	/* Back to "no producer": the frame is as built again, byte for byte
	 * (only the assigned offsets differ). */
	mk_batch_builder fresh;
	build(&fresh, "val", 5, true);
	mk_frame_assign((uint8_t *)fresh.frame.buf, fresh.frame.len, 1000, 3);
	mk_frame_set_producer((uint8_t *)b.frame.buf, b.frame.len, -1, -1, -1);
	assert_int_equal(b.frame.len, fresh.frame.len);
	assert_memory_equal(b.frame.buf, fresh.frame.buf, b.frame.len);
	mk_builder_release(&fresh);

	/* A frame damaged after it was built stays detectably damaged. */
	b.frame.buf[b.frame.len - 3] ^= 0x20;
	mk_frame_set_producer((uint8_t *)b.frame.buf, b.frame.len, 5, 1, 9);
	mk_batch_view v;
	const char *reason = NULL;
	assert_int_equal(mk_frame_decode((const uint8_t *)b.frame.buf, b.frame.len,
					 0, &v, &reason),
			 MK_CORRUPT_MESSAGE);
	assert_non_null(reason);
	mk_builder_release(&b);

	/* A one-record keyless frame. */
	mk_batch_builder one;
	mk_builder_init(&one, &plain_meta);
	mk_builder_add(&one, 5, MK_BYTES_NULL, MK_BYTES_NULL, NULL, 0);
	mk_builder_finish(&one);
	mk_frame_set_producer((uint8_t *)one.frame.buf, one.frame.len, 1, 0, 100);
	assert_int_equal(mk_frame_decode((const uint8_t *)one.frame.buf,
					 one.frame.len, 0, &v, NULL), MK_OK);
	assert_int_equal(v.meta.producer_id, 1);
	assert_int_equal(v.meta.base_sequence, 100);
	mk_builder_release(&one);
}

/* ======================================================================= */
/* partitioner                                                             */
/* ======================================================================= */

static int pfk(const char *key, int n)
{
	return mk_partition_for_key(mk_bytes_of(key, strlen(key)), n,
				    MK_PARTITIONER_MURMUR2);
}

static int pfk_crc(const char *key, int n)
{
	return mk_partition_for_key(mk_bytes_of(key, strlen(key)), n,
				    MK_PARTITIONER_CRC32);
}

static void test_partitioner(void **state)
{
	(void)state;
	/* Kafka's murmur2 (Utils.murmur2, as a Java int): the vectors of
	 * Kafka's own UtilsTest and of kafka-python 2.0's murmur2, which
	 * agree: every length mod 4 and the empty key. */
	static const struct { const char *key; int32_t hash; } v[] = {
		{ "21", -973932308 },
		{ "foobar", -790332482 },
		{ "a-little-bit-long-string", -985981536 },
		{ "a-little-bit-longer-string", -1486304829 },
		{ "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971 },
		{ "abc", 479470107 },
		{ "1", -1993445489 },
		{ "12", 126087238 },
		{ "123", -267702483 },
		{ "1234", -1614185708 },
		{ "12345", -1188365604 },
		{ "0", 971027396 },
		{ "", 275646681 },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint32_t h = mk_murmur2((const uint8_t *)v[i].key,
					strlen(v[i].key));
		if ((int32_t)h != v[i].hash)
			print_error("murmur2(%s) = %d, want %d\n", v[i].key,
				    (int)(int32_t)h, (int)v[i].hash);
		assert_int_equal((int32_t)h, v[i].hash);
		/* The Java client's partition: toPositive (the sign bit
		 * cleared, not abs()) mod n. */
		uint32_t pos = (uint32_t)v[i].hash & 0x7fffffffu;
		assert_int_equal(pfk(v[i].key, 7), (int)(pos % 7));
		assert_int_equal(pfk(v[i].key, 1000003), (int)(pos % 1000003));
	}
	assert_int_equal(pfk("anything", 1), 0);
	/* Bytes, not strings: a NUL inside the key counts. */
	assert_int_not_equal(mk_murmur2((const uint8_t *)"a\0b", 3),
			     mk_murmur2((const uint8_t *)"a\0c", 3));

	/* The crc32 choice: zlib's CRC-32 mod n, any length, any alignment:
	 * crc32("123456789") = 0xcbf43926, crc32("user-42") = 0x7d06b873. */
	assert_int_equal(pfk_crc("123456789", 7), 0xcbf43926u % 7);
	assert_int_equal(pfk_crc("user-42", 5), 0);
	assert_int_equal(pfk_crc("", 4), 0);
	uint8_t key[200];
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 37 + 11);
	for (size_t at = 0; at < 4; at++)
		for (size_t n = 0; n + at <= sizeof(key); n += 7) {
			uLong z = crc32(crc32(0L, Z_NULL, 0), key + at, (uInt)n);
			assert_int_equal(mk_partition_for_key(mk_bytes_of(key + at, n), 1000003,
							      MK_PARTITIONER_CRC32),
					 (int)(z % 1000003u));
		}

	/* Stable and spread: 1000 keys over 4 partitions, each > 10%. */
	int hist[4] = { 0 };
	for (int i = 0; i < 1000; i++) {
		char k[32];
		snprintf(k, sizeof(k), "key-%d", i);
		int p = pfk(k, 4);
		assert_true(p >= 0 && p < 4);
		assert_int_equal(pfk(k, 4), p);
		hist[p]++;
	}
	for (int p = 0; p < 4; p++) {
		if (hist[p] <= 100)
			print_error("partition %d got %d of 1000 keys\n", p, hist[p]);
		assert_true(hist[p] > 100);
	}
	/* And over 3 and 16 partitions, every partition gets some. */
	int h3[3] = { 0 }, h16[16] = { 0 };
	for (int i = 0; i < 1000; i++) {
		char k[32];
		snprintf(k, sizeof(k), "order-%d", i);
		h3[pfk(k, 3)]++;
		h16[pfk(k, 16)]++;
	}
	for (int p = 0; p < 3; p++)
		assert_true(h3[p] > 200);
	for (int p = 0; p < 16; p++)
		assert_true(h16[p] > 20);
}

/* ======================================================================= */
/* clusters                                                                */
/* ======================================================================= */

typedef struct {
	char root[64];
	char dir[128];
	mk_config cfg;
	mk_cluster *c;
	mk_producers *ps;         /* the producers of c */
	mk_topic *t;
	struct tprod *live[8];    /* open test producers: receipts pulled */
	int nlive;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	tl_tmpdir(f->root, sizeof(f->root), "producer");
	snprintf(f->dir, sizeof(f->dir), "%s/data", f->root);
	tl_config(&f->cfg, 1);
	*state = f;
	return 0;
}

static void close_cluster(fixture *f)
{
	mk_topic_put(f->t);
	f->t = NULL;
	mk_producers_free(f->ps);
	f->ps = NULL;
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

/* Defaults, brokers 1..n, the manual clock. */
static void brokers(fixture *f, int n)
{
	tl_config(&f->cfg, n);
}

static void open_cluster(fixture *f)
{
	f->c = tl_cluster_open(f->dir, &f->cfg);
	f->ps = mk_producers_new(f->c);
}

static void use_topic(fixture *f, const char *name)
{
	mk_topic_put(f->t);
	f->t = mk_cluster_topic(f->c, name);
	assert_non_null(f->t);
}

static void create(fixture *f, const char *name, int partitions, int rf)
{
	tl_create_topic(f->c, name, partitions, rf, NULL, NULL);
	use_topic(f, name);
}

static mk_partition *part(fixture *f, int i)
{
	mk_partition *p = mk_topic_partition(f->t, i);
	assert_non_null(p);
	return p;
}

static mk_partition_info info(mk_partition *p)
{
	mk_partition_info in;
	mk_partition_info_get(p, &in);
	return in;
}

static int64_t leo(fixture *f, int i)
{
	return info(part(f, i)).leo;
}

static void pull_all(fixture *f);

static void advance(fixture *f, int64_t ms)
{
	assert_int_equal(mk_cluster_clock_advance(f->c, ms, NULL), MK_OK);
	pull_all(f);
}

/* What a partition holds, batch by batch. */
#define MAXB 64
#define MAXR 512
typedef struct {
	int nbatches;
	struct {
		int64_t base;
		int32_t count;
		int64_t pid;
		int16_t epoch;
		int32_t seq;
	} b[MAXB];
	int n;
	int64_t off[MAXR];
	char key[MAXR][16];
	char val[MAXR][32];
} contents;

/* Everything below the HW of partition i. */
static void read_part(mk_partition *p, contents *r)
{
	memset(r, 0, sizeof(*r));
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	int64_t visible;
	mk_err err = mk_partition_fetch(p, info(p).log_start, SIZE_MAX, &out,
					&visible, &why);
	if (err)
		print_error("fetch: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	size_t pos = 0;
	while (pos < out.len) {
		mk_batch_view b;
		assert_int_equal(mk_frame_decode((const uint8_t *)out.buf + pos,
						 out.len - pos, 0, &b, NULL), MK_OK);
		assert_true(r->nbatches < MAXB);
		r->b[r->nbatches].base = b.meta.base_offset;
		r->b[r->nbatches].count = b.record_count;
		r->b[r->nbatches].pid = b.meta.producer_id;
		r->b[r->nbatches].epoch = b.meta.producer_epoch;
		r->b[r->nbatches].seq = b.meta.base_sequence;
		r->nbatches++;
		mk_record_iter it;
		mk_record_view rec;
		mk_record_iter_init(&it, &b);
		while (mk_record_next(&it, &rec)) {
			assert_true(r->n < MAXR);
			r->off[r->n] = rec.offset;
			if (rec.key.len >= 0) {
				assert_true(rec.key.len < 16);
				memcpy(r->key[r->n], rec.key.ptr, (size_t)rec.key.len);
			} else {
				strcpy(r->key[r->n], "<null>");
			}
			assert_true(rec.value.len >= 0 && rec.value.len < 32);
			memcpy(r->val[r->n], rec.value.ptr, (size_t)rec.value.len);
			r->n++;
		}
		pos += b.frame_len;
	}
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

static const char *joined(const contents *r, char *buf, size_t n)
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
		char buf_[8192];                                            \
		assert_string_equal(joined((r), buf_, sizeof(buf_)), (expect)); \
	} while (0)

/* ---- accumulator ------------------------------------------------------- */

typedef struct {
	int n;
	struct {
		char topic[32];
		int partition;
		int64_t base;
		int32_t count;
		int acks;
	} r[256];
} receipts;

/*
 * A topic producer under test. Its receipts are pulled into rs after every
 * call and clock advance. With linger.ms 0, add() only collects records
 * and end_write() sends them in one call, as one write does.
 */
typedef struct tprod {
	fixture *f;
	mk_producer *p;
	receipts *rs;
	bool collect;
	int n;
	char *key[64], *val[64];
} tprod;

static void pull(tprod *acc)
{
	mk_receipt r[16];
	size_t n;
	while ((n = mk_producer_take_receipts(acc->p, r, 16)) > 0) {
		for (size_t i = 0; i < n && acc->rs; i++) {
			receipts *rs = acc->rs;
			assert_true(rs->n < 256);
			snprintf(rs->r[rs->n].topic, sizeof(rs->r[rs->n].topic), "%s",
				 acc->f->t->name);
			rs->r[rs->n].partition = r[i].partition;
			rs->r[rs->n].base = r[i].base;
			rs->r[rs->n].count = r[i].count;
			rs->r[rs->n].acks = r[i].acks;
			rs->n++;
		}
	}
}

static void pull_all(fixture *f)
{
	for (int i = 0; i < f->nlive; i++)
		pull(f->live[i]);
}

static tprod *tprod_open(fixture *f, const mk_producer_opts *o, receipts *rs,
			 bool collect)
{
	tprod *acc = calloc(1, sizeof(*acc));
	assert_non_null(acc);
	acc->f = f;
	acc->rs = rs;
	acc->collect = collect;
	if (rs)
		memset(rs, 0, sizeof(*rs));
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_producer_open(f->ps, f->t, MK_PARTITION_ANY, o, &acc->p, &why);
	if (err)
		print_error("open: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
	assert_true(f->nlive < 8);
	f->live[f->nlive++] = acc;
	return acc;
}

static tprod *acc_new(fixture *f, int acks, int64_t batch_size,
		      int64_t linger_ms, receipts *rs)
{
	mk_producer_limits lim = { batch_size, linger_ms };
	mk_producer_opts o = {
		.acks = acks,
		.seq = -1,
		.keep_receipts = true,
		.limits = &lim,
	};
	return tprod_open(f, &o, rs, linger_ms == 0);
}

static mk_err send_collected(tprod *acc, mk_strbuf *why)
{
	mk_record_in recs[64];
	for (int i = 0; i < acc->n; i++)
		recs[i] = (mk_record_in){
			acc->key[i] ? mk_bytes_of(acc->key[i], strlen(acc->key[i])) : MK_BYTES_NULL,
			mk_bytes_of(acc->val[i], strlen(acc->val[i])), NULL, 0 };
	size_t taken;
	mk_err err = tl_producer_send(acc->f->c, acc->p, recs, (size_t)acc->n,
				      &taken, why);
	for (int i = 0; i < acc->n; i++) {
		free(acc->key[i]);
		free(acc->val[i]);
	}
	acc->n = 0;
	pull(acc);
	return err;
}

static void add(tprod *acc, const char *key, const char *val)
{
	assert_true(acc->n < 64);
	acc->key[acc->n] = key ? strdup(key) : NULL;
	acc->val[acc->n] = strdup(val);
	acc->n++;
	if (acc->collect)
		return;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = send_collected(acc, &why);
	if (err)
		print_error("add %s: %s: %s\n", val, mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
}

/* The end of one write (for collected records: the write itself). */
static mk_err end_write_why(tprod *acc, mk_strbuf *why)
{
	return send_collected(acc, why);
}

static void end_write(tprod *acc)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = end_write_why(acc, &why);
	if (err)
		print_error("end_write: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
}

static mk_err flush_why(tprod *acc, mk_strbuf *why)
{
	mk_err err = tl_producer_flush(acc->f->c, acc->p, why);
	pull(acc);
	return err;
}

static void acc_flush(tprod *acc)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = flush_why(acc, &why);
	if (err)
		print_error("flush: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	mk_strbuf_release(&why);
}

/* Close: flushes first. */
static void acc_free(tprod *acc)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = flush_why(acc, &why);
	if (err)
		print_error("close: %s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_OK);
	assert_int_equal(mk_producer_close(acc->p, &why), MK_OK);
	mk_strbuf_release(&why);
	fixture *f = acc->f;
	for (int i = 0; i < f->nlive; i++)
		if (f->live[i] == acc)
			f->live[i] = f->live[--f->nlive];
	free(acc);
}

/* The exact frame size of n one-record-per-value keyless records "vI". */
static int64_t frame_bytes(int n)
{
	mk_batch_builder b;
	mk_builder_init(&b, &plain_meta);
	for (int i = 0; i < n; i++)
		mk_builder_add(&b, 1000, MK_BYTES_NULL, mk_bytes_of("v0", 2), NULL, 0);
	int64_t size = (int64_t)mk_builder_size(&b);
	mk_builder_release(&b);
	return size;
}

static void rec_name(char *buf, size_t n, int i)
{
	snprintf(buf, n, "v%d", i % 10);    /* fixed size: 2 bytes */
}

/* A batch that reaches batch.size is sent within the add that filled it. */
static void test_acc_batch_size(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	receipts rs;
	/* Three records fill a batch; linger is long and never passes. */
	tprod *acc = acc_new(f, -1, frame_bytes(3), 1000000, &rs);
	char v[8];
	for (int i = 0; i < 3; i++) {
		assert_int_equal(leo(f, 0), 0);
		rec_name(v, sizeof(v), i);
		add(acc, NULL, v);
	}
	assert_int_equal(leo(f, 0), 3);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.r[0].topic, "t");
	assert_int_equal(rs.r[0].partition, 0);
	assert_int_equal(rs.r[0].base, 0);
	assert_int_equal(rs.r[0].count, 3);
	assert_int_equal(rs.r[0].acks, -1);
	/* end of write: nothing more is due. */
	for (int i = 3; i < 5; i++) {
		rec_name(v, sizeof(v), i);
		add(acc, NULL, v);
	}
	end_write(acc);
	assert_int_equal(leo(f, 0), 3);
	assert_int_equal(mk_producer_deadline(acc->p), 1000000);
	for (int i = 5; i < 8; i++) {
		rec_name(v, sizeof(v), i);
		add(acc, NULL, v);
	}
	/* v5 filled the second batch; v6 and v7 are open. */
	assert_int_equal(leo(f, 0), 6);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.r[1].base, 3);
	assert_int_equal(rs.r[1].count, 3);
	acc_flush(acc);
	assert_int_equal(leo(f, 0), 8);
	assert_int_equal(rs.n, 3);
	assert_int_equal(rs.r[2].base, 6);
	assert_int_equal(rs.r[2].count, 2);
	assert_int_equal(mk_producer_deadline(acc->p), INT64_MAX);

	contents r;
	read_part(part(f, 0), &r);
	assert_int_equal(r.nbatches, 3);
	assert_values(&r, "v0,v1,v2,v3,v4,v5,v6,v7");
	for (int i = 0; i < r.nbatches; i++) {
		assert_int_equal(r.b[i].count, i < 2 ? 3 : 2);
		assert_int_equal(r.b[i].pid, -1);
	}
	/* A batch.size below one record sends every record on its own. */
	acc_free(acc);
	acc = acc_new(f, 1, 1, 1000000, &rs);
	add(acc, NULL, "x");
	add(acc, NULL, "y");
	assert_int_equal(leo(f, 0), 10);
	assert_int_equal(rs.n, 2);
	acc_free(acc);
}

/*
 * A topic append (one call) that closes several batches of a partition
 * produces them together at its end, in order, as one append of several
 * frames: every batch and receipt is there as if sent one at a time, and
 * the receipts come partition by partition. acks=all is acknowledged at
 * the end of the call too. An idempotent producer sends each at once.
 */
static void test_acc_combine(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 2, 1);
	receipts rs;
	tprod *acc = acc_new(f, -1, frame_bytes(2), 0, &rs);
	char v[8];
	for (int i = 0; i < 13; i++) {
		rec_name(v, sizeof(v), i);
		add(acc, NULL, v);
	}
	end_write(acc);
	/* v0 v1 -> 0, v2 v3 -> 1, v4 v5 -> 0, ..., the 13th -> 0 (open, due;
	 * names repeat every ten records). */
	assert_int_equal(leo(f, 0), 7);
	assert_int_equal(leo(f, 1), 6);
	assert_int_equal(rs.n, 7);
	int want_part[7] = { 0, 0, 0, 0, 1, 1, 1 };
	int64_t want_base[7] = { 0, 2, 4, 6, 0, 2, 4 };
	int want_count[7] = { 2, 2, 2, 1, 2, 2, 2 };
	for (int i = 0; i < 7; i++) {
		assert_int_equal(rs.r[i].partition, want_part[i]);
		assert_int_equal(rs.r[i].base, want_base[i]);
		assert_int_equal(rs.r[i].count, want_count[i]);
		assert_int_equal(rs.r[i].acks, -1);
	}
	contents r;
	read_part(part(f, 0), &r);
	assert_int_equal(r.nbatches, 4);
	assert_values(&r, "v0,v1,v4,v5,v8,v9,v2");
	read_part(part(f, 1), &r);
	assert_int_equal(r.nbatches, 3);
	assert_values(&r, "v2,v3,v6,v7,v0,v1");
	/* Keyless records go on after the partition whose batch closed last
	 * (the 13th record's, on 0): the next one starts on 1. */
	add(acc, NULL, "n");
	end_write(acc);
	assert_int_equal(leo(f, 1), 7);
	acc_free(acc);
}

/* Combined batches are judged one by one: on a compacted topic the
 * batch holding a keyless record is refused, the ones around it are
 * appended (and acknowledged), and the write reports the refusal. */
static void test_acc_combine_refused(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	tl_create_topic(f->c, "k", 1, 1, "cleanup.policy=compact", NULL);
	use_topic(f, "k");
	receipts rs;
	/* Two records with one-byte keys fill a batch. */
	tprod *acc = acc_new(f, -1, frame_bytes(2) + 2, 0, &rs);
	add(acc, "a", "v0");
	add(acc, "b", "v1");            /* batch 1 */
	add(acc, NULL, "v2");
	add(acc, "c", "v3");            /* batch 2: a keyless record */
	add(acc, "d", "v4");
	add(acc, "e", "v5");            /* batch 3 */
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(end_write_why(acc, &why), MK_INVALID_RECORD);
	assert_non_null(strstr(why.buf, "keyless"));
	mk_strbuf_release(&why);
	assert_int_equal(leo(f, 0), 4);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.r[0].base, 0);
	assert_int_equal(rs.r[1].base, 2);
	contents r;
	read_part(part(f, 0), &r);
	assert_int_equal(r.nbatches, 2);
	assert_values(&r, "v0,v1,v4,v5");
	acc_free(acc);
}

/* Combined batches report errors in their order, as one at a time: a
 * batch whose append fails with a storage error (its roll cannot create
 * the next segment) is reported as that, not as the refusal of a later
 * batch of the same write. */
static void test_acc_combine_storage_error_first(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	tl_create_topic(f->c, "k", 1, 1, "cleanup.policy=compact",
			"segment.bytes=64");
	use_topic(f, "k");
	receipts rs;
	tprod *acc = acc_new(f, -1, frame_bytes(2) + 2, 0, &rs);
	add(acc, "a", "v0");
	add(acc, "b", "v1");
	end_write(acc);                 /* the segment is full now */
	assert_int_equal(leo(f, 0), 2);
	char dir[300], moved[320];
	snprintf(dir, sizeof(dir), "%s/broker-1/k-0", f->dir);
	snprintf(moved, sizeof(moved), "%s.moved", dir);
	assert_int_equal(rename(dir, moved), 0);
	add(acc, "c", "v2");
	add(acc, "d", "v3");            /* batch 2: its roll fails */
	add(acc, NULL, "v4");
	add(acc, "e", "v5");            /* batch 3: a keyless record */
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = end_write_why(acc, &why);
	if (err != MK_KAFKA_STORAGE_ERROR)
		print_error("%s: %s\n", mk_err_name(err), why.buf);
	assert_int_equal(err, MK_KAFKA_STORAGE_ERROR);
	assert_int_equal(strncmp(why.buf, "append failed", 13), 0);
	mk_strbuf_release(&why);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rename(moved, dir), 0);
	acc_free(acc);
}

/* A record that would take a batch past batch.size closes it first. */
static void test_acc_batch_never_overflows(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	receipts rs;
	tprod *acc = acc_new(f, 1, frame_bytes(2) + 5, 1000000, &rs);
	add(acc, NULL, "v0");
	add(acc, NULL, "v1");
	assert_int_equal(leo(f, 0), 0);     /* two fit, below batch.size */
	add(acc, NULL, "v2");               /* would overflow: closes v0 v1 */
	assert_int_equal(leo(f, 0), 2);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.r[0].count, 2);
	acc_flush(acc);
	contents r;
	read_part(part(f, 0), &r);
	assert_int_equal(r.nbatches, 2);
	assert_values(&r, "v0,v1,v2");
	acc_free(acc);
}

/* Topic `one` gets recs one append each, `all` all of them in one
 * append; partition by partition, the same batches must come out. */
static void compare_one_and_all(fixture *f, const char *one, const char *all,
				const mk_record_in *recs, int nrec, int npart)
{
	/* About ten records a batch. */
	mk_producer_limits lim = { frame_bytes(10) + 60, 1000000 };
	mk_producer_opts o = { .acks = -1, .seq = -1, .limits = &lim };
	const char *names[2] = { one, all };
	for (int t = 0; t < 2; t++) {
		create(f, names[t], npart, 1);
		mk_producer *p;
		mk_strbuf why = MK_STRBUF_INIT;
		assert_int_equal(mk_producer_open(f->ps, f->t, MK_PARTITION_ANY, &o,
						  &p, &why), MK_OK);
		size_t taken;
		if (t == 0) {
			for (int i = 0; i < nrec; i++) {
				assert_int_equal(tl_producer_send(f->c, p, &recs[i], 1,
								  &taken, &why), MK_OK);
				assert_int_equal(taken, 1);
			}
		} else {
			assert_int_equal(tl_producer_send(f->c, p, recs, (size_t)nrec,
							  &taken, &why), MK_OK);
			assert_int_equal(taken, (size_t)nrec);
		}
		assert_int_equal(mk_producer_close(p, &why), MK_OK);
		mk_strbuf_release(&why);
	}
	static contents a, b;
	int total = 0, batches = 0;
	for (int i = 0; i < npart; i++) {
		use_topic(f, one);
		read_part(part(f, i), &a);
		use_topic(f, all);
		read_part(part(f, i), &b);
		assert_int_equal(a.nbatches, b.nbatches);
		for (int k = 0; k < a.nbatches; k++)
			assert_int_equal(a.b[k].count, b.b[k].count);
		assert_int_equal(a.n, b.n);
		for (int k = 0; k < a.n; k++) {
			assert_string_equal(a.key[k], b.key[k]);
			assert_string_equal(a.val[k], b.val[k]);
		}
		total += a.n;
		batches += a.nbatches;
	}
	assert_int_equal(total, nrec);
	assert_true(batches >= nrec / 12);
}

/*
 * A topic append adds its records a run at a time (one partition, one
 * grow of the batch), and an append of keyed records only takes them
 * partition by partition: the batches are the same as when each record
 * is its own append. Keyed runs (keys that hash to one partition in a
 * row), keyless runs across closes of the sticky partition's batch,
 * records that do not fit and close a batch first, headers.
 */
static void test_acc_runs_match_one_at_a_time(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	enum { NREC = 300, NPART = 3 };
	static char keys[NREC][8], vals[NREC][32];
	static mk_record_in recs[NREC];
	const mk_header hdr[2] = {
		{ mk_bytes_of("h", 1), mk_bytes_of("hv", 2) },
		{ mk_bytes_of("n", 1), MK_BYTES_NULL },
	};
	for (int i = 0; i < NREC; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", (i * 5) % 9);
		int n = snprintf(vals[i], sizeof(vals[i]), "v%d-", i);
		for (int k = 0; k < i % 13; k++)
			vals[i][n++] = (char)('a' + k);
		vals[i][n] = '\0';
		recs[i] = (mk_record_in){
			mk_bytes_of(keys[i], strlen(keys[i])),
			mk_bytes_of(vals[i], (size_t)n),
			i % 5 == 0 ? hdr : NULL, i % 5 == 0 ? (size_t)(i % 3) : 0 };
	}
	/* keyed only: grouped by partition */
	compare_one_and_all(f, "kone", "kall", recs, NREC, NPART);
	/* runs of keyless records among them */
	for (int i = 0; i < NREC; i++)
		if ((i / 7) % 3 == 0)
			recs[i].key = MK_BYTES_NULL;
	compare_one_and_all(f, "one", "all", recs, NREC, NPART);
}

/*
 * Where keyless records go after an append of keyed records only must not
 * depend on whether that append took its records one at a time or grouped
 * by partition: the sticky partition moves on by one each time its batch
 * closes, in the order the records close batches. Here the keyed append
 * closes partition 1's batch and then the sticky partition 0's (sticky
 * becomes 1); taken partition by partition, 0's closed first and then 1's
 * too moved the sticky partition on (to 2).
 */
static void test_acc_sticky_after_grouped_keyed(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	/* One-byte keys hashing to partitions 0 and 1 (of 3). */
	static char k[3][2];
	int found = 0;
	for (char c = 'a'; c <= 'z' && found != 3; c++) {
		char s[2] = { c, 0 };
		int pt = pfk(s, 3);
		if (pt >= 0 && pt < 2 && !(found & (1 << pt))) {
			memcpy(k[pt], s, 2);
			found |= 1 << pt;
		}
	}
	assert_int_equal(found, 3);
	/* Every record is 2 bytes of key and value: batches of two. */
	mk_producer_limits lim = { frame_bytes(2), 1000000 };
	mk_producer_opts o = { .acks = 1, .seq = -1, .limits = &lim };
	mk_record_in keyless = { MK_BYTES_NULL, mk_bytes_of("x0", 2), NULL, 0 };
	mk_record_in keyed[3] = {
		{ mk_bytes_of(k[1], 1), mk_bytes_of("a", 1), NULL, 0 },
		{ mk_bytes_of(k[1], 1), mk_bytes_of("b", 1), NULL, 0 },
		{ mk_bytes_of(k[0], 1), mk_bytes_of("c", 1), NULL, 0 },
	};
	mk_record_in after = { MK_BYTES_NULL, mk_bytes_of("y0", 2), NULL, 0 };
	const char *names[2] = { "one", "all" };
	int64_t leos[2][3];
	for (int t = 0; t < 2; t++) {
		create(f, names[t], 3, 1);
		mk_producer *p;
		mk_strbuf why = MK_STRBUF_INIT;
		size_t taken;
		assert_int_equal(mk_producer_open(f->ps, f->t, MK_PARTITION_ANY,
						  &o, &p, &why), MK_OK);
		/* The sticky partition: 0 (a new topic's first). */
		assert_int_equal(tl_producer_send(f->c, p, &keyless, 1, &taken,
						  &why), MK_OK);
		if (t == 0) {
			for (int i = 0; i < 3; i++)
				assert_int_equal(tl_producer_send(f->c, p, &keyed[i], 1,
								  &taken, &why), MK_OK);
		} else {
			assert_int_equal(tl_producer_send(f->c, p, keyed, 3, &taken,
							  &why), MK_OK);
		}
		assert_int_equal(leo(f, 0), 2);
		assert_int_equal(leo(f, 1), 2);
		assert_int_equal(tl_producer_send(f->c, p, &after, 1, &taken,
						  &why), MK_OK);
		assert_int_equal(mk_producer_close(p, &why), MK_OK);
		mk_strbuf_release(&why);
		for (int i = 0; i < 3; i++)
			leos[t][i] = leo(f, i);
	}
	/* One at a time: y0 on partition 1 (the one after 0). */
	assert_int_equal(leos[0][0], 2);
	assert_int_equal(leos[0][1], 3);
	assert_int_equal(leos[0][2], 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(leos[1][i], leos[0][i]);
}

/*
 * A partition append is one batch checked against message.max.bytes
 * before it is encoded: a batch exactly at the limit goes, one byte over
 * is refused whole (nothing appended, nothing left in the producer's
 * batch for the next append), with and without headers.
 */
static void test_partition_append_max_bytes_exact(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	const mk_header hdr[1] = { { mk_bytes_of("h", 1), mk_bytes_of("hv", 2) } };
	mk_record_in recs[3] = {
		{ mk_bytes_of("k", 1), mk_bytes_of("v0", 2), NULL, 0 },
		{ MK_BYTES_NULL, mk_bytes_of("v1", 2), hdr, 1 },
		{ mk_bytes_of("kk", 2), mk_bytes_of("", 0), NULL, 0 },
	};
	mk_batch_builder b;
	mk_builder_init(&b, &plain_meta);
	for (int i = 0; i < 3; i++)
		mk_builder_add(&b, 1000, recs[i].key, recs[i].value,
			       recs[i].headers, recs[i].nheaders);
	int64_t exact = (int64_t)mk_builder_size(&b);
	mk_builder_release(&b);
	for (int over = 1; over >= 0; over--) {
		char name[8], cfg[64];
		snprintf(name, sizeof(name), "m%d", over);
		snprintf(cfg, sizeof(cfg), "message.max.bytes=%lld",
			 (long long)(exact - over));
		tl_create_topic(f->c, name, 1, 1, cfg, NULL);
		use_topic(f, name);
		mk_producer_opts o = { .acks = 1, .seq = -1 };
		mk_producer *p;
		mk_strbuf why = MK_STRBUF_INIT;
		size_t taken = 99;
		assert_int_equal(mk_producer_open(f->ps, f->t, 0, &o, &p, &why),
				 MK_OK);
		assert_int_equal(tl_producer_send(f->c, p, recs, 3, &taken, &why),
				 over ? MK_MESSAGE_TOO_LARGE : MK_OK);
		assert_int_equal(taken, over ? 0 : 3);
		assert_int_equal(leo(f, 0), over ? 0 : 3);
		/* The next append starts from an empty batch. */
		mk_strbuf_reset(&why);
		assert_int_equal(tl_producer_send(f->c, p, recs, 2, &taken, &why),
				 MK_OK);
		assert_int_equal(taken, 2);
		assert_int_equal(mk_producer_close(p, &why), MK_OK);
		mk_strbuf_release(&why);
		contents r;
		read_part(part(f, 0), &r);
		assert_int_equal(r.nbatches, over ? 1 : 2);
		assert_int_equal(r.b[r.nbatches - 1].count, 2);
		assert_int_equal(r.n, over ? 2 : 5);
	}
}

/*
 * A topic append checks every record against message.max.bytes before
 * adding any: a record whose one-record batch is exactly the limit goes;
 * one byte more refuses the whole append (the records before it too).
 */
static void test_topic_append_max_bytes_exact(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	static char big[101];
	memset(big, 'b', 100);
	mk_record_in recs[3] = {
		{ MK_BYTES_NULL, mk_bytes_of("s0", 2), NULL, 0 },
		{ mk_bytes_of("d", 1), mk_bytes_of(big, 99), NULL, 0 },
		{ MK_BYTES_NULL, mk_bytes_of("s1", 2), NULL, 0 },
	};
	int64_t limit = (int64_t)mk_frame_size_of_one(recs[1].key, recs[1].value,
						      NULL, 0);
	char cfg[64];
	snprintf(cfg, sizeof(cfg), "message.max.bytes=%lld", (long long)limit);
	tl_create_topic(f->c, "t", 2, 1, cfg, NULL);
	use_topic(f, "t");
	mk_producer_limits lim = { 1 << 20, 1000000 };
	mk_producer_opts o = { .acks = 1, .seq = -1, .limits = &lim };
	mk_producer *p;
	mk_strbuf why = MK_STRBUF_INIT;
	size_t taken = 99;
	assert_int_equal(mk_producer_open(f->ps, f->t, MK_PARTITION_ANY, &o, &p,
					  &why), MK_OK);
	recs[1].value = mk_bytes_of(big, 100);
	assert_int_equal(tl_producer_send(f->c, p, recs, 3, &taken, &why),
			 MK_MESSAGE_TOO_LARGE);
	assert_int_equal(taken, 0);
	assert_int_equal(tl_producer_flush(f->c, p, &why), MK_OK);
	assert_int_equal(leo(f, 0) + leo(f, 1), 0);
	recs[1].value = mk_bytes_of(big, 99);
	mk_strbuf_reset(&why);
	assert_int_equal(tl_producer_send(f->c, p, recs, 3, &taken, &why), MK_OK);
	assert_int_equal(taken, 3);
	assert_int_equal(mk_producer_close(p, &why), MK_OK);
	assert_int_equal(leo(f, 0) + leo(f, 1), 3);
	mk_strbuf_release(&why);
}

/* Under the manual clock a lingering batch goes when linger.ms passes. */
static void test_acc_linger(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	receipts rs;
	tprod *acc = acc_new(f, -1, 1 << 20, 100, &rs);
	advance(f, 5000);
	add(acc, NULL, "a");
	add(acc, NULL, "b");
	end_write(acc);
	assert_int_equal(leo(f, 0), 0);
	assert_int_equal(mk_producer_deadline(acc->p), 5100);
	advance(f, 60);
	/* A record added later joins the same batch, whose deadline holds. */
	add(acc, NULL, "c");
	end_write(acc);
	assert_int_equal(mk_producer_deadline(acc->p), 5100);
	advance(f, 39);
	assert_int_equal(leo(f, 0), 0);
	assert_int_equal(rs.n, 0);
	advance(f, 1);                  /* 5100: due, sent by the clock */
	assert_int_equal(leo(f, 0), 3);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.r[0].base, 0);
	assert_int_equal(rs.r[0].count, 3);
	assert_int_equal(mk_producer_deadline(acc->p), INT64_MAX);

	/* The next batch lingers from its first record. */
	add(acc, NULL, "d");
	end_write(acc);
	assert_int_equal(mk_producer_deadline(acc->p), 5200);
	advance(f, 99);
	add(acc, NULL, "e");             /* joins d's batch */
	end_write(acc);
	assert_int_equal(leo(f, 0), 3);
	advance(f, 1);
	assert_int_equal(leo(f, 0), 5);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.r[1].base, 3);
	assert_int_equal(rs.r[1].count, 2);

	/* A write that ends past the deadline sends the batch itself (here
	 * the clock moved without ticking the accumulators). */
	add(acc, NULL, "e2");
	end_write(acc);
	assert_true(mk_clock_advance(&f->c->clock, 100));
	assert_int_equal(leo(f, 0), 5);
	end_write(acc);
	assert_int_equal(leo(f, 0), 6);
	assert_int_equal(rs.n, 3);
	acc_flush(acc);
	assert_int_equal(rs.n, 3);

	/* linger.ms = 0: the end of every write sends what it added. */
	acc_free(acc);
	acc = acc_new(f, -1, 1 << 20, 0, &rs);
	add(acc, NULL, "f");
	add(acc, NULL, "g");
	assert_int_equal(leo(f, 0), 6);
	end_write(acc);
	assert_int_equal(leo(f, 0), 8);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.r[0].count, 2);
	acc_free(acc);

	contents r;
	read_part(part(f, 0), &r);
	assert_values(&r, "a,b,c,d,e,e2,f,g");
	assert_int_equal(r.nbatches, 4);
}

/*
 * Keyless records stick to one partition until its batch closes (full,
 * lingered or flushed), then move to the next partition, round robin.
 */
static void test_acc_sticky(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 3, 1);
	receipts rs;
	tprod *acc = acc_new(f, 1, frame_bytes(2), 100, &rs);
	char v[8];
	for (int i = 0; i < 8; i++) {
		rec_name(v, sizeof(v), i);
		add(acc, NULL, v);
	}
	/* v0 v1 -> 0, v2 v3 -> 1, v4 v5 -> 2, v6 v7 -> 0. */
	assert_int_equal(leo(f, 0), 4);
	assert_int_equal(leo(f, 1), 2);
	assert_int_equal(leo(f, 2), 2);
	assert_int_equal(rs.n, 4);
	int expect_part[] = { 0, 1, 2, 0 };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rs.r[i].partition, expect_part[i]);
		assert_int_equal(rs.r[i].count, 2);
		assert_int_equal(rs.r[i].acks, 1);
	}
	/* The sticky partition is now 1. One record lingers there and the
	 * clock sends it; the next keyless record goes to 2. */
	add(acc, NULL, "x");
	end_write(acc);
	assert_int_equal(leo(f, 1), 2);
	advance(f, 100);
	assert_int_equal(leo(f, 1), 3);
	add(acc, NULL, "y");
	acc_flush(acc);
	assert_int_equal(leo(f, 2), 3);
	/* After the flush closed partition 2's batch: partition 0. */
	add(acc, NULL, "z");
	acc_flush(acc);
	assert_int_equal(leo(f, 0), 5);

	add(acc, NULL, "w");             /* -> 1 */
	acc_flush(acc);
	assert_int_equal(leo(f, 1), 4);

	/* One flush closing the sticky partition's batch and another
	 * partition's moves keyless records on by one partition, not two.
	 * Sticky is 2 now: a keyless record there and a keyed one on 0. */
	assert_int_equal(pfk("w", 3), 0);
	add(acc, NULL, "u");             /* -> 2 */
	add(acc, "w", "k");              /* -> 0 */
	acc_flush(acc);
	assert_int_equal(leo(f, 2), 4);
	assert_int_equal(leo(f, 0), 6);
	add(acc, NULL, "t");             /* -> 0, the next after 2 */
	acc_flush(acc);
	assert_int_equal(leo(f, 0), 7);
	/* Sticky is 1: a keyless record there and a keyed one on 2, the
	 * partition right after it. Keyless records go on to 2, not 0. */
	assert_int_equal(pfk("key-2", 3), 2);
	add(acc, NULL, "s");             /* -> 1 */
	add(acc, "key-2", "k2");     /* -> 2 */
	acc_flush(acc);
	assert_int_equal(leo(f, 1), 5);
	assert_int_equal(leo(f, 2), 5);
	add(acc, NULL, "q");             /* -> 2 */
	acc_flush(acc);
	assert_int_equal(leo(f, 2), 6);
	acc_free(acc);

	contents r;
	read_part(part(f, 0), &r);
	assert_values(&r, "v0,v1,v6,v7,z,k,t");
	read_part(part(f, 1), &r);
	assert_values(&r, "v2,v3,x,w,s");
	read_part(part(f, 2), &r);
	assert_values(&r, "v4,v5,y,u,k2,q");
}

/*
 * Keyed records go to crc32(key) mod partitions; one write touching several
 * partitions makes one batch per partition touched; flush sends all;
 * order within a partition is the order written; receipts match the log.
 */
static void test_acc_keys_flush_order(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 4, 1);
	receipts rs;
	tprod *acc = acc_new(f, -1, 1 << 20, 1000, &rs);
	static const char *const keys[] = { "a", "b", "c", "d", "e", "f" };
	int count[4] = { 0 };
	bool touched[4] = { false };
	char v[32];
	for (int i = 0; i < 60; i++) {
		const char *k = keys[i % 6];
		snprintf(v, sizeof(v), "%s-%d", k, i);
		add(acc, k, v);
		count[pfk(k, 4)]++;
		touched[pfk(k, 4)] = true;
	}
	end_write(acc);
	for (int p = 0; p < 4; p++)
		assert_int_equal(leo(f, p), 0);
	acc_flush(acc);
	int ntouched = 0;
	for (int p = 0; p < 4; p++) {
		assert_int_equal(leo(f, p), count[p]);
		ntouched += touched[p];
	}
	assert_true(ntouched >= 2);
	assert_int_equal(rs.n, ntouched);     /* one batch per partition touched */
	for (int i = 0; i < rs.n; i++) {
		assert_int_equal(rs.r[i].base, 0);
		assert_int_equal(rs.r[i].count, count[rs.r[i].partition]);
	}
	for (int p = 0; p < 4; p++) {
		contents r;
		read_part(part(f, p), &r);
		assert_int_equal(r.nbatches, touched[p] ? 1 : 0);
		/* Every key on its partition, values in write order. */
		int last[6] = { -1, -1, -1, -1, -1, -1 };
		for (int j = 0; j < r.n; j++) {
			int ki = r.key[j][0] - 'a', n;
			assert_true(ki >= 0 && ki < 6);
			assert_int_equal(pfk(r.key[j], 4), p);
			assert_int_equal(sscanf(r.val[j] + 2, "%d", &n), 1);
			assert_true(n > last[ki]);
			last[ki] = n;
			if (j)
				assert_true(n > atoi(r.val[j - 1] + 2));
		}
	}

	/* Linger 0: the same write pattern, one batch per partition touched
	 * at the end of the write, each acknowledged there. */
	acc_free(acc);
	acc = acc_new(f, -1, 1 << 20, 0, &rs);
	for (int i = 0; i < 12; i++) {
		snprintf(v, sizeof(v), "%s-%d", keys[i % 6], 100 + i);
		add(acc, keys[i % 6], v);
	}
	end_write(acc);
	assert_int_equal(rs.n, ntouched);
	for (int p = 0; p < 4; p++) {
		contents r;
		read_part(part(f, p), &r);
		assert_int_equal(r.nbatches, touched[p] ? 2 : 0);
		assert_int_equal(r.n, count[p] + count[p] / 5);
	}
	acc_free(acc);
}

/* Receipts under each acks: the base offset for 1 and all; acks=0 too
 * (the file layer prints "-" for it). */
static void test_acc_receipts_acks(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	int acks[] = { 0, 1, -1 };
	int64_t base = 0;
	for (int i = 0; i < 3; i++) {
		receipts rs;
		tprod *acc = acc_new(f, acks[i], 1 << 20, 0, &rs);
		add(acc, NULL, "r1");
		add(acc, "k", "r2");
		end_write(acc);
		assert_int_equal(rs.n, 1);
		assert_int_equal(rs.r[0].acks, acks[i]);
		assert_int_equal(rs.r[0].count, 2);
		assert_int_equal(rs.r[0].base, base);
		base += 2;
		acc_free(acc);
		assert_int_equal(rs.n, 1);       /* nothing more at close */
	}
	assert_int_equal(leo(f, 0), 6);
	/* No receipt callback at all is fine. */
	tprod *acc = acc_new(f, 1, 1 << 20, 0, NULL);
	add(acc, NULL, "r3");
	end_write(acc);
	acc_free(acc);
	assert_int_equal(leo(f, 0), 7);
}

/* Freeing an accumulator flushes its open batches. */
static void test_acc_free_flushes(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 2, 1);
	receipts rs;
	tprod *acc = acc_new(f, -1, 1 << 20, 100000, &rs);
	add(acc, NULL, "a");
	add(acc, "user-3", "b");          /* partition 1 */
	assert_int_equal(pfk("user-3", 2), 1);
	end_write(acc);
	assert_int_equal(leo(f, 0) + leo(f, 1), 0);
	acc_free(acc);
	assert_int_equal(leo(f, 0), 1);
	assert_int_equal(leo(f, 1), 1);
	assert_int_equal(rs.n, 2);
}

/*
 * A lingering batch sent by the clock with no write in progress: its error
 * goes to /errors at once and is returned by the next write's end (once).
 */
static void test_acc_deferred_error(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	receipts rs;
	tprod *acc = acc_new(f, 1, 1 << 20, 100, &rs);
	add(acc, NULL, "lost");
	end_write(acc);
	assert_int_equal(mk_cluster_broker_crash(f->c, 1, false, NULL), MK_OK);
	assert_int_equal(info(part(f, 0)).leader, -1);
	advance(f, 100);                 /* the clock sends it: no leader */
	assert_int_equal(mk_producer_deadline(acc->p), INT64_MAX);
	assert_int_equal(rs.n, 0);
	mk_strbuf log = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_errlog_format(&f->c->errlog, &log);
	assert_non_null(strstr(log.buf, "LEADER_NOT_AVAILABLE"));
	assert_non_null(strstr(log.buf, "lingering batch of topic t"));
	assert_int_equal(end_write_why(acc, &why), MK_LEADER_NOT_AVAILABLE);
	assert_true(why.len > 0);
	mk_strbuf_reset(&why);
	assert_int_equal(end_write_why(acc, &why), MK_OK);
	assert_int_equal(flush_why(acc, &why), MK_OK);
	/* A flush also reports a deferred error. */
	add(acc, NULL, "lost-too");
	end_write(acc);
	advance(f, 100);
	assert_int_equal(flush_why(acc, &why), MK_LEADER_NOT_AVAILABLE);
	assert_int_equal(flush_why(acc, &why), MK_OK);
	acc_free(acc);
	mk_strbuf_release(&log);
	mk_strbuf_release(&why);
}

/* An idempotent accumulator stamps id, epoch and per-partition sequences. */
static void test_acc_idempotent(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 2, 1);
	assert_int_equal(mk_cluster_producer_create(f->c, "p", NULL), MK_OK);
	int64_t pid;
	int16_t epoch;
	assert_int_equal(mk_cluster_producer_get(f->c, "p", &pid, &epoch), MK_OK);
	receipts rs;
	mk_producer_limits lim = { 1 << 20, 0 };
	mk_producer_opts o = {
		.acks = MK_PRODUCER_ACKS_DEFAULT,   /* idempotent: acks=all */
		.producer = "p",
		.seq = -1,
		.keep_receipts = true,
		.limits = &lim,
	};
	tprod *acc = tprod_open(f, &o, &rs, true);
	/* "d" -> partition 1 (murmur2 odd), "123456789" -> 0. */
	assert_int_equal(pfk("d", 2), 1);
	assert_int_equal(pfk("123456789", 2), 0);
	for (int w = 0; w < 3; w++) {
		add(acc, "d", "x");
		add(acc, "d", "y");
		add(acc, "123456789", "z");
		end_write(acc);
	}
	acc_free(acc);
	assert_int_equal(rs.n, 6);
	for (int i = 0; i < rs.n; i++)
		assert_int_equal(rs.r[i].acks, -1);
	contents r;
	read_part(part(f, 1), &r);
	assert_int_equal(r.nbatches, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(r.b[i].pid, pid);
		assert_int_equal(r.b[i].epoch, epoch);
		assert_int_equal(r.b[i].seq, 2 * i);
	}
	read_part(part(f, 0), &r);
	for (int i = 0; i < 3; i++)
		assert_int_equal(r.b[i].seq, i);
	assert_int_equal(mk_partition_next_sequence(part(f, 1), pid, epoch), 6);
	assert_int_equal(mk_partition_next_sequence(part(f, 0), pid, epoch), 3);
	assert_int_equal(mk_partition_next_sequence(part(f, 0), pid, epoch + 1), -1);
	assert_int_equal(mk_partition_next_sequence(part(f, 0), pid + 1, epoch), -1);
}

/* ---- producer identities ----------------------------------------------- */

static void test_producer_identities(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	mk_strbuf why = MK_STRBUF_INIT;
	int64_t id1, id2, id;
	int16_t e;
	assert_int_equal(mk_cluster_producer_get(f->c, "p1", &id, &e),
			 MK_UNKNOWN_PRODUCER_ID);
	assert_int_equal(mk_cluster_producer_create(f->c, "p1", NULL), MK_OK);
	assert_int_equal(mk_cluster_producer_create(f->c, "p2", NULL), MK_OK);
	assert_int_equal(mk_cluster_producer_create(f->c, "p1", &why),
			 MK_PRODUCER_ALREADY_EXISTS);
	assert_true(why.len > 0);
	mk_strbuf_reset(&why);
	assert_int_equal(mk_cluster_producer_create(f->c, "bad/name", &why),
			 MK_INVALID_REQUEST);
	assert_int_equal(mk_cluster_producer_init(f->c, "nope", NULL),
			 MK_UNKNOWN_PRODUCER_ID);
	assert_int_equal(mk_cluster_producer_get(f->c, "p1", &id1, &e), MK_OK);
	assert_int_equal(e, 0);
	assert_int_equal(mk_cluster_producer_get(f->c, "p2", &id2, &e), MK_OK);
	assert_int_equal(e, 0);
	assert_true(id1 >= 0 && id2 >= 0 && id1 != id2);
	assert_int_equal(mk_cluster_producer_init(f->c, "p1", NULL), MK_OK);
	assert_int_equal(mk_cluster_producer_init(f->c, "p1", NULL), MK_OK);
	assert_int_equal(mk_cluster_producer_get(f->c, "p1", &id, &e), MK_OK);
	assert_int_equal(id, id1);
	assert_int_equal(e, 2);
	char **names;
	size_t n = mk_cluster_producer_names(f->c, &names);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "p1");
	assert_string_equal(names[1], "p2");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);

	/* Persisted: the same ids and epochs after a reopen, and a new
	 * producer gets an id never used before. */
	close_cluster(f);
	open_cluster(f);
	assert_int_equal(mk_cluster_producer_get(f->c, "p1", &id, &e), MK_OK);
	assert_int_equal(id, id1);
	assert_int_equal(e, 2);
	assert_int_equal(mk_cluster_producer_get(f->c, "p2", &id, &e), MK_OK);
	assert_int_equal(id, id2);
	assert_int_equal(e, 0);
	assert_int_equal(mk_cluster_producer_delete(f->c, "p2", NULL), MK_OK);
	assert_int_equal(mk_cluster_producer_create(f->c, "p3", NULL), MK_OK);
	assert_int_equal(mk_cluster_producer_get(f->c, "p3", &id, &e), MK_OK);
	assert_true(id != id1 && id != id2);
	assert_int_equal(e, 0);
	mk_strbuf_release(&why);
}

/* ---- idempotent produce through a partition ---------------------------- */

typedef struct {
	mk_err err;
	int64_t base;
	int32_t count;
	bool dup;
	char why[256];
} idem_result;

/* One idempotent batch of n records "PREFIX0".."PREFIXn-1". */
static idem_result idem(mk_partition *p, int64_t pid, int16_t epoch,
			int32_t seq, const char *prefix, int n)
{
	mk_batch_builder b;
	build(&b, prefix, n, false);
	idem_result r = { .count = n, .base = -2 };
	mk_strbuf why = MK_STRBUF_INIT;
	mk_produce_args a = { .acks = -1, .idempotent = true, .pid = pid,
			      .epoch = epoch, .seq = seq, .count = n };
	mk_produce_result res;
	r.err = mk_partition_produce(p, (uint8_t *)b.frame.buf, b.frame.len,
				     &a, &res, &why);
	if (!r.err)
		r.err = tl_ack_wait(p, &res, &why);
	r.base = res.base;
	r.count = res.count;
	r.dup = res.duplicate;
	snprintf(r.why, sizeof(r.why), "%s", why.buf ? why.buf : "");
	mk_strbuf_release(&why);
	mk_builder_release(&b);
	return r;
}

#define assert_appended(r, b, n)                                             \
	do {                                                                 \
		idem_result r_ = (r);                                        \
		if (r_.err)                                                  \
			print_error("produce: %s: %s\n", mk_err_name(r_.err), r_.why); \
		assert_int_equal(r_.err, MK_OK);                             \
		assert_false(r_.dup);                                        \
		assert_int_equal(r_.base, (b));                              \
		assert_int_equal(r_.count, (n));                             \
	} while (0)

#define assert_duplicate(r, b, n)                                            \
	do {                                                                 \
		idem_result r_ = (r);                                        \
		if (r_.err)                                                  \
			print_error("retry: %s: %s\n", mk_err_name(r_.err), r_.why); \
		assert_int_equal(r_.err, MK_OK);                             \
		assert_true(r_.dup);                                         \
		assert_int_equal(r_.base, (b));                              \
		assert_int_equal(r_.count, (n));                             \
	} while (0)

#define assert_idem_fails(r, code)                                           \
	do {                                                                 \
		idem_result r_ = (r);                                        \
		assert_int_equal(r_.err, (code));                            \
		assert_true(r_.why[0] != '\0');                              \
	} while (0)

static void make_producer(fixture *f, const char *name, int64_t *pid,
			  int16_t *epoch)
{
	assert_int_equal(mk_cluster_producer_create(f->c, name, NULL), MK_OK);
	assert_int_equal(mk_cluster_producer_get(f->c, name, pid, epoch), MK_OK);
	assert_int_equal(*epoch, 0);
}

/*
 * Batches at explicit sequences; an exact retry of each of the last five
 * returns its original offsets and appends nothing; older retries, gaps
 * and reorders are OUT_OF_ORDER_SEQUENCE_NUMBER.
 */
static void test_idem_window(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	mk_partition *p = part(f, 0);
	int64_t pid;
	int16_t ep;
	make_producer(f, "p", &pid, &ep);

	/* A plain record first, so offsets and sequences differ. */
	mk_batch_builder pb;
	build(&pb, "plain", 1, false);
	mk_produce_args pa = { .acks = 1, .seq = -1, .count = 1 };
	mk_produce_result pr;
	assert_int_equal(mk_partition_produce(p, (uint8_t *)pb.frame.buf, pb.frame.len,
					      &pa, &pr, NULL), MK_OK);
	mk_builder_release(&pb);

	/* The first batch must start at 0. */
	assert_idem_fails(idem(p, pid, ep, 1, "s", 1), MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_int_equal(leo(f, 0), 1);

	int32_t seq[7];
	int64_t base[7];
	int32_t s = 0;
	int64_t off = 1;
	for (int i = 0; i < 7; i++) {
		char prefix[8];
		snprintf(prefix, sizeof(prefix), "b%d.", i);
		seq[i] = s;
		base[i] = off;
		assert_appended(idem(p, pid, ep, s, prefix, i + 1), off, i + 1);
		assert_int_equal(mk_partition_next_sequence(p, pid, ep), s + i + 1);
		s += i + 1;
		off += i + 1;
		/* Retry every earlier batch: the last five deduplicated. */
		for (int j = 0; j <= i; j++) {
			char pj[8];
			snprintf(pj, sizeof(pj), "b%d.", j);
			if (i - j < 5)
				assert_duplicate(idem(p, pid, ep, seq[j], pj, j + 1),
						 base[j], j + 1);
			else
				assert_idem_fails(idem(p, pid, ep, seq[j], pj, j + 1),
						  MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
		}
		assert_int_equal(leo(f, 0), off);
	}
	/* Gap, reorder, partial retry. */
	assert_idem_fails(idem(p, pid, ep, s + 1, "g", 1), MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_idem_fails(idem(p, pid, ep, s - 1, "g", 1), MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_idem_fails(idem(p, pid, ep, seq[6], "g", 3), MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_int_equal(leo(f, 0), off);
	/* seq < 0 takes the next one the leader expects. */
	assert_appended(idem(p, pid, ep, -1, "auto", 2), off, 2);
	assert_duplicate(idem(p, pid, ep, s, "auto", 2), off, 2);
	assert_int_equal(mk_partition_next_sequence(p, pid, ep), s + 2);

	/* The log holds each batch once, stamped. */
	contents r;
	read_part(p, &r);
	assert_int_equal(r.nbatches, 9);
	assert_int_equal(r.n, (int)off + 2);
	assert_int_equal(r.b[0].pid, -1);
	for (int i = 0; i < 7; i++) {
		assert_int_equal(r.b[i + 1].pid, pid);
		assert_int_equal(r.b[i + 1].epoch, ep);
		assert_int_equal(r.b[i + 1].seq, seq[i]);
		assert_int_equal(r.b[i + 1].base, base[i]);
	}
	assert_int_equal(r.b[8].seq, s);
}

/* A new epoch fences the old one; it must start at sequence 0. */
static void test_idem_fencing(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	mk_partition *p = part(f, 0);
	int64_t pid, pid2;
	int16_t ep, ep2;
	make_producer(f, "p", &pid, &ep);
	assert_appended(idem(p, pid, 0, 0, "a", 2), 0, 2);
	assert_appended(idem(p, pid, 0, 2, "b", 1), 2, 1);

	assert_int_equal(mk_cluster_producer_init(f->c, "p", NULL), MK_OK);
	assert_int_equal(mk_cluster_producer_get(f->c, "p", &pid2, &ep2), MK_OK);
	assert_int_equal(pid2, pid);
	assert_int_equal(ep2, 1);

	assert_idem_fails(idem(p, pid, 1, 3, "c", 1), MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_appended(idem(p, pid, 1, 0, "c", 1), 3, 1);
	assert_int_equal(mk_partition_next_sequence(p, pid, 1), 1);
	assert_int_equal(mk_partition_next_sequence(p, pid, 0), -1);
	/* The old epoch: new batches and retries alike. */
	assert_idem_fails(idem(p, pid, 0, 3, "d", 1), MK_PRODUCER_FENCED);
	assert_idem_fails(idem(p, pid, 0, 2, "b", 1), MK_PRODUCER_FENCED);
	assert_idem_fails(idem(p, pid, 0, 0, "a", 2), MK_PRODUCER_FENCED);
	assert_idem_fails(idem(p, pid, 0, -1, "d", 1), MK_PRODUCER_FENCED);
	assert_int_equal(leo(f, 0), 4);
	/* The new epoch's own retry is still a duplicate. */
	assert_duplicate(idem(p, pid, 1, 0, "c", 1), 3, 1);
	/* Fencing survives a reopen (rebuilt from the snapshot). */
	close_cluster(f);
	open_cluster(f);
	use_topic(f, "t");
	p = part(f, 0);
	assert_idem_fails(idem(p, pid, 0, 3, "d", 1), MK_PRODUCER_FENCED);
	assert_duplicate(idem(p, pid, 1, 0, "c", 1), 3, 1);
	assert_appended(idem(p, pid, 1, 1, "e", 1), 4, 1);
}

static void remove_snapshots(fixture *f, int broker)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/broker-%d/t-0/producer-snapshot",
		 f->dir, broker);
	unlink(path);
}

/* Deduplication survives a close and reopen, with or without a snapshot. */
static void test_idem_reopen(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	int64_t pid;
	int16_t ep;
	make_producer(f, "p", &pid, &ep);
	for (int i = 0; i < 6; i++)
		assert_appended(idem(part(f, 0), pid, ep, 2 * i, "r", 2), 2 * i, 2);

	for (int round = 0; round < 3; round++) {
		close_cluster(f);
		if (round == 1)
			remove_snapshots(f, 1);     /* rebuilt from the log */
		if (round == 2) {
			/* A stale snapshot (from before the last batches):
			 * the batches past it are replayed from the log. */
			char path[512];
			snprintf(path, sizeof(path),
				 "%s/broker-1/t-0/producer-snapshot", f->dir);
			mk_producer_state ps;
			mk_pstate_init(&ps);
			apply(&ps, pid, ep, 0, 0, 2);
			mk_strbuf text = MK_STRBUF_INIT;
			mk_pstate_format(&ps, &text);
			assert_int_equal(mk_file_replace(path, text.buf, text.len), MK_OK);
			mk_strbuf_release(&text);
			mk_pstate_free(&ps);
		}
		open_cluster(f);
		use_topic(f, "t");
		mk_partition *p = part(f, 0);
		assert_int_equal(leo(f, 0), 12 + round * 2);
		assert_int_equal(mk_partition_next_sequence(p, pid, ep), 12 + round * 2);
		/* The last five batches are still deduplicated. */
		for (int i = 1 + round; i < 6 + round; i++)
			assert_duplicate(idem(p, pid, ep, 2 * i, "r", 2), 2 * i, 2);
		assert_idem_fails(idem(p, pid, ep, 2 * round, "r", 2),
				  MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
		assert_idem_fails(idem(p, pid, ep, 14 + round * 2, "r", 2),
				  MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
		assert_int_equal(leo(f, 0), 12 + round * 2);
		/* And the producer goes on where it was. */
		assert_appended(idem(p, pid, ep, 12 + round * 2, "r", 2),
				12 + round * 2, 2);
	}
}

/*
 * A snapshot that does not describe the log (ahead of it, or unreadable)
 * is dropped and the state rebuilt from the log.
 */
static void test_idem_bad_snapshot(void **state)
{
	fixture *f = *state;
	brokers(f, 1);
	open_cluster(f);
	create(f, "t", 1, 1);
	int64_t pid;
	int16_t ep;
	make_producer(f, "p", &pid, &ep);
	for (int i = 0; i < 3; i++)
		assert_appended(idem(part(f, 0), pid, ep, i, "s", 1), i, 1);
	char path[512];
	snprintf(path, sizeof(path), "%s/broker-1/t-0/producer-snapshot", f->dir);
	static const char *const bad[] = {
		/* ahead of the log: claims offsets the log does not hold */
		"producer-snapshot 1\ncovered_to 1000\nproducer 999 0 0:0:500:0\n",
		/* not a snapshot */
		"\x01\x02garbage",
	};
	for (int round = 0; round < 2; round++) {
		close_cluster(f);
		assert_int_equal(mk_file_replace(path, bad[round], strlen(bad[round])), MK_OK);
		open_cluster(f);
		use_topic(f, "t");
		mk_partition *p = part(f, 0);
		assert_int_equal(leo(f, 0), 3 + round);
		assert_int_equal(mk_partition_next_sequence(p, 999, 0), -1);
		assert_int_equal(mk_partition_next_sequence(p, pid, ep), 3 + round);
		assert_duplicate(idem(p, pid, ep, 0, "s", 1), 0, 1);
		assert_duplicate(idem(p, pid, ep, 2 + round, "s", 1), 2 + round, 1);
		assert_appended(idem(p, pid, ep, 3 + round, "s", 1), 3 + round, 1);
	}
}

/* ---- promotion: an acks=all produce with a follower -------------------- */

typedef struct {
	mk_partition *p;
	int64_t pid;
	int16_t epoch;
	int32_t seq;
	const char *prefix;
	int n;
	idem_result res;
	atomic_bool done;
} async_idem;

static void *idem_main(void *arg)
{
	async_idem *a = arg;
	a->res = idem(a->p, a->pid, a->epoch, a->seq, a->prefix, a->n);
	atomic_store(&a->done, true);
	return NULL;
}

/*
 * An idempotent (acks=all) produce on a partition with a follower: run it
 * in a thread and drive fetch rounds until it returns (bounded).
 */
static idem_result idem_replicated(fixture *f, mk_partition *p, int64_t pid,
				   int16_t epoch, int32_t seq, const char *prefix,
				   int n)
{
	async_idem a = { p, pid, epoch, seq, prefix, n, { 0 }, false };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, idem_main, &a), 0);
	int i;
	for (i = 0; i < 20000 && !atomic_load(&a.done); i++) {
		assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	pthread_join(th, NULL);
	assert_true(atomic_load(&a.done));
	/* One more round: the follower learns the HW. */
	assert_int_equal(mk_cluster_replicate(f->c, NULL), MK_OK);
	return a.res;
}

static void test_idem_promotion(void **state)
{
	fixture *f = *state;
	brokers(f, 2);
	open_cluster(f);
	create(f, "t", 1, 2);
	mk_partition *p = part(f, 0);
	assert_int_equal(info(p).leader, 1);
	int64_t pid;
	int16_t ep;
	make_producer(f, "p", &pid, &ep);
	for (int i = 0; i < 3; i++) {
		char prefix[8];
		snprintf(prefix, sizeof(prefix), "x%d.", i);
		assert_appended(idem_replicated(f, p, pid, ep, 3 * i, prefix, 3), 3 * i, 3);
	}
	assert_int_equal(info(p).hw, 9);

	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL), MK_OK);
	assert_int_equal(info(p).leader, 2);
	/* The new leader deduplicates as the old one did. */
	for (int i = 0; i < 3; i++) {
		char prefix[8];
		snprintf(prefix, sizeof(prefix), "x%d.", i);
		assert_duplicate(idem(p, pid, ep, 3 * i, prefix, 3), 3 * i, 3);
	}
	assert_idem_fails(idem(p, pid, ep, 10, "gap", 1), MK_OUT_OF_ORDER_SEQUENCE_NUMBER);
	assert_int_equal(mk_partition_next_sequence(p, pid, ep), 9);
	assert_int_equal(info(p).leo, 9);
	/* And goes on at the next sequence. */
	assert_appended(idem_replicated(f, p, pid, ep, 9, "y", 2), 9, 2);
	assert_duplicate(idem(p, pid, ep, 9, "y", 2), 9, 2);

	/* Back to broker 1, which learned the new batch as a follower. */
	assert_int_equal(mk_cluster_promote(f->c, 1, "t", 0, false, NULL), MK_OK);
	assert_int_equal(info(p).leader, 1);
	assert_duplicate(idem(p, pid, ep, 9, "y", 2), 9, 2);
	assert_duplicate(idem(p, pid, ep, 0, "x0.", 3), 0, 3);

	/* A follower's state also survives a reopen. */
	close_cluster(f);
	open_cluster(f);
	use_topic(f, "t");
	p = part(f, 0);
	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL), MK_OK);
	assert_duplicate(idem(p, pid, ep, 3, "x1.", 3), 3, 3);
	assert_duplicate(idem(p, pid, ep, 9, "y", 2), 9, 2);
	assert_int_equal(info(p).leo, 11);
}


/*
 * The parked path (mk_producer_flush_begin, mk_producer_check): nothing
 * waits. A partition producer's acks=all batch is owed until the follower
 * fetches; check says where to watch (the partition, its change count
 * before the look) and settles it then, advancing an explicit seq=. A
 * topic producer's batches over two partitions are owed one by one; a
 * ticket past its deadline on the manual clock settles as
 * REQUEST_TIMED_OUT, told once, after the last ticket settled.
 */
static void test_check_without_waiting(void **state)
{
	fixture *f = *state;
	brokers(f, 2);
	f->cfg.auto_replication = 0;
	f->cfg.request_timeout_ms = 500;
	f->cfg.replica_lag_time_max_ms = 100000;
	open_cluster(f);
	create(f, "t", 2, 2);
	for (int i = 0; i < 2; i++)    /* the followers join the ISR */
		assert_int_equal(mk_partition_follower_fetch(part(f, i), 2), MK_OK);

	mk_producer_opts o = { .acks = -1, .seq = -1 };
	mk_producer *p;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_producer_open(f->ps, f->t, 0, &o, &p, &why), MK_OK);
	mk_record_in r = { MK_BYTES_NULL, mk_bytes_of("a", 1), NULL, 0 };
	size_t taken;
	assert_int_equal(mk_producer_append(p, &r, 1, &taken, &why), MK_OK);
	assert_int_equal(taken, 1);
	assert_int_equal(leo(f, 0), 1);
	bool pending;
	mk_ack_watch w;
	assert_int_equal(mk_producer_check(p, false, &pending, &w, &why), MK_OK);
	assert_true(pending);
	assert_ptr_equal(w.p, part(f, 0));
	assert_int_equal(w.seen, mk_partition_seq(part(f, 0)));
	assert_int_equal(w.deadline_ms, mk_clock_now(&f->c->clock) + 500);
	assert_int_equal(mk_partition_follower_fetch(part(f, 0), 2), MK_OK);
	assert_true(mk_partition_seq(part(f, 0)) != w.seen);   /* the event */
	assert_int_equal(mk_producer_check(p, false, &pending, &w, &why), MK_OK);
	assert_false(pending);
	assert_int_equal(why.len, 0);
	assert_int_equal(mk_producer_close(p, &why), MK_OK);

	/* A topic producer: keyed records on both partitions, sent by
	 * flush_begin, owed until each partition's follower fetched. */
	mk_producer_limits lim = { 1 << 20, 100000 };
	mk_producer_opts to = { .acks = -1, .seq = -1, .limits = &lim };
	assert_int_equal(mk_producer_open(f->ps, f->t, MK_PARTITION_ANY, &to, &p, &why),
			 MK_OK);
	const char *keys[2] = { NULL, NULL };
	char kb[2][16];
	for (int i = 0, found = 0; found < 2; i++) {    /* one key per partition */
		snprintf(kb[found], sizeof(kb[found]), "k%d", i);
		int at = pfk(kb[found], 2);
		if (!keys[at]) {
			keys[at] = kb[found];
			found++;
		}
	}
	mk_record_in rs[2];
	for (int i = 0; i < 2; i++)
		rs[i] = (mk_record_in){ mk_bytes_of(keys[i], strlen(keys[i])),
					mk_bytes_of("b", 1), NULL, 0 };
	assert_int_equal(mk_producer_append(p, rs, 2, &taken, &why), MK_OK);
	assert_int_equal(leo(f, 0) + leo(f, 1), 1);     /* lingering */
	assert_int_equal(mk_producer_flush_begin(p, &why), MK_OK);
	assert_int_equal(leo(f, 0) + leo(f, 1), 3);
	assert_int_equal(mk_producer_check(p, true, &pending, &w, &why), MK_OK);
	assert_true(pending);
	assert_int_equal(mk_partition_follower_fetch(part(f, 0), 2), MK_OK);
	assert_int_equal(mk_producer_check(p, true, &pending, &w, &why), MK_OK);
	assert_true(pending);
	assert_ptr_equal(w.p, part(f, 1));              /* the one still owed */
	advance(f, 499);
	assert_int_equal(mk_producer_check(p, true, &pending, &w, &why), MK_OK);
	assert_true(pending);
	advance(f, 1);
	assert_int_equal(mk_producer_check(p, true, &pending, &w, &why),
			 MK_REQUEST_TIMED_OUT);
	assert_false(pending);
	assert_non_null(strstr(why.buf, "request.timeout.ms"));
	mk_strbuf_reset(&why);
	assert_int_equal(mk_producer_check(p, true, &pending, &w, &why), MK_OK);
	assert_false(pending);                           /* told once */
	assert_int_equal(mk_producer_close(p, &why), MK_OK);
	mk_strbuf_release(&why);
}

/*
 * A close waits for nothing: it sends what is open and takes one last
 * look (mk_producer_close). An acknowledgement still owed then is
 * REQUEST_TIMED_OUT (the batch stays appended and a later fetch
 * acknowledges it); one the follower's fetch gave is MK_OK; a ticket that
 * failed (a new leader) is told at that look even while another is still
 * owed. tl_producer_send settles by fetch rounds.
 */
static void test_close_takes_one_last_look(void **state)
{
	fixture *f = *state;
	brokers(f, 2);
	f->cfg.auto_replication = 0;
	f->cfg.replica_lag_time_max_ms = 100000;
	open_cluster(f);
	create(f, "t", 2, 2);
	for (int i = 0; i < 2; i++)    /* the followers join the ISR */
		assert_int_equal(mk_partition_follower_fetch(part(f, i), 2), MK_OK);
	mk_producer_opts o = { .acks = -1, .seq = -1 };
	mk_record_in r = { MK_BYTES_NULL, mk_bytes_of("a", 1), NULL, 0 };
	mk_producer *p;
	mk_strbuf why = MK_STRBUF_INIT;
	size_t taken;
	assert_int_equal(mk_producer_open(f->ps, f->t, 0, &o, &p, &why), MK_OK);
	assert_int_equal(mk_producer_append(p, &r, 1, &taken, &why), MK_OK);
	assert_int_equal(mk_producer_close(p, &why), MK_REQUEST_TIMED_OUT);
	assert_non_null(strstr(why.buf, "closed before the ISR acknowledged 1 batch"));
	assert_int_equal(leo(f, 0), 1);
	assert_int_equal(info(part(f, 0)).hw, 0);
	assert_int_equal(mk_partition_follower_fetch(part(f, 0), 2), MK_OK);
	assert_int_equal(info(part(f, 0)).hw, 1);

	mk_strbuf_reset(&why);
	assert_int_equal(mk_producer_open(f->ps, f->t, 0, &o, &p, &why), MK_OK);
	assert_int_equal(mk_producer_append(p, &r, 1, &taken, &why), MK_OK);
	assert_int_equal(mk_partition_follower_fetch(part(f, 0), 2), MK_OK);
	assert_int_equal(mk_producer_close(p, &why), MK_OK);
	assert_int_equal(why.len, 0);

	/* Settled by explicit fetch rounds. */
	assert_int_equal(mk_producer_open(f->ps, f->t, 0, &o, &p, &why), MK_OK);
	assert_int_equal(tl_producer_send(f->c, p, &r, 1, &taken, &why), MK_OK);
	assert_int_equal(info(part(f, 0)).hw, 3);
	assert_int_equal(mk_producer_close(p, &why), MK_OK);

	/* A topic producer owing on both partitions; partition 0 gets a new
	 * leader, so its ticket fails, and partition 1's is still owed. */
	mk_producer_limits lim = { 1 << 20, 100000 };
	mk_producer_opts to = { .acks = -1, .seq = -1, .limits = &lim };
	assert_int_equal(mk_producer_open(f->ps, f->t, MK_PARTITION_ANY, &to, &p,
					  &why), MK_OK);
	const char *keys[2] = { NULL, NULL };
	char kb[2][16];
	for (int i = 0, found = 0; found < 2; i++) {    /* one key per partition */
		snprintf(kb[found], sizeof(kb[found]), "k%d", i);
		int at = pfk(kb[found], 2);
		if (!keys[at]) {
			keys[at] = kb[found];
			found++;
		}
	}
	mk_record_in rs[2];
	for (int i = 0; i < 2; i++)
		rs[i] = (mk_record_in){ mk_bytes_of(keys[i], strlen(keys[i])),
					mk_bytes_of("b", 1), NULL, 0 };
	assert_int_equal(mk_producer_append(p, rs, 2, &taken, &why), MK_OK);
	assert_int_equal(mk_producer_flush_begin(p, &why), MK_OK);
	assert_int_equal(leo(f, 0) + leo(f, 1), 5);
	assert_int_equal(mk_cluster_promote(f->c, 2, "t", 0, false, NULL), MK_OK);
	assert_int_equal(mk_producer_close(p, &why), MK_FENCED_LEADER_EPOCH);
	assert_non_null(strstr(why.buf, "leader changed"));
	mk_strbuf_release(&why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pstate_check_apply),
		cmocka_unit_test(test_pstate_window_of_five),
		cmocka_unit_test(test_pstate_epochs),
		cmocka_unit_test(test_pstate_snapshot),
		cmocka_unit_test(test_frame_set_producer),
		cmocka_unit_test(test_partitioner),
		cmocka_unit_test_setup_teardown(test_acc_batch_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_combine, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_combine_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_combine_storage_error_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_batch_never_overflows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_runs_match_one_at_a_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_linger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_sticky, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partition_append_max_bytes_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_topic_append_max_bytes_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_sticky_after_grouped_keyed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_keys_flush_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_receipts_acks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_free_flushes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_deferred_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acc_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_producer_identities, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idem_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idem_fencing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idem_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idem_bad_snapshot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idem_promotion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_without_waiting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_takes_one_last_look, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
