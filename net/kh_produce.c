/*
 * kh_produce.c — Produce, versions 3-8 (khandlers.h).
 *
 * Each partition's records are Kafka's RecordBatch v2 bytes: every batch
 * is validated by mk_frame_decode (CRC-32C, records, a compressed one
 * decompressed with the topic's message.max.bytes as its bound: a bomb
 * is refused before it inflates), recompressed when the topic's
 * compression.type is a codec other than the batch's (mk_frame_recompress),
 * and produced to the partition as a file append's batch is
 * (mk_partition_produce: base offset and leader epoch stamped, an
 * idempotent producer's sequence checked, message.max.bytes, the ISR
 * rule of acks=all). A partition this broker does not lead says
 * NOT_LEADER_OR_FOLLOWER; transactional batches wait for the transaction
 * APIs (INVALID_TXN_STATE until then); Produce below v3 (the old message
 * sets) is not served.
 *
 * acks=0 sends no response; acks=1 answers after the append; acks=-1
 * (all) is deferred (kserver.h): a watcher on each partition posts a look
 * at its ticket to the network thread, and the response goes once every
 * partition's batch is acknowledged or failed, or at the request's
 * timeout_ms (REQUEST_TIMED_OUT for those still waiting).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

#include "cluster.h"
#include "codec.h"
#include "compress.h"
#include "khandlers.h"
#include "kpark.h"
#include "replica.h"
#include "topic_name.h"
#include "xalloc.h"

/* One partition of a request, its answer, and what it waits for. */
typedef struct {
	char *topic;            /* first: mk_kw_topic_run reads it */
	int32_t index;
	mk_kbytes recs;         /* in the request: the handler's call only */
	int16_t err;
	int64_t base;
	int64_t log_start;
	char *message;          /* v8 error_message; NULL: none */
	/* acks=all, still owed by the ISR: */
	bool pending;
	mk_topic *t;            /* a reference while pending */
	mk_partition *p;
	mk_ack_ticket ticket;
} kpart;

typedef struct {
	mk_kpark park;          /* first: the parked request (kpark.h) */
	int32_t correlation;
	int16_t version;
	int16_t api_key;
	char peer[64];          /* for the /errors lines of a late outcome */
	int broker;
	kpart *parts;
	size_t nparts;
} kproduce;

static void part_fail(kpart *kp, int16_t code, const char *msg)
{
	kp->err = code;
	free(kp->message);
	kp->message = msg ? mk_xstrdup(msg) : NULL;
}

/* Validate and produce one partition's records. */
static void produce_one(mk_kreq *q, int acks, mk_kbytes recs, kpart *kp)
{
	mk_khandlers *h = q->h;
	kp->base = -1;
	kp->log_start = -1;
	if (mk_topic_name_internal(kp->topic)) {
		part_fail(kp, MK_KERR_INVALID_TOPIC_EXCEPTION,
			  "internal topics are written by their coordinators only");
		return;
	}
	mk_topic *t;
	mk_partition *p;
	int16_t lerr = mk_kh_leader_here(h, q->conn->broker, kp->topic, kp->index,
					 -1, &t, &p);
	if (lerr) {
		part_fail(kp, lerr, NULL);
		mk_topic_put(t);
		return;
	}
	mk_topic_config tc;
	mk_cluster_topic_config(h->cluster, t, &tc);
	mk_strbuf frame = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	const uint8_t *at = recs.ptr;
	size_t left = recs.ptr ? recs.len : 0;
	/* Every batch checked before any is produced: a bad one refuses
	 * the partition's records whole. */
	if (!left)
		part_fail(kp, MK_KERR_INVALID_RECORD, "no record batch");
	for (size_t pos = 0; pos < left && !kp->err;) {
		mk_batch_view b;
		const char *reason = NULL;
		if (mk_frame_decode(at + pos, left - pos, (size_t)tc.message_max_bytes,
				    &b, &reason))
			part_fail(kp, MK_KERR_CORRUPT_MESSAGE, reason);
		else if (b.meta.flags & MK_BATCH_TRANSACTIONAL)
			part_fail(kp, MK_KERR_INVALID_TXN_STATE,
				  "transactional batches need the transaction APIs (not served yet)");
		pos += kp->err ? 0 : b.frame_len;
	}
	while (left && !kp->err) {
		mk_batch_view b;
		if (mk_frame_decode(at, left, (size_t)tc.message_max_bytes, &b, NULL))
			break;          /* cannot happen: checked above */
		mk_strbuf_reset(&frame);
		if (tc.compression_type != MK_COMPRESSION_PRODUCER &&
		    tc.compression_type != b.meta.codec)
			mk_frame_recompress(&b, (int)tc.compression_type, &frame);
		else
			mk_strbuf_add(&frame, at, b.frame_len);
		mk_produce_args args = {
			.acks = acks,
			.idempotent = b.meta.producer_id >= 0,
			.pid = b.meta.producer_id,
			.epoch = b.meta.producer_epoch,
			.seq = b.meta.base_sequence,
			.count = b.record_count,
		};
		if (args.idempotent)
			args.acks = -1;     /* as the core's producers are */
		mk_produce_result res;
		mk_strbuf_reset(&why);
		mk_err err = mk_partition_produce(p, (uint8_t *)frame.buf, frame.len,
						  &args, &res, &why);
		if (err) {
			part_fail(kp, mk_kerr_from(err), why.len ? why.buf : NULL);
			break;
		}
		if (kp->base < 0)
			kp->base = res.base;
		if (res.pending && acks == -1) {
			kp->pending = true;
			kp->ticket = res.ticket;   /* the last covers the earlier */
		}
		at += b.frame_len;
		left -= b.frame_len;
	}
	mk_partition_info info;
	mk_partition_info_get(p, &info);
	kp->log_start = info.log_start;
	if (kp->pending && !kp->err) {
		kp->t = t;              /* held while the ticket is owed */
		kp->p = p;
	} else {
		kp->pending = false;
		mk_topic_put(t);
	}
	mk_strbuf_release(&frame);
	mk_strbuf_release(&why);
}

/* The response body, every partition answered. */
static void write_response(const kproduce *po, mk_strbuf *out)
{
	int16_t v = po->version;
	mk_kw_topic_count(out, po->parts, po->nparts, sizeof(*po->parts));
	for (size_t i = 0; i < po->nparts;) {
		size_t j = mk_kw_topic_run(out, po->parts, po->nparts,
					   sizeof(*po->parts), i);
		for (; i < j; i++) {
			const kpart *kp = &po->parts[i];
			mk_kw_int32(out, kp->index);
			mk_kw_int16(out, kp->err);
			mk_kw_int64(out, kp->err ? -1 : kp->base);
			mk_kw_int64(out, -1);       /* log_append_time_ms (v2+) */
			if (v >= 5)
				mk_kw_int64(out, kp->log_start);
			if (v >= 8) {
				mk_kw_array_len(out, 0, false);   /* record_errors */
				mk_kw_nullable_string(out, kp->message, false);
			}
		}
	}
	mk_kw_int32(out, 0);     /* throttle_time_ms (v1+) */
}

static void release(kproduce *po)
{
	for (size_t i = 0; i < po->nparts; i++) {
		kpart *kp = &po->parts[i];
		mk_topic_put(kp->t);
		free(kp->topic);
		free(kp->message);
	}
	free(po->parts);
	free(po);
}

/* ---- acks=all: parked until acknowledged ------------------------------ */

/* Network thread: every pending ticket looked at; answer when none is
 * owed any more (or at the deadline), else watch again. */
static void look(mk_kpark *k, bool timed_out)
{
	kproduce *po = (kproduce *)k;
	mk_kpark_unwatch_all(k);
	bool owed = false;
	for (size_t i = 0; i < po->nparts; i++) {
		kpart *kp = &po->parts[i];
		if (!kp->pending)
			continue;
		uint64_t seen = mk_partition_seq(kp->p);
		bool pending = false;
		mk_err err = mk_partition_ack_check(kp->p, &kp->ticket, &pending, NULL);
		if (!err && pending && timed_out)
			err = MK_REQUEST_TIMED_OUT;
		if (err || !pending) {
			kp->pending = false;
			if (err) {
				part_fail(kp, mk_kerr_from(err), NULL);
				mk_errlog_add(k->h->errlog, mk_wall_ms(), NULL, err,
					      "client %s, Produce v%d (key 0) to broker %d: %s: %s-%d (acks=all)",
					      po->peer, po->version, po->broker,
					      mk_kerr_name(kp->err), kp->topic, kp->index);
			}
			continue;
		}
		owed = true;
		mk_kpark_watch(k, i, kp->p, seen);
	}
	if (owed)
		return;
	mk_strbuf resp = MK_STRBUF_INIT;
	mk_kw_response_header(&resp, mk_kapi_response_header_version(
				      po->api_key, po->version), po->correlation);
	write_response(po, &resp);
	mk_kpark_finish(k, &resp);
	mk_strbuf_release(&resp);
	release(po);
}

static void drop(mk_kpark *k)
{
	release((kproduce *)k);
}

/* The request's partitions into po (views of their records); false when
 * the body does not parse: then nothing was produced. */
static bool parse(mk_kreader *r, kproduce *po)
{
	int32_t nt = mk_kr_array_len(r, false);
	size_t cap = 0;
	for (int32_t i = 0; i < nt && !r->err; i++) {
		mk_kstr name = mk_kr_string(r, false);
		int32_t np = mk_kr_array_len(r, false);
		if (!r->err && memchr(name.ptr, '\0', name.len))
			return mk_kr_fail(r);
		for (int32_t j = 0; j < np && !r->err; j++) {
			int32_t index = mk_kr_int32(r);
			mk_kbytes recs = mk_kr_nullable_bytes(r, false);
			if (r->err)
				break;
			if (po->nparts == MK_KREQ_MAX_PARTITIONS)
				return mk_kr_fail(r);
			if (po->nparts == cap) {
				cap = cap ? cap * 2 : 4;
				po->parts = mk_xrealloc(po->parts, cap * sizeof(*po->parts));
			}
			kpart *kp = &po->parts[po->nparts++];
			memset(kp, 0, sizeof(*kp));
			kp->topic = mk_xstrndup(name.ptr, name.len);
			kp->index = index;
			kp->recs = recs;
		}
	}
	return !r->err;
}

bool mk_kh_produce(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	(void)mk_kr_nullable_string(r, false);   /* transactional_id */
	int16_t acks = mk_kr_int16(r);
	int32_t timeout_ms = mk_kr_int32(r);
	kproduce *po = mk_xcalloc(1, sizeof(*po));
	po->correlation = q->hdr->correlation_id;
	po->version = q->hdr->api_version;
	po->api_key = q->hdr->api_key;
	po->broker = q->conn->broker;
	snprintf(po->peer, sizeof(po->peer), "%s", q->conn->peer);
	if (r->err || !parse(r, po)) {
		release(po);
		return false;
	}
	bool bad_acks = acks != 0 && acks != 1 && acks != -1;
	if (bad_acks)
		mk_kreq_error(q, MK_KERR_INVALID_REQUIRED_ACKS, "acks %d", acks);
	bool owed = false, failed = false;
	for (size_t i = 0; i < po->nparts; i++) {
		kpart *kp = &po->parts[i];
		if (bad_acks)
			part_fail(kp, MK_KERR_INVALID_REQUIRED_ACKS, NULL);
		else
			produce_one(q, acks, kp->recs, kp);
		kp->recs = (mk_kbytes){ NULL, 0 };
		if (kp->err)
			mk_kreq_error(q, kp->err, "%s-%d: %s", kp->topic,
				      kp->index, kp->message ? kp->message : "refused");
		owed |= kp->pending;
		failed |= kp->err != 0;
	}
	if (acks == 0) {
		/* No response at all; a refusal closes the connection, as
		 * Kafka's does, so that the client learns anew where to
		 * send. */
		release(po);
		return !failed;
	}
	if (!owed) {
		write_response(po, q->out);
		release(po);
		return true;
	}
	po->park.h = q->h;
	po->park.look = look;
	po->park.drop = drop;
	po->park.nwatch = po->nparts;
	mk_kpark_start(&po->park, q->conn, timeout_ms > 0 ? timeout_ms : 0);
	mk_strbuf_setlen(q->out, q->out_start);    /* the header goes later */
	look(&po->park, false);
	return true;
}
