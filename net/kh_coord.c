/*
 * kh_coord.c — FindCoordinator (0-2) and InitProducerId (0-1)
 * (khandlers.h).
 *
 * FindCoordinator: a group's coordinator is the broker leading its
 * partition of __consumer_offsets (crc32 of the group id, as the group
 * coordinator places it: group_log.c), a transactional id's the leader of
 * __transaction_state's one partition. Before the internal topic exists,
 * or without an online leader with a listener: COORDINATOR_NOT_AVAILABLE
 * (the client asks again).
 *
 * InitProducerId without a transactional id: an idempotent producer's
 * identity, made as `mkdir /producers/NAME` makes one (the cluster's next
 * producer id, epoch 0, in the metadata before the answer), under the
 * name wire-N, so that wire producers show under /producers as the
 * files' do. With a transactional id: INVALID_REQUEST until the
 * transaction APIs are served.
 */
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "khandlers.h"
#include "partitioner.h"
#include "replica.h"

/* The leader of internal topic `name`'s partition for key, and its
 * address; false when there is none to give. */
static bool coordinator_of(mk_khandlers *h, const char *name, mk_kstr key,
			   int *node, char *host, size_t hostlen, int *port)
{
	mk_topic *t = mk_cluster_topic(h->cluster, name);
	if (!t)
		return false;
	int part = t->npartitions == 1 ? 0
		: mk_partition_for_key(mk_bytes_of(key.ptr, key.len),
				       t->npartitions, MK_PARTITIONER_CRC32);
	mk_partition_state st;
	mk_partition_state_get(mk_topic_partition(t, part), &st);
	mk_topic_put(t);
	*node = st.leader;
	return st.leader >= 0 && mk_cluster_broker_online(h->cluster, st.leader) &&
	       mk_kserver_address(h->server, st.leader, host, hostlen, port);
}

bool mk_kh_find_coordinator(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	int16_t v = q->hdr->api_version;
	mk_kstr key = mk_kr_string(r, false);
	int8_t type = v >= 1 ? mk_kr_int8(r) : 0;
	if (r->err)
		return false;
	char host[64] = "";
	int node = -1, port = -1;
	int16_t err = MK_KERR_NONE;
	if (type != 0 && type != 1)
		err = MK_KERR_INVALID_REQUEST;
	else if (!coordinator_of(q->h, type ? "__transaction_state" : "__consumer_offsets",
				 key, &node, host, sizeof(host), &port))
		err = MK_KERR_COORDINATOR_NOT_AVAILABLE;
	if (err) {
		node = -1;
		port = -1;
		host[0] = '\0';
	}
	if (v >= 1)
		mk_kw_int32(q->out, 0);              /* throttle_time_ms */
	mk_kw_int16(q->out, err);
	if (v >= 1)
		mk_kw_nullable_string(q->out, NULL, false);   /* error_message */
	mk_kw_int32(q->out, node);
	mk_kw_string(q->out, host, false);
	mk_kw_int32(q->out, port);
	return true;
}

/* A new wire producer: the first free name wire-N. */
static mk_err new_producer(mk_khandlers *h, int64_t *pid, int16_t *epoch,
			   mk_strbuf *why)
{
	for (int tries = 0; tries < 100000; tries++) {
		char name[32];
		snprintf(name, sizeof(name), "wire-%u", ++h->wire_producers);
		mk_strbuf_reset(why);
		mk_err err = mk_cluster_producer_create(h->cluster, name, why);
		if (err == MK_PRODUCER_ALREADY_EXISTS)
			continue;
		if (err)
			return err;
		return mk_cluster_producer_get(h->cluster, name, pid, epoch);
	}
	return mk_error(why, MK_OUT_OF_MEMORY, "no free wire-N producer name");
}

bool mk_kh_init_producer_id(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	mk_kstr txn = mk_kr_nullable_string(r, false);
	(void)mk_kr_int32(r);                        /* transaction_timeout_ms */
	if (r->err)
		return false;
	int64_t pid = -1;
	int16_t epoch = -1;
	int16_t err = MK_KERR_NONE;
	mk_strbuf why = MK_STRBUF_INIT;
	if (txn.ptr) {
		err = MK_KERR_INVALID_REQUEST;
		mk_kreq_error(q, err, "transactional id '%.*s': transactions over the protocol are not served yet",
			      (int)(txn.len < 200 ? txn.len : 200), txn.ptr);
	} else {
		mk_err e = new_producer(q->h, &pid, &epoch, &why);
		if (e) {
			err = mk_kerr_from(e);
			mk_kreq_error(q, err, "%s", why.buf);
			pid = -1;
			epoch = -1;
		}
	}
	mk_strbuf_release(&why);
	mk_kw_int32(q->out, 0);                      /* throttle_time_ms */
	mk_kw_int16(q->out, err);
	mk_kw_int64(q->out, pid);
	mk_kw_int16(q->out, epoch);
	return true;
}
