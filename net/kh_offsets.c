/*
 * kh_offsets.c — ListOffsets, versions 0-5, and OffsetForLeaderEpoch,
 * versions 0-3 (khandlers.h).
 *
 * OffsetForLeaderEpoch (a consumer's check after a leader change,
 * KIP-320): for each partition this broker leads, the largest epoch at
 * most the one asked for in the leader's epoch cache and where it ends
 * (the next epoch's start, or the log end for the latest), as
 * mk_partition_end_offset_for_epoch answers; -1 and -1 when the cache has
 * no such epoch, as Kafka's UNDEFINED_EPOCH. The same current_leader_epoch
 * checks as ListOffsets (v2+).
 *
 * For each partition this broker leads: timestamp -2 (EARLIEST) the log
 * start offset, -1 (LATEST) the high watermark (the LSO for
 * read_committed, isolation_level 1, v2+), any other the first offset
 * whose record's timestamp is at least it, through the time index
 * (mk_partition_offset_for_time), and offset -1 when no record is that
 * late, as Kafka answers. The timestamp field is -1 for EARLIEST and
 * LATEST, as Kafka's; for a lookup by time it is the timestamp asked
 * for (docs/filesystem.md: Kafka gives the found record's own). v0
 * answers old_style_offsets, a list of the one offset. v4+: the
 * leader's epoch, and a current_leader_epoch older or newer than it
 * fails with FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "khandlers.h"
#include "replica.h"
#include "topic_name.h"
#include "xalloc.h"

typedef struct {
	int16_t err;
	int64_t timestamp, offset;
	int32_t epoch;
} answer;

/*
 * A topic's head in either request (its name and partition count), the
 * bounds checked (NUL in the name, MK_KREQ_MAX_PARTITIONS in all: err
 * set), written to the response body as the answer's head; the name
 * copied (NULL on err).
 */
static char *topic_head(mk_kreader *r, mk_strbuf *body, size_t *nparts,
			int32_t *np)
{
	char *topic = mk_kr_name(r);
	*np = mk_kr_array_len(r, false);
	if (!r->err && (size_t)*np > MK_KREQ_MAX_PARTITIONS - *nparts)
		mk_kr_fail(r);
	if (r->err) {
		free(topic);
		return NULL;
	}
	*nparts += (size_t)*np;
	mk_kw_string(body, topic, false);
	mk_kw_array_len(body, (size_t)*np, false);
	return topic;
}

static answer look_up(mk_kreq *q, const char *topic, int32_t index,
		      int32_t current_epoch, int64_t ts, int8_t isolation)
{
	answer a = { MK_KERR_NONE, -1, -1, -1 };
	mk_topic *t;
	mk_partition *p;
	a.err = mk_kh_leader_here(q->h, q->conn->broker, topic, index,
				  current_epoch, &t, &p);
	if (a.err) {
		mk_topic_put(t);
		return a;
	}
	mk_partition_state st;
	mk_partition_state_get(p, &st);
	mk_partition_info info;
	mk_partition_info_get(p, &info);
	if (ts == -2) {
		a.offset = info.log_start;
	} else if (ts == -1) {
		a.offset = isolation ? info.lso : info.hw;
	} else {
		int64_t off;
		mk_err err = mk_partition_offset_for_time(p, ts, &off);
		if (err)
			a.err = mk_kerr_from(err);
		else if (off < info.hw) {
			a.offset = off;
			a.timestamp = ts;
		}
	}
	a.epoch = st.leader_epoch;
	mk_topic_put(t);
	return a;
}

bool mk_kh_list_offsets(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	int16_t v = q->hdr->api_version;
	(void)mk_kr_int32(r);                    /* replica_id */
	int8_t isolation = v >= 2 ? mk_kr_int8(r) : 0;
	int32_t nt = mk_kr_array_len(r, false);
	size_t nparts = 0;
	mk_strbuf body = MK_STRBUF_INIT;
	if (v >= 2)
		mk_kw_int32(&body, 0);           /* throttle_time_ms */
	mk_kw_array_len(&body, nt > 0 ? (size_t)nt : 0, false);
	for (int32_t i = 0; i < nt && !r->err; i++) {
		int32_t np;
		char *topic = topic_head(r, &body, &nparts, &np);
		if (!topic)
			break;
		for (int32_t j = 0; j < np && !r->err; j++) {
			int32_t index = mk_kr_int32(r);
			int32_t epoch = v >= 4 ? mk_kr_int32(r) : -1;
			int64_t ts = mk_kr_int64(r);
			if (v == 0)
				(void)mk_kr_int32(r);    /* max_num_offsets */
			if (r->err)
				break;
			answer a = look_up(q, topic, index, epoch, ts, isolation);
			if (a.err)
				mk_kreq_error(q, a.err, "%s-%d", topic, index);
			mk_kw_int32(&body, index);
			mk_kw_int16(&body, a.err);
			if (v == 0) {
				mk_kw_array_len(&body, a.err ? 0 : 1, false);
				if (!a.err)
					mk_kw_int64(&body, a.offset);
			} else {
				mk_kw_int64(&body, a.timestamp);
				mk_kw_int64(&body, a.offset);
			}
			if (v >= 4)
				mk_kw_int32(&body, a.epoch);
		}
		free(topic);
	}
	bool ok = !r->err;
	if (ok)
		mk_strbuf_add(q->out, body.buf, body.len);
	mk_strbuf_release(&body);
	return ok;
}

bool mk_kh_offset_for_leader_epoch(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	int16_t v = q->hdr->api_version;
	if (v >= 3)
		(void)mk_kr_int32(r);            /* replica_id */
	int32_t nt = mk_kr_array_len(r, false);
	size_t nparts = 0;
	mk_strbuf body = MK_STRBUF_INIT;
	if (v >= 2)
		mk_kw_int32(&body, 0);           /* throttle_time_ms */
	mk_kw_array_len(&body, nt > 0 ? (size_t)nt : 0, false);
	for (int32_t i = 0; i < nt && !r->err; i++) {
		int32_t np;
		char *topic = topic_head(r, &body, &nparts, &np);
		if (!topic)
			break;
		for (int32_t j = 0; j < np && !r->err; j++) {
			int32_t index = mk_kr_int32(r);
			int32_t current = v >= 2 ? mk_kr_int32(r) : -1;
			int32_t epoch = mk_kr_int32(r);
			if (r->err)
				break;
			mk_topic *t;
			mk_partition *p;
			int16_t err = mk_kh_leader_here(q->h, q->conn->broker, topic,
							index, current, &t, &p);
			int32_t found = -1;
			int64_t end = -1;
			if (!err && mk_partition_end_offset_for_epoch(p, epoch, &found, &end))
				err = MK_KERR_LEADER_NOT_AVAILABLE;
			if (err || found < 0) {
				found = -1;
				end = -1;
			}
			if (err)
				mk_kreq_error(q, err, "%s-%d", topic, index);
			mk_topic_put(t);
			mk_kw_int16(&body, err);
			mk_kw_int32(&body, index);
			if (v >= 1)
				mk_kw_int32(&body, found);
			mk_kw_int64(&body, end);
		}
		free(topic);
	}
	bool ok = !r->err;
	if (ok)
		mk_strbuf_add(q->out, body.buf, body.len);
	mk_strbuf_release(&body);
	return ok;
}
