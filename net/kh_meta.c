/*
 * kh_meta.c — ApiVersions and Metadata (khandlers.h).
 *
 * Metadata (versions 0-8) lists the brokers that are online and have a
 * listener, a controller id among them (the first of them in [cluster]
 * brokers order; -1 when none: issue 27 brings a real controller), and
 * for each topic asked for (v0: an
 * empty list, v1+: a null one, means every topic) its partitions: the
 * leader and its epoch as the partition's state has them, the replicas
 * in assignment order, the ISR, the replicas on offline brokers. A
 * partition without a leader on an online broker says
 * LEADER_NOT_AVAILABLE with leader -1; a topic not there says
 * UNKNOWN_TOPIC_OR_PARTITION (no topic is created by asking:
 * docs/filesystem.md, "The Kafka protocol").
 */
#include <stdlib.h>
#include <string.h>

#include "khandlers.h"
#include "replica.h"
#include "topic_name.h"
#include "xalloc.h"

/* ---- ApiVersions --------------------------------------------------------- */

bool mk_kh_api_versions(mk_kreq *q)
{
	int16_t v = q->hdr->api_version;
	bool served = mk_kapi_supported(q->hdr->api_key, v);
	/* Versions 0-2 have no body; a newer one's (v3: the client's
	 * software name and version) is not read: it is answered as v0. */
	if (!served)
		v = 0;
	mk_kw_int16(q->out, served ? MK_KERR_NONE : MK_KERR_UNSUPPORTED_VERSION);
	size_t n, served_n = 0;
	const mk_kapi *apis = mk_kapi_list(&n);
	for (size_t i = 0; i < n; i++)
		served_n += mk_khandles(apis[i].key);
	mk_kw_array_len(q->out, served_n, false);
	for (size_t i = 0; i < n; i++) {
		if (!mk_khandles(apis[i].key))
			continue;
		mk_kw_int16(q->out, apis[i].key);
		mk_kw_int16(q->out, apis[i].min_version);
		mk_kw_int16(q->out, apis[i].max_version);
	}
	if (v >= 1)
		mk_kw_int32(q->out, 0);     /* throttle_time_ms */
	/* (A newer ApiVersions answered as v0 is the negotiation every
	 * librdkafka connection starts with: no /errors line.) */
	return true;
}

/* ---- Metadata ------------------------------------------------------------- */

typedef struct {
	int id;
	char host[64];
	int port;
} kbroker;

/* The brokers a client can reach: online, with a listener. */
static int reachable(mk_khandlers *h, kbroker *out)
{
	mk_cluster *c = h->cluster;
	int n = 0;
	for (int i = 0; i < c->nbrokers; i++) {
		int id = c->brokers[i].id;
		if (!mk_cluster_broker_online(c, id) ||
		    !mk_kserver_address(h->server, id, out[n].host,
					sizeof(out[n].host), &out[n].port))
			continue;
		out[n++].id = id;
	}
	return n;
}

static void write_ids(mk_strbuf *out, const int *ids, int n)
{
	mk_kw_array_len(out, (size_t)n, false);
	for (int i = 0; i < n; i++)
		mk_kw_int32(out, ids[i]);
}

static void write_partition(mk_kreq *q, mk_partition *p, int id)
{
	int16_t v = q->hdr->api_version;
	mk_partition_state st;
	mk_partition_state_get(p, &st);
	bool led = st.leader >= 0 &&
		   mk_cluster_broker_online(q->h->cluster, st.leader);
	int offline[MK_MAX_BROKERS], noff = 0;
	for (int i = 0; i < st.nreplicas; i++)
		if (!mk_cluster_broker_online(q->h->cluster, st.brokers[i]))
			offline[noff++] = st.brokers[i];
	mk_kw_int16(q->out, led ? MK_KERR_NONE : MK_KERR_LEADER_NOT_AVAILABLE);
	mk_kw_int32(q->out, id);
	mk_kw_int32(q->out, led ? st.leader : -1);
	if (v >= 7)
		mk_kw_int32(q->out, st.leader_epoch);
	write_ids(q->out, st.brokers, st.nreplicas);
	write_ids(q->out, st.isr, st.nisr);
	if (v >= 5)
		write_ids(q->out, offline, noff);
}

/* One topic's entry; name[0, len) is what the client asked for. */
static void write_topic(mk_kreq *q, const char *name)
{
	int16_t v = q->hdr->api_version;
	mk_topic *t = mk_topic_name_valid(name) ? mk_cluster_topic(q->h->cluster, name)
						: NULL;
	int16_t err = t ? MK_KERR_NONE
		: mk_topic_name_valid(name) ? MK_KERR_UNKNOWN_TOPIC_OR_PARTITION
		: MK_KERR_INVALID_TOPIC_EXCEPTION;
	mk_kw_int16(q->out, err);
	mk_kw_string(q->out, name, false);
	if (v >= 1)
		mk_kw_bool(q->out, mk_topic_name_internal(name));
	int np = t ? t->npartitions : 0;
	mk_kw_array_len(q->out, (size_t)np, false);
	for (int i = 0; i < np; i++)
		write_partition(q, mk_topic_partition(t, i), i);
	if (v >= 8)
		mk_kw_int32(q->out, INT32_MIN);   /* authorized operations: none asked */
	mk_topic_put(t);
}

bool mk_kh_metadata(mk_kreq *q)
{
	int16_t v = q->hdr->api_version;
	mk_kreader *r = &q->body;
	/* The topics asked for: v0 an array (empty: all), v1+ nullable
	 * (null: all). Names are copied: they go into C calls. */
	int32_t nt = v >= 1 ? mk_kr_nullable_array_len(r, false)
			    : mk_kr_array_len(r, false);
	bool all = nt < 0 || (v == 0 && nt == 0);
	char **names = NULL;
	size_t nnames = 0;
	if (nt > MK_KREQ_MAX_PARTITIONS)
		mk_kr_fail(r);          /* more topics than a request may ask */
	if (!all && nt > 0 && !r->err) {
		names = mk_xcalloc((size_t)nt, sizeof(*names));
		for (int32_t i = 0; i < nt && !r->err; i++) {
			char *name = mk_kr_name(r);
			if (!name)
				break;
			names[nnames++] = name;
		}
	}
	if (v >= 4)
		(void)mk_kr_bool(r);     /* allow_auto_topic_creation: none here */
	if (v >= 8) {
		(void)mk_kr_bool(r);     /* include_cluster_authorized_operations */
		(void)mk_kr_bool(r);     /* include_topic_authorized_operations */
	}
	bool ok = !r->err && nnames == (size_t)(nt > 0 && !all ? nt : 0);
	if (ok && all)
		nnames = mk_cluster_topic_names(q->h->cluster, &names);
	if (ok) {
		if (v >= 3)
			mk_kw_int32(q->out, 0);      /* throttle_time_ms */
		kbroker bs[MK_MAX_BROKERS];
		int nb = reachable(q->h, bs);
		mk_kw_array_len(q->out, (size_t)nb, false);
		for (int i = 0; i < nb; i++) {
			mk_kw_int32(q->out, bs[i].id);
			mk_kw_string(q->out, bs[i].host, false);
			mk_kw_int32(q->out, bs[i].port);
			if (v >= 1)
				mk_kw_nullable_string(q->out, NULL, false); /* rack */
		}
		if (v >= 2)
			mk_kw_nullable_string(q->out, q->h->cluster_id, false);
		if (v >= 1)
			mk_kw_int32(q->out, nb ? bs[0].id : -1);   /* controller */
		mk_kw_array_len(q->out, nnames, false);
		for (size_t i = 0; i < nnames; i++)
			write_topic(q, names[i]);
		if (v >= 8)
			mk_kw_int32(q->out, INT32_MIN);  /* cluster operations */
	}
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	return ok;
}
