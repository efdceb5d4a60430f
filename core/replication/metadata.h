/*
 * metadata.h — DATA_DIR/metadata: brokers' states, topics with their
 * configuration overrides, and every partition's assignment, leader, epoch
 * and ISR. A text file, one record per line, replaced atomically
 * (mk_file_replace), so a crash leaves the previous or the next version:
 *
 *     minikafka-metadata 3
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
 * The checksum line ends every version-2 and version-3 file: an empty,
 * cut-short, NUL-led or header-only file is refused at load with one line
 * naming the file and line, and never overwritten (the daemon does not
 * start). The version names the batch format of the data directory's
 * segments: 3 is Kafka's RecordBatch v2, 1 and 2 the MKF2 frames before
 * it. The parser reads all three (a version-1 file has no checksum, and
 * must hold its next_producer_id line); mk_metadata_load refuses 1 and 2
 * with one line naming the format: such a directory is not read, and
 * nothing in it is changed (docs/filesystem.md, "Formats before
 * Kafka's"). Values are checked: replicas distinct and as many
 * as the topic's replication factor, the leader one of them or none, the
 * ISR a non-empty subset, epochs in [0, 2^31-1].
 *
 * Internal to the cluster, and below it: the file's format, its reading
 * and its writing, with no knowledge of mk_cluster (cluster_meta.c snapshots
 * its state into the lines under its locks and calls mk_metadata_write
 * with c->meta_lock held; the scan and the rebuild below run at open,
 * before anything else exists).
 *
 * The directories (mk_metadata_scan_dirs, mk_metadata_rebuild): what a
 * start finds under DATA_DIR/broker-B/ before any log opens, and the
 * topics metadata lacks rebuilt from it (-o rebuild_metadata, cluster.h).
 * An entry "holds data" when it holds a batch: a non-empty N.log, or a
 * checkpoint with an epoch (a log whose records retention removed). What
 * an interrupted creation leaves holds none.
 *
 * Crash points: meta.save.before-write, meta.save.after-write (the
 * temporary file written, not fsynced), meta.save.after-fsync (complete,
 * not yet renamed), meta.save.after-rename (the directory not yet
 * fsynced), meta.save.done.
 */
#ifndef MK_METADATA_H
#define MK_METADATA_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "errlog.h"
#include "error.h"
#include "replica.h"
#include "strbuf.h"

/* An idempotent producer identity (/producers/NAME). */
typedef struct {
	char *name;
	int64_t id;
	int16_t epoch;
} mk_producer_id;

/*
 * Append the checksum line to text (every line of a version-2 file but
 * that one) and replace DATA_DIR/metadata with it (crash points above).
 * A failure is also a line in log ("cannot write ...; the change is not
 * made").
 */
mk_err mk_metadata_write(const char *data_dir, mk_strbuf *text, mk_errlog *log);

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
	int version;             /* of its header: 1, 2 or 3 */
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
/* The topic named name in md, or NULL. */
const mk_metadata_topic *mk_metadata_find(const mk_metadata *md,
					  const char *name);

/* One entry of DATA_DIR/broker-B/ (dot-files aside). */
typedef struct {
	int broker;
	char *entry;             /* its name under broker-B */
	char *topic;             /* T of a T-P entry (a valid name, P in 0..1023),
				  * else NULL */
	int partition;
	bool data;               /* it holds a batch (above) */
} mk_meta_dir;

typedef struct {
	mk_meta_dir *v;          /* by broker id, then entry name */
	size_t n;
	int *brokers;            /* the broker-B directories, ascending */
	size_t nbrokers;
} mk_meta_dirs;

/* List every broker directory's entries; reads, changes nothing. */
void mk_metadata_scan_dirs(const char *data_dir, mk_meta_dirs *out);
void mk_meta_dirs_free(mk_meta_dirs *d);

/*
 * Add to md every topic that has T-P entries in dirs and no line in md
 * (when md->present, only those holding data: the others are what an
 * interrupted creation leaves), rebuilt from its directories, removing
 * nothing:
 *   - partitions: the highest P + 1; a P in between with no directory on
 *     any broker refuses the rebuild (MK_INVALID_CONFIG, the topic and P
 *     in why; md unchanged): a partial restore is not papered over;
 *   - replicas: the brokers holding a directory; the replication factor
 *     the most any partition has, a partition with fewer filled with
 *     configured brokers lacking one (their replicas the open reports
 *     missing); listed in create-topic's order (the configured brokers
 *     round robin from partition p's p-th), so a partition found where
 *     its creation put it gets its list back;
 *   - each log is opened (recovered as a mount would) for its newest
 *     leader epoch, log end, producer ids and timestamps; the leader is
 *     the configured replica with the newest epoch, then the longest log,
 *     then the earliest in the list (the preferred one; none if no log
 *     opens): the replica that holds most loses nothing; the epoch the
 *     newest any replica holds; the ISR the replicas level with the
 *     leader (same newest epoch and log end), so nothing a replica holds
 *     past another is trusted to it;
 *   - configuration: the defaults (overrides are not recoverable), an
 *     internal topic (topic_name.h) cleanup.policy=compact as it is made;
 *   - next_producer_id above every producer id in any batch, the manual
 *     clock at least the newest timestamp (time never moves back).
 * One /errors line (log) per rebuilt topic says what was assumed.
 */
mk_err mk_metadata_rebuild(const char *data_dir, const mk_config *cfg,
			   const mk_meta_dirs *dirs, mk_metadata *md,
			   mk_errlog *log, mk_strbuf *why);

#endif
