/*
 * kh_admin.c — CreateTopics (0-4), DeleteTopics (0-3) and DeleteRecords
 * (0-1) (khandlers.h): the /ctl create-topic and delete-topic commands
 * and a partition's delete-records file, over the wire.
 *
 * CreateTopics: num_partitions and replication_factor -1 take the
 * cluster's defaults, configs are the topic's overrides (KEY=VALUE, as
 * create-topic takes them: invalid ones are INVALID_CONFIG, nothing
 * made); a replica assignment of the client's own is refused
 * (INVALID_REPLICA_ASSIGNMENT: the cluster assigns); validate_only (v1+)
 * checks the name and that it is free. Any broker answers (issue 27 makes
 * the controller the one). DeleteTopics: internal topics are refused
 * (TOPIC_AUTHORIZATION_FAILED, as the files refuse them). DeleteRecords:
 * offset -1 means the high watermark, as Kafka's; the partition's leader
 * answers, the new low watermark with it.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "khandlers.h"
#include "replica.h"
#include "topic_name.h"
#include "xalloc.h"

/* One topic of a CreateTopics: its configs read, then made. */
static int16_t create_one(mk_kreq *q, const char *name, int32_t partitions,
			  int16_t rf, bool assigned, bool validate_only,
			  char **kv, size_t nkv, mk_strbuf *msg)
{
	if (!mk_topic_name_valid(name))
		return MK_KERR_INVALID_TOPIC_EXCEPTION;
	if (assigned) {
		mk_strbuf_addstr(msg, "replica assignments are the cluster's own");
		return MK_KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	/* Kafka's codes for counts the cluster cannot take (the core says
	 * INVALID_REQUEST for all of them). */
	if (partitions == 0 || partitions < -1)
		return MK_KERR_INVALID_PARTITIONS;
	if (rf == 0 || rf < -1 || rf > q->h->cluster->nbrokers) {
		mk_strbuf_addf(msg, "replication factor %d: this cluster has %d brokers",
			       rf, q->h->cluster->nbrokers);
		return MK_KERR_INVALID_REPLICATION_FACTOR;
	}
	mk_topic *t = mk_cluster_topic(q->h->cluster, name);
	mk_topic_put(t);
	if (t)
		return MK_KERR_TOPIC_ALREADY_EXISTS;
	if (validate_only)
		return MK_KERR_NONE;
	mk_err err = mk_cluster_create_topic(q->h->cluster, name, partitions,
					     rf, (const char *const *)kv, nkv, msg);
	return err ? mk_kerr_from(err) : MK_KERR_NONE;
}

bool mk_kh_create_topics(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	int16_t v = q->hdr->api_version;
	int32_t nt = mk_kr_array_len(r, false);
	mk_strbuf body = MK_STRBUF_INIT, msg = MK_STRBUF_INIT;
	if (v >= 2)
		mk_kw_int32(&body, 0);           /* throttle_time_ms */
	mk_kw_array_len(&body, nt > 0 ? (size_t)nt : 0, false);
	/* Read all first (the flags come after the topics), then act. */
	typedef struct {
		char *name;
		int32_t partitions;
		int16_t rf;
		bool assigned;
		char **kv;
		size_t nkv;
	} want;
	want *w = mk_xcalloc(nt > 0 ? (size_t)nt : 1, sizeof(*w));
	int32_t n = 0;
	for (; n < nt && n < MK_KREQ_MAX_PARTITIONS && !r->err; n++) {
		w[n].name = mk_kr_name(r);
		w[n].partitions = mk_kr_int32(r);
		w[n].rf = mk_kr_int16(r);
		int32_t na = mk_kr_array_len(r, false);
		for (int32_t i = 0; i < na && !r->err; i++) {
			(void)mk_kr_int32(r);
			int32_t nb = mk_kr_array_len(r, false);
			for (int32_t j = 0; j < nb && !r->err; j++)
				(void)mk_kr_int32(r);
		}
		w[n].assigned = na > 0;
		w[n].kv = mk_kr_config_pairs(r, &w[n].nkv);
	}
	if (n < nt)
		mk_kr_fail(r);
	(void)mk_kr_int32(r);                    /* timeout_ms */
	bool validate_only = v >= 1 ? mk_kr_bool(r) : false;
	for (int32_t i = 0; i < n && !r->err; i++) {
		mk_strbuf_reset(&msg);
		int16_t err = create_one(q, w[i].name, w[i].partitions, w[i].rf,
					 w[i].assigned, validate_only, w[i].kv,
					 w[i].nkv, &msg);
		if (err)
			mk_kreq_error(q, err, "%s: %s", w[i].name, msg.len ? msg.buf : "refused");
		mk_kw_string(&body, w[i].name, false);
		mk_kw_int16(&body, err);
		if (v >= 1)
			mk_kw_nullable_string(&body, err && msg.len ? msg.buf : NULL, false);
	}
	for (int32_t i = 0; i < n; i++) {
		for (size_t j = 0; j < w[i].nkv; j++)
			free(w[i].kv[j]);
		free(w[i].kv);
		free(w[i].name);
	}
	free(w);
	bool ok = !r->err;
	if (ok)
		mk_strbuf_add(q->out, body.buf, body.len);
	mk_strbuf_release(&body);
	mk_strbuf_release(&msg);
	return ok;
}

bool mk_kh_delete_topics(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	int16_t v = q->hdr->api_version;
	int32_t nt = mk_kr_array_len(r, false);
	char **names = mk_xcalloc(nt > 0 ? (size_t)nt : 1, sizeof(*names));
	int32_t n = 0;
	for (; n < nt && n < MK_KREQ_MAX_PARTITIONS && !r->err; n++)
		names[n] = mk_kr_name(r);
	if (n < nt)
		mk_kr_fail(r);
	(void)mk_kr_int32(r);                    /* timeout_ms */
	bool ok = !r->err;
	if (ok) {
		if (v >= 1)
			mk_kw_int32(q->out, 0);  /* throttle_time_ms */
		mk_kw_array_len(q->out, (size_t)n, false);
	}
	mk_strbuf msg = MK_STRBUF_INIT;
	for (int32_t i = 0; i < n; i++) {
		if (ok) {
			mk_strbuf_reset(&msg);
			mk_err e = mk_cluster_delete_topic(q->h->cluster, names[i], &msg);
			int16_t err = e ? mk_kerr_from(e) : MK_KERR_NONE;
			if (err)
				mk_kreq_error(q, err, "%s: %s", names[i], msg.buf);
			mk_kw_string(q->out, names[i], false);
			mk_kw_int16(q->out, err);
		}
		free(names[i]);
	}
	free(names);
	mk_strbuf_release(&msg);
	return ok;
}

typedef struct {
	char *topic;            /* first: mk_kw_topic_run reads it */
	int32_t index;
	int64_t offset;
} drec;

/* One partition's DeleteRecords: the new low watermark, or an error. */
static int16_t delete_one(mk_kreq *q, const drec *d, int64_t *low)
{
	*low = -1;
	mk_topic *t = mk_topic_name_valid(d->topic)
		? mk_cluster_topic(q->h->cluster, d->topic) : NULL;
	mk_partition *p = t ? mk_topic_partition(t, d->index) : NULL;
	int16_t err = MK_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (p) {
		mk_partition_state st;
		mk_partition_state_get(p, &st);
		mk_partition_info info;
		mk_partition_info_get(p, &info);
		mk_err e = st.leader != q->conn->broker
			? MK_NOT_LEADER_OR_FOLLOWER
			: mk_partition_delete_records(p, d->offset == -1 ? info.hw
						      : d->offset, low, NULL);
		err = e ? mk_kerr_from(e) : MK_KERR_NONE;
	}
	mk_topic_put(t);
	if (err)
		mk_kreq_error(q, err, "%s-%d at %lld", d->topic, d->index,
			      (long long)d->offset);
	return err;
}

bool mk_kh_delete_records(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	int32_t nt = mk_kr_array_len(r, false);
	drec *v = NULL;
	size_t n = 0, cap = 0;
	/* The whole request read first: a body that does not parse deletes
	 * nothing. */
	for (int32_t i = 0; i < nt && !r->err; i++) {
		char *topic = mk_kr_name(r);
		int32_t np = mk_kr_array_len(r, false);
		if (!r->err && (size_t)np > MK_KREQ_MAX_PARTITIONS - n)
			mk_kr_fail(r);
		for (int32_t j = 0; j < np && !r->err; j++) {
			drec d = { NULL, 0, 0 };
			d.index = mk_kr_int32(r);     /* in this order */
			d.offset = mk_kr_int64(r);
			if (r->err)
				break;
			if (n == cap) {
				cap = cap ? cap * 2 : 4;
				v = mk_xrealloc(v, cap * sizeof(*v));
			}
			d.topic = mk_xstrdup(topic);
			v[n++] = d;
		}
		free(topic);
	}
	(void)mk_kr_int32(r);                    /* timeout_ms */
	bool ok = !r->err;
	if (ok) {
		mk_kw_int32(q->out, 0);          /* throttle_time_ms */
		mk_kw_topic_count(q->out, v, n, sizeof(*v));
		for (size_t i = 0; i < n;) {
			size_t j = mk_kw_topic_run(q->out, v, n, sizeof(*v), i);
			for (; i < j; i++) {
				int64_t low;
				int16_t err = delete_one(q, &v[i], &low);
				mk_kw_int32(q->out, v[i].index);
				mk_kw_int64(q->out, low);
				mk_kw_int16(q->out, err);
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].topic);
	free(v);
	return ok;
}
