/*
 * metadata.h — DATA_DIR/metadata: brokers' states, topics with their
 * configuration overrides, and every partition's assignment, leader, epoch
 * and ISR. A text file, one record per line, replaced atomically
 * (mk_file_replace), so a crash leaves the previous or the next version:
 *
 *     minikafka-metadata 1
 *     broker ID online|offline
 *     topic NAME PARTITIONS RF [KEY=VALUE]...
 *     partition NAME P leader=ID|none epoch=E replicas=ID,... isr=ID,...
 *     clock MS                (the manual clock's time)
 *     next_producer_id N
 *     producer NAME ID EPOCH
 *
 * Internal to the cluster: called with c->meta_lock held.
 */
#ifndef MK_METADATA_H
#define MK_METADATA_H

#include "cluster.h"

/* Write the current state (snapshotted under the cluster's locks). */
mk_err mk_metadata_save(mk_cluster *c);

/* One topic as read from the file, for mk_cluster_open to build from. */
typedef struct {
	char *name;
	int npartitions, rf;
	char **overrides;        /* KEY=VALUE strings */
	size_t noverrides;
	mk_partition_state *parts;
} mk_metadata_topic;

typedef struct {
	bool present;            /* the file existed */
	int nbrokers;
	int broker_ids[MK_MAX_BROKERS];
	bool broker_online[MK_MAX_BROKERS];
	mk_metadata_topic *topics;
	size_t ntopics;
	int64_t clock_ms;
	int64_t next_producer_id;
	mk_producer_id *producers;
	size_t nproducers;
} mk_metadata;

/*
 * Read DATA_DIR/metadata into *md (a missing file: md->present false, MK_OK).
 * On failure (MK_INVALID_CONFIG, with "malformed metadata line starting
 * 'KIND'" or "metadata lacks partition T-P" in why) *md holds nothing.
 */
mk_err mk_metadata_load(const char *data_dir, mk_metadata *md, mk_strbuf *why);
/*
 * The parser behind mk_metadata_load, on the file's text (cut in place):
 * integers through core/parse.h, every token accounted for, each broker,
 * topic, partition and producer on one line, every partition of every
 * topic present. Exposed for tests and the fuzzer.
 */
mk_err mk_metadata_parse(char *text, mk_metadata *md, mk_strbuf *why);
void mk_metadata_free(mk_metadata *md);

#endif
