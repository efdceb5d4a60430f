/*
 * fetcher.c — a group member's poll (fetcher.h): the positions from the
 * coordinator, a fetch per partition into the poller's cache, each fetch
 * reduced to its visible records (visible.h), the end told back.
 *
 * Organisation: the cache (one entry per partition: the frames of its
 * last fetch, the offsets they cover, the leader epoch and visible end
 * they were read at, and with read_committed the aborted transactions of
 * that range); poll_partition(), one partition's share of a poll, which
 * refetches whenever the cache does not hold the position; and the poll
 * itself, which takes the partitions in the coordinator's order until the
 * poll's records are handed out.
 */
#include "fetcher.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#include "visible.h"

#define POLL_FETCH_BYTES (1u << 20)

/* ---- the poll cache ------------------------------------------------------ */

struct poll_cached {
	char *topic;
	int partition;
	int32_t epoch;           /* the leader epoch the frames were read in */
	int64_t first, next;     /* offsets the frames cover */
	int64_t visible;         /* the HW (LSO) when they were read */
	mk_strbuf buf;
	mk_aborted_list aborted; /* read_committed: what the frames hide */
};

mk_poll_cache *mk_poll_cache_new(void)
{
	return mk_xcalloc(1, sizeof(mk_poll_cache));
}

void mk_poll_cache_clear(mk_poll_cache *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->entries[i].topic);
		mk_strbuf_release(&c->entries[i].buf);
		mk_aborted_free(&c->entries[i].aborted);
	}
	free(c->entries);
	c->entries = NULL;
	c->n = 0;
}

void mk_poll_cache_free(mk_poll_cache *c)
{
	if (!c)
		return;
	mk_poll_cache_clear(c);
	free(c);
}

static poll_cached *cache_entry(mk_poll_cache *c, const char *topic, int part)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->entries[i].partition == part && !strcmp(c->entries[i].topic, topic))
			return &c->entries[i];
	poll_cached *v = mk_xrealloc(c->entries, (c->n + 1) * sizeof(*v));
	c->entries = v;
	poll_cached *e = &v[c->n++];
	memset(e, 0, sizeof(*e));
	e->topic = mk_xstrdup(topic);
	e->partition = part;
	mk_strbuf_init(&e->buf, 0);
	return e;
}

static size_t cache_bytes(const mk_poll_cache *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n; i++)
		n += c->entries[i].buf.alloc;
	return n;
}

/* The offsets the fetched frames cover. */
static void cache_bounds(poll_cached *pc)
{
	mk_frame_iter it;
	mk_batch_view b;
	mk_frame_iter_init(&it, pc->buf.buf, pc->buf.len);
	while (mk_frame_next(&it, &b)) {
		if (it.frame == (const uint8_t *)pc->buf.buf)
			pc->first = b.meta.base_offset;
		pc->next = mk_batch_next_offset(&b);
	}
}

/* Does pc hold the frames a read from `from` in leader epoch `epoch`
 * starts with? */
static bool cache_covers(const poll_cached *pc, int64_t from, int32_t epoch)
{
	return pc->buf.len && pc->epoch == epoch && from >= pc->first &&
	       from < pc->next && from < pc->visible;
}

/* The first error of a partition the poll skipped, and its reason. */
typedef struct {
	mk_err err;
	mk_strbuf why;
} poll_skip;

/*
 * Fetch p from `from` into pc, read in leader epoch `epoch`
 * (read_committed: up to the LSO, with the aborted transactions of that
 * range). False when nothing came: pc is then empty, and an error, the
 * first of the poll, is kept in *sk.
 */
static bool cache_fill(poll_cached *pc, mk_partition *p, int64_t from,
		       bool committed, int32_t epoch, poll_skip *sk)
{
	mk_strbuf_reset(&pc->buf);
	mk_strbuf fwhy = MK_STRBUF_INIT;
	mk_err ferr = mk_partition_fetch_isolated(p, from, POLL_FETCH_BYTES,
						  committed ? &pc->aborted : NULL,
						  &pc->buf, &pc->visible, &fwhy);
	if (ferr && !sk->err) {
		sk->err = ferr;
		mk_strbuf_add(&sk->why, fwhy.buf, fwhy.len);
	}
	mk_strbuf_release(&fwhy);
	if (ferr || !pc->buf.len) {
		mk_strbuf_reset(&pc->buf);
		return false;
	}
	pc->epoch = epoch;
	cache_bounds(pc);
	return true;
}

/* ---- one partition's share of a poll ----------------------------------- */

/* A visible batch handed to the poller, with its partition. */
typedef struct {
	mk_poll_batch_fn fn;
	void *arg;
	const mk_poll_partition *pp;
} batch_ctx;

static size_t hand_batch(void *arg, const mk_batch_view *b, int64_t from,
			 int64_t end, size_t max, int64_t *next)
{
	batch_ctx *ctx = arg;
	return ctx->fn(ctx->arg, ctx->pp, b, from, end, max, next);
}

/* At most max (>= 1) records of one partition, from tp->from on; returns
 * how many were handed out. */
static size_t poll_partition(mk_cluster *c, mk_poll_cache *cache,
			     const mk_group_position *tp, bool committed,
			     size_t max, mk_poll_batch_fn fn, void *arg,
			     poll_skip *sk)
{
	mk_topic *t = mk_cluster_topic(c, tp->topic);
	mk_partition *p = t ? mk_topic_partition(t, tp->partition) : NULL;
	if (!p) {
		mk_topic_put(t);
		return 0;
	}
	mk_poll_partition pp = { tp->topic, tp->partition, tp->from };
	batch_ctx ctx = { fn, arg, &pp };
	poll_cached *pc = cache_entry(cache, tp->topic, tp->partition);
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	int64_t from = tp->from;
	size_t taken = 0;
	while (taken < max) {
		if (!cache_covers(pc, from, pi.leader_epoch) &&
		    !cache_fill(pc, p, from, committed, pi.leader_epoch, sk))
			break;
		mk_fetched f = { pc->buf.buf, pc->buf.len, pc->visible,
				 committed ? &pc->aborted : NULL };
		int64_t before = from;
		taken += mk_visible_batches(&f, max - taken, &from, hand_batch,
					    &ctx);
		if (from == before)
			break;
		/* Past what the cache holds: the loop fetches again (an
		 * empty fetch at the HW ends it). */
	}
	/* Keep only frames with records still to return, and at most
	 * MK_POLL_CACHE_MAX bytes of buffers over all partitions. */
	if (from >= pc->next || from >= pc->visible)
		mk_strbuf_reset(&pc->buf);
	if (cache_bytes(cache) > MK_POLL_CACHE_MAX)
		mk_strbuf_release(&pc->buf);
	mk_topic_put(t);
	return taken;
}

/* ---- the poll ------------------------------------------------------------ */

mk_err mk_fetcher_poll_batches(mk_groups *g, const char *group,
			       const char *member, int64_t max, int polls,
			       bool committed, mk_poll_cache *cache,
			       mk_poll_batch_fn fn, void *arg, int64_t *count,
			       mk_strbuf *why)
{
	*count = 0;
	mk_group_position *tg;
	size_t nt;
	int64_t max_poll;
	mk_err err = mk_group_poll_positions(g, group, member, &tg, &nt,
					     &max_poll, why);
	if (err)
		return err;
	int64_t limit = max_poll * (polls > 1 ? polls : 1);
	if (max <= 0 || max > limit)
		max = limit;
	mk_poll_cache local = { NULL, 0 };
	if (!cache)
		cache = &local;
	/* A partition that cannot be fetched now (no leader) is skipped; its
	 * error is the poll's only when no partition returned anything. */
	poll_skip sk = { MK_OK, MK_STRBUF_INIT };
	size_t last_used = SIZE_MAX;
	for (size_t k = 0; k < nt && *count < max; k++) {
		size_t took = poll_partition(mk_groups_cluster(g), cache, &tg[k],
					     committed, (size_t)(max - *count),
					     fn, arg, &sk);
		if (took) {
			*count += (int64_t)took;
			last_used = k;
		}
	}
	if (cache == &local)
		mk_poll_cache_clear(&local);
	if (!*count && sk.err) {
		err = sk.err;
		if (why)
			mk_strbuf_add(why, sk.why.buf, sk.why.len);
	}
	mk_strbuf_release(&sk.why);
	/* The next poll starts after the partition this one ended on. */
	if (last_used != SIZE_MAX)
		mk_group_poll_ended(g, group, member, tg[last_used].topic,
				    tg[last_used].partition);
	mk_group_positions_free(tg, nt);
	return err;
}

/* mk_fetcher_poll's records, one callback each. */
typedef struct {
	mk_poll_fn fn;
	void *arg;
	const mk_poll_partition *pp;
} record_ctx;

static void one_record(void *arg, const mk_record_view *rec)
{
	record_ctx *ctx = arg;
	ctx->fn(ctx->arg, ctx->pp, rec);
}

static size_t each_record(void *arg, const mk_poll_partition *pp,
			  const mk_batch_view *b, int64_t from, int64_t end,
			  size_t max, int64_t *next)
{
	record_ctx ctx = *(const record_ctx *)arg;
	ctx.pp = pp;
	return mk_visible_records(b, from, end, max, one_record, &ctx, next);
}

mk_err mk_fetcher_poll(mk_groups *g, const char *group, const char *member,
		       int64_t max, int polls, bool committed,
		       mk_poll_cache *cache, mk_poll_fn fn, void *arg,
		       int64_t *count, mk_strbuf *why)
{
	record_ctx ctx = { fn, arg, NULL };
	return mk_fetcher_poll_batches(g, group, member, max, polls, committed,
				       cache, each_record, &ctx, count, why);
}
