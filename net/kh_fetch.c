/*
 * kh_fetch.c — Fetch, versions 4-11 (khandlers.h).
 *
 * A consumer's fetch (replica_id -1) of partitions this broker leads:
 * the stored batches as they are (Kafka's bytes, never re-encoded) from
 * fetch_offset up to the high watermark, or the LSO for read_committed
 * (isolation_level 1) with the aborted transactions overlapping what was
 * read, at most partition_max_bytes a partition and max_bytes in all
 * (the first batch always, as Kafka's "at least one batch"). The same core
 * read as a records file's (mk_partition_fetch_isolated).
 *
 * Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
 * (this broker does not lead it), FENCED_LEADER_EPOCH /
 * UNKNOWN_LEADER_EPOCH (v9+: the client's current_leader_epoch is older /
 * newer than the leader's), OFFSET_OUT_OF_RANGE.
 *
 * Long poll: with fewer than min_bytes to send and max_wait_ms > 0 the
 * request parks (kpark.h) on its partitions and is read again at each of
 * their changes, answered once min_bytes are there or max_wait_ms passed
 * (then with what there is). Fetch sessions (KIP-227, v7+) are not kept:
 * every response says session 0, which tells the client to send full
 * fetches, as a broker without session slots does. A follower's fetch
 * (replica_id >= 0) is refused: replication is the cluster's own.
 * Bounds: max_bytes and partition_max_bytes at most MK_KFETCH_MAX_BYTES
 * (Kafka's fetch.max.bytes), min_bytes at most max_bytes, at most
 * MK_KREQ_MAX_PARTITIONS partitions (more: the connection closes). A
 * parked fetch reads its partitions again at each change (known cost:
 * one read per change per parked fetch).
 */
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "khandlers.h"
#include "kpark.h"
#include "replica.h"
#include "topic_name.h"
#include "txnindex.h"
#include "xalloc.h"

typedef struct {
	char *topic;            /* first: mk_kw_topic_run reads it */
	int32_t index;
	int32_t leader_epoch;   /* current_leader_epoch (v9+), -1: none */
	int64_t offset;
	int32_t max_bytes;
	mk_topic *t;            /* a reference for the request's life */
	mk_partition *p;        /* NULL: err says why */
	int16_t err;
} fpart;

typedef struct {
	mk_kpark park;          /* first (kpark.h) */
	int32_t correlation;
	int16_t version;
	int8_t isolation;
	int32_t min_bytes, max_bytes;
	fpart *parts;
	size_t nparts;
	int broker;             /* whose listener took it */
} kfetch;

static void fetch_free(kfetch *f)
{
	for (size_t i = 0; i < f->nparts; i++) {
		mk_topic_put(f->parts[i].t);
		free(f->parts[i].topic);
	}
	free(f->parts);
	free(f);
}

/* The checks that do not depend on the offset: known, led here, epoch. */
static void resolve(mk_khandlers *h, int broker, fpart *fp)
{
	fp->err = mk_kh_leader_here(h, broker, fp->topic, fp->index,
				    fp->leader_epoch, &fp->t, &fp->p);
}

/* Read every partition into a response body; *bytes gets the records'
 * bytes. One pass, as Kafka's readFromLog: each partition at most its
 * max_bytes, the whole at most max_bytes after the first batch. */
static void read_all(kfetch *f, mk_strbuf *body, size_t *bytes)
{
	int16_t v = f->version;
	mk_strbuf recs = MK_STRBUF_INIT;
	mk_aborted_list ab;
	mk_aborted_init(&ab);
	*bytes = 0;
	mk_kw_int32(body, 0);                 /* throttle_time_ms */
	if (v >= 7) {
		mk_kw_int16(body, MK_KERR_NONE);
		mk_kw_int32(body, 0);         /* session_id: no session */
	}
	mk_kw_topic_count(body, f->parts, f->nparts, sizeof(*f->parts));
	for (size_t i = 0; i < f->nparts;) {
		size_t j = mk_kw_topic_run(body, f->parts, f->nparts,
					   sizeof(*f->parts), i);
		for (; i < j; i++) {
			fpart *fp = &f->parts[i];
			int16_t err = fp->err;
			mk_partition_info info = { .hw = -1, .lso = -1, .log_start = -1 };
			mk_strbuf_reset(&recs);
			mk_aborted_clear(&ab);
			if (!err) {
				size_t left = (size_t)f->max_bytes > *bytes
					? (size_t)f->max_bytes - *bytes : 0;
				size_t want = (size_t)fp->max_bytes < left
					? (size_t)fp->max_bytes : left;
				int64_t vis;
				mk_err e = want || !*bytes
					? mk_partition_fetch_isolated(fp->p, fp->offset,
						want ? want : 1,
						f->isolation ? &ab : NULL, &recs, &vis, NULL)
					: MK_OK;
				err = e ? mk_kerr_from(e) : MK_KERR_NONE;
				mk_partition_info_get(fp->p, &info);
			}
			*bytes += recs.len;
			mk_kw_int32(body, fp->index);
			mk_kw_int16(body, err);
			mk_kw_int64(body, info.hw);
			mk_kw_int64(body, info.lso);          /* v4+ */
			if (v >= 5)
				mk_kw_int64(body, info.log_start);
			if (f->isolation && !err) {
				mk_kw_array_len(body, ab.n, false);
				for (size_t k = 0; k < ab.n; k++) {
					mk_kw_int64(body, ab.v[k].pid);
					mk_kw_int64(body, ab.v[k].first);
				}
			} else {
				mk_kw_nullable_array_len(body, -1, false);
			}
			if (v >= 11)
				mk_kw_int32(body, -1);   /* preferred_read_replica */
			/* Empty, never null (Kafka's MemoryRecords.EMPTY):
			 * librdkafka refuses a null record set. */
			mk_kw_bytes(body, recs.buf, recs.len, false);
		}
	}
	mk_aborted_free(&ab);
	mk_strbuf_release(&recs);
}

static void drop(mk_kpark *k)
{
	fetch_free((kfetch *)k);
}

/* Every partition checked again (a parked fetch may outlive a change of
 * leader): any error answers at once, as Kafka's. */
static bool resolve_all(mk_khandlers *h, int broker, kfetch *f)
{
	bool failed = false;
	for (size_t i = 0; i < f->nparts; i++) {
		fpart *fp = &f->parts[i];
		if (!fp->err) {
			mk_topic_put(fp->t);
			fp->t = NULL;
			fp->p = NULL;
			resolve(h, broker, fp);
		}
		failed |= fp->err != 0;
	}
	return failed;
}

static void look(mk_kpark *k, bool timed_out)
{
	kfetch *f = (kfetch *)k;
	mk_kpark_unwatch_all(k);
	if (resolve_all(k->h, f->broker, f))
		timed_out = true;
	for (size_t i = 0; i < f->nparts; i++)
		if (f->parts[i].p)
			k->watch[i].seen = mk_partition_seq(f->parts[i].p);
	mk_strbuf resp = MK_STRBUF_INIT;
	mk_kw_response_header(&resp, mk_kapi_response_header_version(
				      MK_KAPI_FETCH, f->version), f->correlation);
	size_t bytes;
	read_all(f, &resp, &bytes);
	if (bytes >= (size_t)f->min_bytes || timed_out) {
		mk_kpark_finish(k, &resp);
		mk_strbuf_release(&resp);
		fetch_free(f);
		return;
	}
	mk_strbuf_release(&resp);
	for (size_t i = 0; i < f->nparts; i++)
		if (f->parts[i].p)
			mk_kpark_watch(k, i, f->parts[i].p, k->watch[i].seen);
}

/* The request's body into f; false when it does not parse. */
static bool parse(mk_kreq *q, kfetch *f, int32_t *replica, int32_t *max_wait)
{
	mk_kreader *r = &q->body;
	int16_t v = q->hdr->api_version;
	*replica = mk_kr_int32(r);
	*max_wait = mk_kr_int32(r);
	f->min_bytes = mk_kr_int32(r);
	f->max_bytes = mk_kr_int32(r);
	f->isolation = mk_kr_int8(r);
	if (v >= 7) {
		(void)mk_kr_int32(r);         /* session_id */
		(void)mk_kr_int32(r);         /* session_epoch */
	}
	int32_t nt = mk_kr_array_len(r, false);
	size_t cap = 0;
	for (int32_t i = 0; i < nt && !r->err; i++) {
		mk_kstr name = mk_kr_string(r, false);
		int32_t np = mk_kr_array_len(r, false);
		for (int32_t j = 0; j < np && !r->err; j++) {
			fpart fp = { .leader_epoch = -1 };
			fp.index = mk_kr_int32(r);
			if (v >= 9)
				fp.leader_epoch = mk_kr_int32(r);
			fp.offset = mk_kr_int64(r);
			if (v >= 5)
				(void)mk_kr_int64(r);     /* log_start_offset */
			fp.max_bytes = mk_kr_int32(r);
			if (r->err)
				break;
			if (f->nparts == MK_KREQ_MAX_PARTITIONS ||
			    memchr(name.ptr, '\0', name.len))
				return mk_kr_fail(r);
			if (f->nparts == cap) {
				cap = cap ? cap * 2 : 4;
				f->parts = mk_xrealloc(f->parts, cap * sizeof(*f->parts));
			}
			fp.topic = mk_xstrndup(name.ptr, name.len);
			f->parts[f->nparts++] = fp;
		}
	}
	if (v >= 7) {                          /* forgotten_topics_data */
		int32_t nf = mk_kr_array_len(r, false);
		for (int32_t i = 0; i < nf && !r->err; i++) {
			(void)mk_kr_string(r, false);
			int32_t np = mk_kr_array_len(r, false);
			for (int32_t j = 0; j < np && !r->err; j++)
				(void)mk_kr_int32(r);
		}
	}
	if (v >= 11)
		(void)mk_kr_string(r, false);  /* rack_id */
	return !r->err;
}

bool mk_kh_fetch(mk_kreq *q)
{
	kfetch *f = mk_xcalloc(1, sizeof(*f));
	f->correlation = q->hdr->correlation_id;
	f->version = q->hdr->api_version;
	int32_t replica, max_wait;
	if (!parse(q, f, &replica, &max_wait)) {
		fetch_free(f);
		return false;
	}
	/* Kafka's fetch.max.bytes bounds what one answer carries; min_bytes
	 * at most that, or a long poll could never end before its wait. */
	if (f->max_bytes <= 0 || f->max_bytes > MK_KFETCH_MAX_BYTES)
		f->max_bytes = MK_KFETCH_MAX_BYTES;
	if (f->min_bytes < 0)
		f->min_bytes = 0;
	if (f->min_bytes > f->max_bytes)
		f->min_bytes = f->max_bytes;
	f->broker = q->conn->broker;
	bool failed = false;
	for (size_t i = 0; i < f->nparts; i++) {
		fpart *fp = &f->parts[i];
		if (replica >= 0)
			fp->err = MK_KERR_NOT_LEADER_OR_FOLLOWER;
		else
			resolve(q->h, q->conn->broker, fp);
		if (fp->max_bytes <= 0)
			fp->max_bytes = 0;
		if (fp->max_bytes > MK_KFETCH_MAX_BYTES)
			fp->max_bytes = MK_KFETCH_MAX_BYTES;
		if (fp->err) {
			failed = true;
			mk_kreq_error(q, fp->err, "%s-%d", fp->topic, fp->index);
		}
	}
	if (replica >= 0)
		mk_kreq_error(q, MK_KERR_NOT_LEADER_OR_FOLLOWER,
			      "a follower's fetch (replica %d): the cluster replicates by itself",
			      replica);
	size_t bytes;
	read_all(f, q->out, &bytes);
	if (bytes >= (size_t)f->min_bytes || max_wait <= 0 || !f->nparts ||
	    failed) {
		fetch_free(f);
		return true;
	}
	/* Wait: the answer is made again when it is given. */
	mk_strbuf_setlen(q->out, q->out_start);
	f->park.h = q->h;
	f->park.look = look;
	f->park.drop = drop;
	f->park.nwatch = f->nparts;
	mk_kpark_start(&f->park, q->conn, max_wait);
	look(&f->park, false);
	return true;
}
