/*
 * Unit tests of the group coordinator (core/coordination/group.c), the
 * consumer fetcher its polls run on (core/client/fetcher.c) and the round-robin
 * assignor (core/coordination/assignor.c): determinism, eager rebalances, generation
 * fencing, sessions on the manual clock, positions and polls, commits
 * refused for stale generations, unowned partitions and offsets outside
 * the log, and committed offsets rebuilt from __consumer_offsets after a
 * restart and after a leader change of its partition.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "assignor.h"
#include "cluster.h"
#include "codec.h"
#include "fetcher.h"
#include "fileio.h"
#include "group.h"
#include "partitioner.h"
#include "testlib.h"

typedef struct {
	char dir[64];
	mk_config cfg;
	mk_cluster *c;
	mk_groups *g;
} fixture;

static void open_all(fixture *f)
{
	assert_int_equal(mk_cluster_open(f->dir, &f->cfg, &f->c, NULL), MK_OK);
	mk_cluster_start(f->c);
	assert_int_equal(mk_groups_open(f->c, &f->g, NULL), MK_OK);
}

static void close_all(fixture *f)
{
	mk_groups_close(f->g);
	mk_cluster_close(f->c);
	f->g = NULL;
	f->c = NULL;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	strcpy(f->dir, "/tmp/mk-test-group-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	mk_config_defaults(&f->cfg);
	f->cfg.manual_clock = 1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	if (f->c)
		close_all(f);
	mk_remove_tree(f->dir);
	free(f);
	return 0;
}

/* Open a one-broker cluster with topic t (4 partitions), records in each. */
static fixture *standard(void **state)
{
	fixture *f = *state;
	open_all(f);
	assert_int_equal(mk_cluster_create_topic(f->c, "t", 4, 1, NULL, 0, NULL), MK_OK);
	return f;
}

static void produce(fixture *f, const char *topic, int part, int n)
{
	mk_topic *t = mk_cluster_topic(f->c, topic);
	assert_non_null(t);
	static const mk_batch_meta meta = {
		.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
		.producer_epoch = -1, .base_sequence = -1,
	};
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	for (int i = 0; i < n; i++) {
		char v[32];
		snprintf(v, sizeof(v), "v%d", i);
		mk_builder_add(&b, 0, MK_BYTES_NULL, mk_bytes_of(v, strlen(v)), NULL, 0);
	}
	mk_builder_finish(&b);
	mk_produce_args a = { .acks = -1, .seq = -1, .count = b.count };
	mk_produce_result res;
	assert_int_equal(mk_partition_produce(mk_topic_partition(t, part),
						 (uint8_t *)b.frame.buf, b.frame.len,
						 &a, &res, NULL), MK_OK);
	assert_int_equal(tl_ack_wait(mk_topic_partition(t, part), &res, NULL), MK_OK);
	mk_builder_release(&b);
	mk_topic_put(t);
}

static void join(fixture *f, const char *member, const char *topic)
{
	const char *topics[] = { topic };
	assert_int_equal(tl_done(mk_group_join(f->g, "g", member, topics, 1, &tl_call, NULL), NULL), MK_OK);
}

/* The member's assignment as "t/0 t/2". */
static void assignment(fixture *f, const char *member, char *out, size_t n)
{
	mk_group_info gi;
	assert_int_equal(mk_group_describe(f->g, "g", member, &gi, NULL), MK_OK);
	out[0] = '\0';
	for (size_t i = 0; i < gi.nparts; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s%s/%d", i ? " " : "",
			 gi.parts[i].topic, gi.parts[i].partition);
	mk_group_info_free(&gi);
}

static int64_t generation(fixture *f)
{
	mk_group_info gi;
	assert_int_equal(mk_group_describe(f->g, "g", NULL, &gi, NULL), MK_OK);
	int64_t gen = gi.generation;
	mk_group_info_free(&gi);
	return gen;
}

/* The committed offset of t/part, -1 if none. */
static int64_t committed(fixture *f, const char *topic, int part)
{
	mk_group_info gi;
	assert_int_equal(mk_group_describe(f->g, "g", NULL, &gi, NULL), MK_OK);
	int64_t v = -1;
	for (size_t i = 0; i < gi.nparts; i++)
		if (gi.parts[i].partition == part && !strcmp(gi.parts[i].topic, topic))
			v = gi.parts[i].committed;
	mk_group_info_free(&gi);
	return v;
}

static int64_t position(fixture *f, const char *member, const char *topic, int part)
{
	mk_group_info gi;
	assert_int_equal(mk_group_describe(f->g, "g", member, &gi, NULL), MK_OK);
	int64_t v = -2;
	for (size_t i = 0; i < gi.nparts; i++)
		if (gi.parts[i].partition == part && !strcmp(gi.parts[i].topic, topic))
			v = gi.parts[i].position;
	mk_group_info_free(&gi);
	return v;
}

/* ---- the assignor ------------------------------------------------------------ */

static void assignor_is_round_robin_and_deterministic(void **state)
{
	(void)state;
	const char *ab[] = { "a", "b" };
	const char *b_only[] = { "b" };
	mk_assign_member m1[] = { { "m2", ab, 2 }, { "m1", ab, 2 }, { "m3", b_only, 1 } };
	mk_assign_member m2[] = { { "m3", b_only, 1 }, { "m1", ab, 2 }, { "m2", ab, 2 } };
	mk_assign_topic t1[] = { { "b", 3 }, { "a", 2 } };
	mk_assign_topic t2[] = { { "a", 2 }, { "b", 3 } };
	mk_assign_pair *p1, *p2;
	size_t n1 = mk_assign_round_robin(m1, 3, t1, 2, &p1);
	size_t n2 = mk_assign_round_robin(m2, 3, t2, 2, &p2);
	assert_int_equal(n1, 5);
	assert_int_equal(n2, 5);
	/* Sorted pairs a/0 a/1 b/0 b/1 b/2 over m1 m2 m3 in turn, skipping
	 * members not subscribed: a/0 m1, a/1 m2, b/0 m3, b/1 m1, b/2 m2. */
	static const char *const want[] = { "a/0 m1", "a/1 m2", "b/0 m3", "b/1 m1", "b/2 m2" };
	for (size_t i = 0; i < 5; i++) {
		char got1[32], got2[32];
		snprintf(got1, sizeof(got1), "%s/%d %s", p1[i].topic, p1[i].partition,
			 m1[p1[i].member].name);
		snprintf(got2, sizeof(got2), "%s/%d %s", p2[i].topic, p2[i].partition,
			 m2[p2[i].member].name);
		assert_string_equal(got1, want[i]);
		assert_string_equal(got2, want[i]);
	}
	free(p1);
	free(p2);
	/* A topic nobody subscribes to gets no owner. */
	mk_assign_topic t3[] = { { "c", 2 } };
	assert_int_equal(mk_assign_round_robin(m1, 3, t3, 1, &p1), 0);
	free(p1);
}

/* ---- rebalances and fencing --------------------------------------------------- */

static void join_rebalances_eagerly(void **state)
{
	fixture *f = standard(state);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_GROUP_ALREADY_EXISTS);
	assert_int_equal(generation(f), 0);
	join(f, "m1", "t");
	assert_int_equal(generation(f), 1);
	char a[128];
	assignment(f, "m1", a, sizeof(a));
	assert_string_equal(a, "t/0 t/1 t/2 t/3");
	join(f, "m2", "t");
	assert_int_equal(generation(f), 2);
	assignment(f, "m1", a, sizeof(a));
	assert_string_equal(a, "t/0 t/2");
	assignment(f, "m2", a, sizeof(a));
	assert_string_equal(a, "t/1 t/3");
	/* Unknown topic, member or group: nothing changes. */
	const char *nope[] = { "nope" };
	assert_int_equal(tl_done(mk_group_join(f->g, "g", "m3", nope, 1, &tl_call, NULL), NULL),
			 MK_UNKNOWN_TOPIC_OR_PARTITION);
	assert_int_equal(tl_done(mk_group_leave(f->g, "g", "m9", &tl_call, NULL), NULL), MK_UNKNOWN_MEMBER_ID);
	assert_int_equal(tl_done(mk_group_join(f->g, "h", "m1", nope, 1, &tl_call, NULL), NULL),
			 MK_UNKNOWN_TOPIC_OR_PARTITION);
	assert_int_equal(generation(f), 2);
	assert_int_equal(tl_done(mk_group_delete(f->g, "g", &tl_call, NULL), NULL), MK_NON_EMPTY_GROUP);
	assert_int_equal(tl_done(mk_group_leave(f->g, "g", "m1", &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(generation(f), 3);
	assignment(f, "m2", a, sizeof(a));
	assert_string_equal(a, "t/0 t/1 t/2 t/3");
	assert_int_equal(tl_done(mk_group_leave(f->g, "g", "m2", &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(tl_done(mk_group_delete(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	assert_false(mk_group_exists(f->g, "g"));
}

static void stale_generation_is_fenced(void **state)
{
	fixture *f = standard(state);
	produce(f, "t", 0, 5);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	join(f, "m1", "t");
	join(f, "m2", "t");
	assert_int_equal(mk_group_heartbeat(f->g, "g", "m1", 1, NULL), MK_ILLEGAL_GENERATION);
	assert_int_equal(mk_group_heartbeat(f->g, "g", "m1", 2, NULL), MK_OK);
	mk_commit_entry e = { "t", 0, 3 };
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "m1", 1, &e, 1, &tl_call, NULL), NULL), MK_ILLEGAL_GENERATION);
	assert_int_equal(committed(f, "t", 0), -1);
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "m1", 2, &e, 1, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(committed(f, "t", 0), 3);
	/* Unowned, out of the log, unknown member: refused, nothing changes. */
	mk_commit_entry bad[] = { { "t", 0, 4 }, { "t", 1, 0 } };
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "m1", -1, bad, 2, &tl_call, NULL), NULL),
			 MK_TOPIC_AUTHORIZATION_FAILED);
	assert_int_equal(committed(f, "t", 0), 3);
	mk_commit_entry far = { "t", 0, 6 };
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "m1", -1, &far, 1, &tl_call, NULL), NULL),
			 MK_OFFSET_OUT_OF_RANGE);
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "mx", -1, &e, 1, &tl_call, NULL), NULL),
			 MK_UNKNOWN_MEMBER_ID);
	assert_int_equal(committed(f, "t", 0), 3);
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 1, 0, NULL),
			 MK_TOPIC_AUTHORIZATION_FAILED);
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 0, 6, NULL),
			 MK_OFFSET_OUT_OF_RANGE);
	assert_int_equal(position(f, "m1", "t", 0), 0);
}

static void sessions_expire_on_the_manual_clock(void **state)
{
	fixture *f = standard(state);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	join(f, "m1", "t");
	join(f, "m2", "t");
	int removed;
	assert_int_equal(mk_cluster_clock_advance(f->c, 6000, NULL), MK_OK);
	assert_int_equal(mk_group_heartbeat(f->g, "g", "m1", 2, NULL), MK_OK);
	assert_int_equal(tl_done(mk_groups_expire(f->g, &removed, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(mk_cluster_clock_advance(f->c, 4000, NULL), MK_OK);
	/* m2 silent for exactly 10000 ms: not more than the timeout yet. */
	assert_int_equal(tl_done(mk_groups_expire(f->g, &removed, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(mk_cluster_clock_advance(f->c, 1, NULL), MK_OK);
	assert_int_equal(tl_done(mk_groups_expire(f->g, &removed, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(removed, 1);
	assert_true(mk_group_member_exists(f->g, "g", "m1"));
	assert_false(mk_group_member_exists(f->g, "g", "m2"));
	assert_int_equal(generation(f), 3);
	char a[128];
	assignment(f, "m1", a, sizeof(a));
	assert_string_equal(a, "t/0 t/1 t/2 t/3");
	/* A per-group session timeout. */
	const char *kv[] = { "session.timeout.ms=100" };
	assert_int_equal(tl_done(mk_group_configure(f->g, "g", kv, 1, &tl_call, NULL), NULL), MK_OK);
	const char *bad[] = { "session.timeout.ms=0" };
	assert_int_equal(tl_done(mk_group_configure(f->g, "g", bad, 1, &tl_call, NULL), NULL), MK_INVALID_CONFIG);
	assert_int_equal(mk_cluster_clock_advance(f->c, 101, NULL), MK_OK);
	assert_int_equal(tl_done(mk_groups_expire(f->g, &removed, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(generation(f), 4);
}

/* ---- polls and positions ----------------------------------------------------------- */

typedef struct {
	char got[512];
	int64_t n;
} collected;

static void collect(void *arg, const mk_poll_partition *pp, const mk_record_view *rec)
{
	collected *c = arg;
	snprintf(c->got + strlen(c->got), sizeof(c->got) - strlen(c->got), "%s%d@%lld",
		 c->n++ ? " " : "", pp->partition, (long long)rec->offset);
}

static void poll_and_rebalance_resume_from_commits(void **state)
{
	fixture *f = standard(state);
	for (int p = 0; p < 4; p++)
		produce(f, "t", p, 3);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	join(f, "m1", "t");
	collected c = { "", 0 };
	int64_t n;
	assert_int_equal(mk_fetcher_poll(f->g, "g", "m1", 5, 1, false, NULL, collect, &c, &n, NULL), MK_OK);
	assert_int_equal(n, 5);
	assert_string_equal(c.got, "0@0 0@1 0@2 1@0 1@1");
	/* Positions move only by advance (compare-and-set). */
	assert_int_equal(position(f, "m1", "t", 0), 0);
	assert_true(mk_group_advance(f->g, "g", "m1", "t", 0, 0, 3));
	assert_false(mk_group_advance(f->g, "g", "m1", "t", 0, 0, 3));
	assert_true(mk_group_advance(f->g, "g", "m1", "t", 1, 0, 2));
	for (int p = 0; p < 4; p++)
		assert_int_equal(mk_group_advance(f->g, "g", "m1", "t", p,
						  position(f, "m1", "t", p), 3), true);
	/* Commit the current positions, then a rebalance: m2 gets t/1 and
	 * t/3 and starts at the committed offset 3. */
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "m1", 1, NULL, 0, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(committed(f, "t", 1), 3);
	produce(f, "t", 1, 2);
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 0, 1, NULL), MK_OK);
	join(f, "m2", "t");
	assert_int_equal(position(f, "m2", "t", 1), 3);
	/* Eager: m1 kept t/0 but starts again at its committed offset too. */
	assert_int_equal(position(f, "m1", "t", 0), 3);
	memset(&c, 0, sizeof(c));
	assert_int_equal(mk_fetcher_poll(f->g, "g", "m2", 0, 1, false, NULL, collect, &c, &n, NULL), MK_OK);
	assert_string_equal(c.got, "1@3 1@4");
	memset(&c, 0, sizeof(c));
	assert_int_equal(mk_fetcher_poll(f->g, "g", "m1", 0, 1, false, NULL, collect, &c, &n, NULL), MK_OK);
	assert_int_equal(n, 0);
	/* max.poll.records caps a poll. */
	const char *kv[] = { "max.poll.records=1" };
	assert_int_equal(tl_done(mk_group_configure(f->g, "g", kv, 1, &tl_call, NULL), NULL), MK_OK);
	memset(&c, 0, sizeof(c));
	assert_int_equal(mk_fetcher_poll(f->g, "g", "m2", 0, 1, false, NULL, collect, &c, &n, NULL), MK_OK);
	assert_int_equal(n, 1);
}

static void poll_cache_follows_positions(void **state)
{
	fixture *f = standard(state);
	produce(f, "t", 0, 5);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	join(f, "m1", "t");
	mk_poll_cache *cache = mk_poll_cache_new();
	collected c = { "", 0 };
	int64_t n;
#define POLL2(want)                                                          \
	do {                                                                 \
		memset(&c, 0, sizeof(c));                                    \
		assert_int_equal(mk_fetcher_poll(f->g, "g", "m1", 2, 1, false, \
					       cache, collect, &c, &n, NULL), MK_OK); \
		assert_string_equal(c.got, want);                            \
	} while (0)
	POLL2("0@0 0@1");
	assert_true(mk_group_advance(f->g, "g", "m1", "t", 0, 0, 2));
	POLL2("0@2 0@3");
	POLL2("0@2 0@3");           /* not advanced: the same records */
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 0, 1, NULL), MK_OK);
	POLL2("0@1 0@2");           /* back inside what the cache holds */
	produce(f, "t", 0, 2);
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 0, 4, NULL), MK_OK);
	POLL2("0@4 0@5");           /* past the cached frames: fetched again */
	assert_true(mk_group_advance(f->g, "g", "m1", "t", 0, 4, 6));
	POLL2("0@6");
#undef POLL2
	mk_poll_cache_free(cache);
}

static void reset_policies(void **state)
{
	fixture *f = standard(state);
	produce(f, "t", 0, 4);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	const char *latest[] = { "auto.offset.reset=latest" };
	assert_int_equal(tl_done(mk_group_configure(f->g, "g", latest, 1, &tl_call, NULL), NULL), MK_OK);
	join(f, "m1", "t");
	assert_int_equal(position(f, "m1", "t", 0), 4);
	assert_int_equal(tl_done(mk_group_leave(f->g, "g", "m1", &tl_call, NULL), NULL), MK_OK);
	const char *none[] = { "auto.offset.reset=none" };
	assert_int_equal(tl_done(mk_group_configure(f->g, "g", none, 1, &tl_call, NULL), NULL), MK_OK);
	join(f, "m1", "t");
	assert_int_equal(position(f, "m1", "t", 0), -1);
	collected c = { "", 0 };
	int64_t n;
	assert_int_equal(mk_fetcher_poll(f->g, "g", "m1", 0, 1, false, NULL, collect, &c, &n, NULL),
			 MK_OFFSET_OUT_OF_RANGE);
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 0, 2, NULL), MK_OK);
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 1, 0, NULL), MK_OK);
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 2, 0, NULL), MK_OK);
	assert_int_equal(mk_group_seek(f->g, "g", "m1", "t", 3, 0, NULL), MK_OK);
	assert_int_equal(mk_fetcher_poll(f->g, "g", "m1", 0, 1, false, NULL, collect, &c, &n, NULL), MK_OK);
	assert_string_equal(c.got, "0@2 0@3");
}

/* ---- persistence ---------------------------------------------------------------------- */

static void offsets_survive_a_restart(void **state)
{
	fixture *f = standard(state);
	produce(f, "t", 2, 9);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	join(f, "m1", "t");
	join(f, "m1", "t");
	mk_commit_entry e = { "t", 2, 7 };
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "m1", 2, &e, 1, &tl_call, NULL), NULL), MK_OK);
	close_all(f);
	open_all(f);
	assert_true(mk_group_exists(f->g, "g"));
	assert_false(mk_group_member_exists(f->g, "g", "m1"));
	assert_int_equal(generation(f), 2);
	assert_int_equal(committed(f, "t", 2), 7);
	/* The generation goes on from where it stood. */
	join(f, "m1", "t");
	assert_int_equal(generation(f), 3);
	assert_int_equal(position(f, "m1", "t", 2), 7);
	/* A deleted group stays deleted. */
	assert_int_equal(tl_done(mk_group_leave(f->g, "g", "m1", &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(tl_done(mk_group_delete(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	close_all(f);
	open_all(f);
	assert_false(mk_group_exists(f->g, "g"));
}

static void offsets_rebuilt_after_a_leader_change(void **state)
{
	fixture *f = *state;
	f->cfg.nbrokers = 2;
	f->cfg.broker_ids[1] = 2;
	f->cfg.auto_replication = 1;
	f->cfg.fetch_interval_ms = 5;
	f->cfg.offsets_topic_replication_factor = 2;
	open_all(f);
	assert_int_equal(mk_cluster_create_topic(f->c, "t", 1, 2, NULL, 0, NULL), MK_OK);
	produce(f, "t", 0, 10);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	join(f, "m1", "t");
	mk_commit_entry e = { "t", 0, 4 };
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "m1", 1, &e, 1, &tl_call, NULL), NULL), MK_OK);
	/* Someone else's commit reaches the log behind the coordinator's back
	 * (as a previous coordinator's would): not seen while the leader
	 * stays, read back once the partition changes leader. */
	mk_topic *ot = mk_cluster_topic(f->c, MK_OFFSETS_TOPIC);
	assert_non_null(ot);
	assert_int_equal(ot->replication_factor, 2);
	static const mk_batch_meta meta = {
		.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
		.producer_epoch = -1, .base_sequence = -1,
	};
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, 0, mk_bytes_of("g/t/0", 5), mk_bytes_of("9", 1), NULL, 0);
	mk_builder_finish(&b);
	mk_produce_args a = { .acks = -1, .seq = -1, .count = 1 };
	mk_produce_result res;
	mk_partition *op = mk_topic_partition(ot, 0);
	assert_int_equal(mk_partition_produce(op, (uint8_t *)b.frame.buf, b.frame.len,
						 &a, &res, NULL), MK_OK);
	assert_int_equal(tl_ack_wait(op, &res, NULL), MK_OK);
	mk_builder_release(&b);
	assert_int_equal(committed(f, "t", 0), 4);
	mk_partition_info pi;
	mk_partition_info_get(op, &pi);
	int leader = pi.leader, other = leader == 1 ? 2 : 1;
	mk_topic_put(ot);
	assert_int_equal(mk_cluster_broker_crash(f->c, leader, false, NULL), MK_OK);
	assert_int_equal(mk_cluster_promote(f->c, other, MK_OFFSETS_TOPIC, 0, false, NULL), MK_OK);
	assert_int_equal(committed(f, "t", 0), 9);
	assert_int_equal(generation(f), 1);
	/* Commits go on through the new leader. */
	e.offset = 10;
	assert_int_equal(tl_done(mk_group_commit(f->g, "g", "m1", 1, &e, 1, &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(committed(f, "t", 0), 10);
}

static void internal_topic_cannot_be_deleted(void **state)
{
	fixture *f = standard(state);
	assert_int_equal(tl_done(mk_group_create(f->g, "g", &tl_call, NULL), NULL), MK_OK);
	assert_int_equal(mk_cluster_delete_topic(f->c, MK_OFFSETS_TOPIC, NULL),
			 MK_TOPIC_AUTHORIZATION_FAILED);
	mk_topic *t = mk_cluster_topic(f->c, MK_OFFSETS_TOPIC);
	assert_non_null(t);
	mk_topic_put(t);
	/* The group's partition is crc32(group) mod partitions. */
	assert_int_equal(mk_partition_for_key(mk_bytes_of("g", 1), 1,
					      MK_PARTITIONER_CRC32), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(assignor_is_round_robin_and_deterministic),
		T(join_rebalances_eagerly),
		T(stale_generation_is_fenced),
		T(sessions_expire_on_the_manual_clock),
		T(poll_and_rebalance_resume_from_commits),
		T(poll_cache_follows_positions),
		T(reset_policies),
		T(offsets_survive_a_restart),
		T(offsets_rebuilt_after_a_leader_change),
		T(internal_topic_cannot_be_deleted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
