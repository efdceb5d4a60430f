/*
 * khandlers.h — the Kafka APIs the brokers answer: one dispatcher
 * (mk_khandle, the server's handler, kserver.h) and a function per API
 * (kh_*.c), each a decoder of the request, the same core calls the files
 * make, and an encoder of the response, written once for all the
 * versions served (kapi.h has them).
 *
 * The dispatcher reads the request header in the version its API and
 * version call for. A header that does not parse closes the connection
 * (an /errors line names the client: there is no correlation id to
 * answer). An API or version not served is answered, never dropped:
 * ApiVersions of a newer version with a v0 body holding
 * UNSUPPORTED_VERSION and the ranges (as Kafka answers it, KIP-511), any
 * other with its response header and the int16 UNSUPPORTED_VERSION, and
 * an /errors line naming the client and the API. A body that does not
 * parse closes the connection with an /errors line, as Kafka's broker
 * does (its client could not read an answer to what it did not mean).
 *
 * No domain rule lives here: what a request may do is the core's answer,
 * mapped to Kafka's codes (mk_kerr_from).
 *
 * Threads: the server's network thread calls mk_khandle; the state here
 * is set once before the server starts.
 */
#ifndef MK_KHANDLERS_H
#define MK_KHANDLERS_H

#include "cluster.h"
#include "kapi.h"
#include "kserver.h"
#include "kwire.h"

typedef struct mk_khandlers {
	mk_cluster *cluster;
	mk_errlog *errlog;
	mk_kserver *server;     /* the brokers' addresses (Metadata) */
	const char *cluster_id; /* Metadata v2+ */
	/* The network thread's alone: */
	struct mk_kpark *parked;        /* deferred requests (kpark.h) */
	unsigned wire_producers;        /* InitProducerId's last wire-N */
} mk_khandlers;

/* The server's handler (mk_khandler): arg is an mk_khandlers. */
bool mk_khandle(void *arg, const mk_kconn_info *conn, const uint8_t *req,
		size_t len, mk_strbuf *out);


/* Is the API answered (in some version)? ApiVersions lists only these:
 * the table of kapi.h holds what issue 26 will serve, built up an API at
 * a time. */
bool mk_khandles(int16_t key);

/* ---- for the kh_*.c files ------------------------------------------- */

/* Bounds on what one request may ask (more closes the connection with
 * an /errors line): partitions (Produce, Fetch, ListOffsets) and topics
 * (Metadata) a request, and the bytes a Fetch answer carries (Kafka's
 * fetch.max.bytes default, 55 MiB). */
#define MK_KREQ_MAX_PARTITIONS 10000
#define MK_KFETCH_MAX_BYTES (55 * 1024 * 1024)

/* One request being answered. */
typedef struct {
	mk_khandlers *h;
	const mk_kconn_info *conn;
	const mk_kreq_header *hdr;
	const mk_kapi *api;
	bool flexible;          /* this version's encoding */
	mk_kreader body;        /* the request after its header */
	mk_strbuf *out;         /* the response, its header written */
	size_t out_start;       /* out's length before the header (a
				 * deferred answer drops what is there) */
} mk_kreq;

/* An /errors line for request q: its client, API and version, and what. */
void mk_kreq_error(const mk_kreq *q, int16_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Partitions answered grouped by topic, in the request's order (Produce,
 * Fetch): parts is an array of n structs of `size` bytes, each starting
 * with its topic's name (a char *). mk_kw_topic_count writes how many
 * topics; then each mk_kw_topic_run, from the index i of a run's first
 * partition, writes the topic's name and partition count and returns the
 * run's end.
 */
void mk_kw_topic_count(mk_strbuf *out, const void *parts, size_t n,
		       size_t size);
size_t mk_kw_topic_run(mk_strbuf *out, const void *parts, size_t n,
		       size_t size, size_t i);

/*
 * A request's configs array (CreateTopics, AlterConfigs: name STRING,
 * value NULLABLE_STRING) as KEY=VALUE strings, as the core's overrides
 * take them (a null value as empty); a name holding NUL or '=', or a
 * value holding NUL, sets err. *n gets the count; free each and the
 * array (also on err).
 */
char **mk_kr_config_pairs(mk_kreader *r, size_t *n);
/* A STRING of the request (a topic's or resource's name) as a C string;
 * NULL, err set, when it holds a NUL (it would name another topic) or
 * the read failed. */
char *mk_kr_name(mk_kreader *r);

/*
 * Is partition index of topic led by broker, at the client's
 * current_epoch (-1: not checked)? INVALID_TOPIC_EXCEPTION,
 * UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
 * NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH (older) or
 * UNKNOWN_LEADER_EPOCH (newer), else NONE with *p. *t is the topic,
 * referenced when found (the caller puts it), *p NULL on any error.
 */
int16_t mk_kh_leader_here(mk_khandlers *h, int broker, const char *topic,
			  int32_t index, int32_t current_epoch, mk_topic **t,
			  mk_partition **p);

/* The handlers: false when the body did not parse (the dispatcher
 * answers it). */
bool mk_kh_api_versions(mk_kreq *q);
bool mk_kh_metadata(mk_kreq *q);
bool mk_kh_produce(mk_kreq *q);
bool mk_kh_fetch(mk_kreq *q);
bool mk_kh_list_offsets(mk_kreq *q);
bool mk_kh_offset_for_leader_epoch(mk_kreq *q);
bool mk_kh_find_coordinator(mk_kreq *q);
bool mk_kh_init_producer_id(mk_kreq *q);
bool mk_kh_create_topics(mk_kreq *q);
bool mk_kh_delete_topics(mk_kreq *q);
bool mk_kh_delete_records(mk_kreq *q);
bool mk_kh_describe_configs(mk_kreq *q);
bool mk_kh_alter_configs(mk_kreq *q);

#endif
