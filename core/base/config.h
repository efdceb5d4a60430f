/*
 * config.h — the configuration of docs/filesystem.md section 9: built-in
 * defaults, an INI file read with iniparser, and per-topic overrides.
 *
 * One table (config.c) describes every key: its INI section, Kafka name,
 * type, bounds and where it lives in the structs below. Loading, validation,
 * printing /config and topic overrides all walk that table, so a key is
 * added in exactly one place.
 *
 * A topic's effective configuration is the cluster's [log] values plus
 * min.insync.replicas and unclean.leader.election.enable, with the topic's
 * own overrides on top (mk_topic_config.overrides says which are its own).
 */
#ifndef MK_CONFIG_H
#define MK_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

#define MK_MAX_BROKERS 16

enum { MK_CLEANUP_DELETE = 1, MK_CLEANUP_COMPACT = 2 };
enum { MK_TRUNCATE_EPOCH = 0, MK_TRUNCATE_HW = 1 };
enum { MK_RESET_EARLIEST = 0, MK_RESET_LATEST = 1, MK_RESET_NONE = 2 };
/* compression.type = producer: a batch keeps the codec it came with. */
enum { MK_COMPRESSION_PRODUCER = 5 };

typedef struct {
	int64_t segment_bytes;
	int64_t index_interval_bytes;
	int64_t cleanup_policy;          /* MK_CLEANUP_* bits */
	int64_t retention_ms;
	int64_t retention_bytes;
	int64_t delete_retention_ms;
	int64_t message_max_bytes;
	int64_t flush_messages;
	int64_t compression_type;         /* a Kafka codec id 0-4, or
					   * MK_COMPRESSION_PRODUCER */
	int64_t log_append_time;          /* message.timestamp.type: bool */
	int64_t min_insync_replicas;
	int64_t unclean_leader_election;  /* bool */
	uint32_t overrides;               /* bit i: key i of the topic table */
} mk_topic_config;

typedef struct {
	int broker_ids[MK_MAX_BROKERS];
	int nbrokers;
	int64_t num_partitions;
	int64_t default_replication_factor;
	int64_t manual_clock;             /* bool */
	int64_t auto_replication;         /* bool */
	int64_t fetch_interval_ms;
	int64_t replica_lag_time_max_ms;
	int64_t replica_lag_max_messages;
	int64_t replica_fetch_max_bytes;
	int64_t replica_fetch_wait_max_ms;  /* auto mode: long-poll bound */
	int64_t replica_fetch_min_bytes;    /* auto mode: bytes that end it */
	int64_t truncation;               /* MK_TRUNCATE_* */
	int64_t retention_check_interval_ms;  /* the background cleaner */
	mk_topic_config log;              /* cluster defaults for topics */
	int64_t acks;                     /* 0, 1 or -1 (all) */
	int64_t batch_size;
	int64_t linger_ms;
	int64_t partitioner;              /* a topic append's key hash:
					   * 0 murmur2, 1 crc32 (partitioner.h) */
	int64_t request_timeout_ms;
	int64_t transaction_timeout_ms;   /* txn.h: an open transaction's life */
	int64_t session_timeout_ms;
	int64_t auto_offset_reset;        /* MK_RESET_* */
	int64_t max_poll_records;
	int64_t offsets_topic_num_partitions;
	int64_t offsets_topic_replication_factor;
	/* [network] listeners: broker 1's address; broker B listens on
	 * listen_port - 1 + B (port 0: each broker a free port). */
	char listen_host[64];
	int64_t listen_port;
	bool listen_off;                  /* listeners = off: none */
} mk_config;

void mk_config_defaults(mk_config *cfg);
/* Load an INI file over the defaults. Unknown keys and bad values fail. */
mk_err mk_config_load(mk_config *cfg, const char *path, mk_strbuf *why);
/* Set one "section:key" (or plain Kafka key) from a string, validated. */
mk_err mk_config_set(mk_config *cfg, const char *key, const char *value,
		     mk_strbuf *why);
/* The effective configuration as INI text (/config). */
void mk_config_format(const mk_config *cfg, mk_strbuf *out);

/* Topic configuration: cluster defaults, then overrides. */
void mk_topic_config_init(mk_topic_config *tc, const mk_config *cfg);
/* Set an override; INVALID_CONFIG for unknown keys or bad values. */
mk_err mk_topic_config_set(mk_topic_config *tc, const char *key,
			   const char *value, mk_strbuf *why);
/* Re-derive non-overridden keys from (changed) cluster defaults. */
void mk_topic_config_rebase(mk_topic_config *tc, const mk_config *cfg);
/* All effective keys, KEY=VALUE lines (/topics/T/config). */
void mk_topic_config_format(const mk_topic_config *tc, mk_strbuf *out);
/* Only the overrides, KEY=VALUE separated by spaces (for metadata). */
void mk_topic_config_format_overrides(const mk_topic_config *tc,
				      mk_strbuf *out);

/*
 * Why `what` = needed (replication.factor, min.insync.replicas...) cannot
 * be had from this cluster's brokers, with what to write instead:
 * "WHAT N needs N brokers; this cluster has M (...)".
 */
void mk_config_explain_brokers(const mk_config *cfg, const char *what,
			       int64_t needed, mk_strbuf *why);

#endif
