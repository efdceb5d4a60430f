/*
 * khandlers.c — the dispatcher of the Kafka APIs (khandlers.h).
 */
#include "khandlers.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "replica.h"
#include "topic_name.h"
#include "xalloc.h"

typedef bool kh_fn(mk_kreq *q);

/* The APIs answered so far, by key (kapi.h lists every one served). */
static const struct {
	int16_t key;
	kh_fn *fn;
} handlers[] = {
	{ MK_KAPI_PRODUCE, mk_kh_produce },
	{ MK_KAPI_FETCH, mk_kh_fetch },
	{ MK_KAPI_LIST_OFFSETS, mk_kh_list_offsets },
	{ MK_KAPI_OFFSET_FOR_LEADER_EPOCH, mk_kh_offset_for_leader_epoch },
	{ MK_KAPI_METADATA, mk_kh_metadata },
	{ MK_KAPI_FIND_COORDINATOR, mk_kh_find_coordinator },
	{ MK_KAPI_API_VERSIONS, mk_kh_api_versions },
	{ MK_KAPI_INIT_PRODUCER_ID, mk_kh_init_producer_id },
	{ MK_KAPI_CREATE_TOPICS, mk_kh_create_topics },
	{ MK_KAPI_DELETE_TOPICS, mk_kh_delete_topics },
	{ MK_KAPI_DELETE_RECORDS, mk_kh_delete_records },
	{ MK_KAPI_DESCRIBE_CONFIGS, mk_kh_describe_configs },
	{ MK_KAPI_ALTER_CONFIGS, mk_kh_alter_configs },
};

static kh_fn *handler_of(int16_t key)
{
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (handlers[i].key == key)
			return handlers[i].fn;
	return NULL;
}

char **mk_kr_config_pairs(mk_kreader *r, size_t *n)
{
	int32_t nc = mk_kr_array_len(r, false);
	char **kv = mk_xcalloc(nc > 0 ? (size_t)nc : 1, sizeof(char *));
	*n = 0;
	for (int32_t i = 0; i < nc && !r->err; i++) {
		mk_kstr k = mk_kr_string(r, false);
		mk_kstr val = mk_kr_nullable_string(r, false);
		if (r->err || memchr(k.ptr, '\0', k.len) || memchr(k.ptr, '=', k.len) ||
		    (val.ptr && memchr(val.ptr, '\0', val.len))) {
			mk_kr_fail(r);
			break;
		}
		mk_strbuf s = MK_STRBUF_INIT;
		mk_strbuf_addf(&s, "%.*s=%.*s", (int)k.len, k.ptr, (int)val.len,
			       val.ptr ? val.ptr : "");
		kv[(*n)++] = mk_strbuf_detach(&s, NULL);
	}
	return kv;
}

char *mk_kr_name(mk_kreader *r)
{
	mk_kstr s = mk_kr_string(r, false);
	if (r->err || memchr(s.ptr, '\0', s.len)) {
		mk_kr_fail(r);
		return NULL;
	}
	return mk_xstrndup(s.ptr, s.len);
}

int16_t mk_kh_leader_here(mk_khandlers *h, int broker, const char *topic,
			  int32_t index, int32_t current_epoch, mk_topic **t,
			  mk_partition **p)
{
	*p = NULL;
	*t = mk_topic_name_valid(topic) ? mk_cluster_topic(h->cluster, topic) : NULL;
	if (!mk_topic_name_valid(topic))
		return MK_KERR_INVALID_TOPIC_EXCEPTION;
	mk_partition *part = *t ? mk_topic_partition(*t, index) : NULL;
	if (!part)
		return MK_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	mk_partition_state st;
	mk_partition_state_get(part, &st);
	if (st.leader != broker)
		return st.leader < 0 ? MK_KERR_LEADER_NOT_AVAILABLE
				     : MK_KERR_NOT_LEADER_OR_FOLLOWER;
	if (current_epoch >= 0 && current_epoch < st.leader_epoch)
		return MK_KERR_FENCED_LEADER_EPOCH;
	if (current_epoch > st.leader_epoch)
		return MK_KERR_UNKNOWN_LEADER_EPOCH;
	*p = part;
	return MK_KERR_NONE;
}

static const char *topic_at(const void *parts, size_t size, size_t i)
{
	return *(char *const *)((const char *)parts + i * size);
}

void mk_kw_topic_count(mk_strbuf *out, const void *parts, size_t n,
		       size_t size)
{
	size_t topics = 0;
	for (size_t i = 0; i < n; i++)
		if (!i || strcmp(topic_at(parts, size, i), topic_at(parts, size, i - 1)))
			topics++;
	mk_kw_array_len(out, topics, false);
}

size_t mk_kw_topic_run(mk_strbuf *out, const void *parts, size_t n,
		       size_t size, size_t i)
{
	const char *name = topic_at(parts, size, i);
	size_t j = i;
	while (j < n && !strcmp(topic_at(parts, size, j), name))
		j++;
	mk_kw_string(out, name, false);
	mk_kw_array_len(out, j - i, false);
	return j;
}

bool mk_khandles(int16_t key)
{
	return handler_of(key) != NULL;
}

static const char *api_name(int16_t key)
{
	const mk_kapi *a = mk_kapi_find(key);
	return a ? a->name : "an unknown API";
}

void mk_kreq_error(const mk_kreq *q, int16_t code, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	const char *name = mk_kerr_name(code);
	mk_errlog_add(q->h->errlog, mk_wall_ms(), NULL, MK_INVALID_REQUEST,
		      "client %s, %s v%d (key %d) to broker %d: %s: %s",
		      q->conn->peer, api_name(q->hdr->api_key),
		      q->hdr->api_version, q->hdr->api_key, q->conn->broker,
		      name ? name : "error", what);
}

bool mk_khandle(void *arg, const mk_kconn_info *conn, const uint8_t *req,
		size_t len, mk_strbuf *out)
{
	mk_khandlers *h = arg;
	size_t start = out->len;
	mk_kreader r;
	mk_kreq_header hdr;
	mk_kreader_init(&r, req, len);
	if (!mk_kapi_read_request_header(&r, &hdr)) {
		mk_errlog_add(h->errlog, mk_wall_ms(), NULL, MK_INVALID_REQUEST,
			      "client %s (broker %d's listener): a request header that does not parse (api key %d, version %d); connection closed",
			      conn->peer, conn->broker, hdr.api_key, hdr.api_version);
		return false;
	}
	mk_kreq q = {
		.h = h, .conn = conn, .hdr = &hdr,
		.api = mk_kapi_find(hdr.api_key),
		.flexible = mk_kapi_is_flexible(hdr.api_key, hdr.api_version),
		.body = r, .out = out, .out_start = start,
	};
	kh_fn *fn = handler_of(hdr.api_key);
	bool served = fn && mk_kapi_supported(hdr.api_key, hdr.api_version);
	mk_kw_response_header(out, mk_kapi_response_header_version(
				      hdr.api_key, hdr.api_version),
			      hdr.correlation_id);
	if (!served && hdr.api_key == MK_KAPI_API_VERSIONS)
		return mk_kh_api_versions(&q);   /* the v0 body, KIP-511 */
	if (!served) {
		mk_kw_int16(out, MK_KERR_UNSUPPORTED_VERSION);
		mk_kreq_error(&q, MK_KERR_UNSUPPORTED_VERSION,
			      "not served (ApiVersions lists what is)");
		return true;
	}
	if (fn(&q))
		return true;
	mk_strbuf_setlen(out, start);      /* nothing is sent */
	mk_kreq_error(&q, MK_KERR_INVALID_REQUEST,
		      "the request body does not parse; connection closed");
	return false;
}
