/*
 * metadata.h — DATA_DIR/metadata: brokers' states, topics with their
 * configuration overrides, and every partition's assignment, leader, epoch
 * and ISR. A text file, one record per line, replaced atomically
 * (mk_file_replace), so a crash leaves the previous or the next version:
 *
 *     minikafka-metadata 2
 *     broker ID online|offline
 *     topic NAME PARTITIONS RF [KEY=VALUE]...
 *     partition NAME P leader=ID|none epoch=E replicas=ID,... isr=ID,...
 *     clock MS                (the manual clock's time)
 *     next_producer_id N
 *     producer NAME ID EPOCH
 *     deleting NAME           (after NAME's lines: its deletion is decided;
 *                              the next mount finishes it)
 *     checksum XXXXXXXX       (CRC-32 of every byte before this line)
 *
 * The checksum line ends every version-2 file: an empty, cut-short,
 * NUL-led or header-only file is refused at load with one line naming the
 * file and line, and never overwritten (the daemon does not start). A
 * version-1 file (no checksum) is still read, if it holds its
 * next_producer_id line. Values are checked: replicas distinct and as many
 * as the topic's replication factor, the leader one of them or none, the
 * ISR a non-empty subset, epochs in [0, 2^31-1].
 *
 * Internal to the cluster: called with c->meta_lock held.
 *
 * Crash points: meta.save.before-write, meta.save.after-write (the
 * temporary file written, not fsynced), meta.save.after-fsync (complete,
 * not yet renamed), meta.save.after-rename (the directory not yet
 * fsynced), meta.save.done.
 */
#ifndef MK_METADATA_H
#define MK_METADATA_H

#include "cluster.h"

/*
 * A change decided but not yet applied in memory, saved as if it were
 * (decide, persist, act): brokers' and partitions' planned states, a topic
 * built but not yet in the table, a topic whose deletion is decided, a
 * topic's new configuration.
 */
typedef struct {
	mk_partition *p;
	mk_partition_state st;
} mk_meta_part;

typedef struct {
	int broker;                  /* -1: no broker change */
	bool broker_online;
	const mk_meta_part *parts;
	size_t nparts;
	mk_topic *add;
	const char *deleting;
	const mk_topic *cfg_topic;
	const mk_topic_config *cfg;
	const char *producer;        /* a producer identity set or removed */
	bool producer_gone;
	int64_t producer_id, next_producer_id;
	int16_t producer_epoch;
} mk_meta_plan;

#define MK_META_PLAN_NONE { .broker = -1 }

/*
 * Write the current state (snapshotted under the cluster's locks) with the
 * plan on top (NULL: none). On success every partition is told what the
 * file now holds (mk_partition_meta_saved).
 */
mk_err mk_metadata_save(mk_cluster *c, const mk_meta_plan *plan);

/* One topic as read from the file, for mk_cluster_open to build from. */
typedef struct {
	char *name;
	int npartitions, rf;
	char **overrides;        /* KEY=VALUE strings */
	size_t noverrides;
	mk_partition_state *parts;
	bool deleting;           /* a "deleting" line: finish at open */
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
 * integers through core/base/parse.h, every token accounted for, each broker,
 * topic, partition and producer on one line, every partition of every
 * topic present. Exposed for tests and the fuzzer.
 */
mk_err mk_metadata_parse(char *text, mk_metadata *md, mk_strbuf *why);
void mk_metadata_free(mk_metadata *md);

#endif
