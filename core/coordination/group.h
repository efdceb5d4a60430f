/*
 * group.h — the group coordinator: consumer groups, their members and
 * generations, eager rebalances, sessions on the cluster clock, member
 * positions, and committed offsets kept the Kafka way.
 *
 * Owns: every group (name, generation, per-group configuration, members,
 * committed offsets) and every member (subscription, last heartbeat,
 * assigned partitions and their positions). The daemon owns one
 * mk_groups beside its mk_cluster; nothing here is global.
 *
 * Persistence. Committed offsets and group metadata are keyed records of
 * the internal topic __consumer_offsets on the cluster's own log (created
 * at the first mkdir of a group, with [group] offsets.topic.num.partitions
 * partitions, offsets.topic.replication.factor replicas — capped at the
 * brokers — and cleanup.policy=compact). A group lives in partition
 * crc32(group) mod n. Records (text, so `cat` shows them):
 *     key GROUP              value "generation=N [KEY=VALUE...]"  (the
 *                            group exists; its generation and overrides)
 *     key GROUP/TOPIC/PART   value "OFFSET"                       (commit)
 * and a null value (tombstone) deletes either. Every change to them —
 * create, delete, every rebalance, every commit, a configuration change —
 * is appended with acks=all through the partition's produce path and only
 * then applied in memory: a refused or failed write changes nothing here.
 * The coordinator rebuilds groups and offsets by reading the topic up to
 * its high watermark at open, and again for a partition whose leader epoch
 * changed since it last read it (checked before every change, and by
 * readers when no change is in flight). Members live in memory only: a
 * remount starts every group empty, at its persisted generation, so the
 * generation never moves back.
 *
 * Rules:
 *   - every join, leave and expiry sweep is one eager rebalance: the
 *     generation grows by one and every member's assignment is recomputed
 *     at once by mk_assign_round_robin (assignor.h);
 *   - eager means every partition is revoked: after a rebalance every
 *     assigned partition — moved or kept — starts at the group's committed
 *     offset (what was read but not committed is read again), else by
 *     auto.offset.reset (earliest: log start, latest: high watermark,
 *     none: no position — poll is OFFSET_OUT_OF_RANGE until a seek gives
 *     one);
 *   - join, heartbeat, poll and commit refresh the member's session; a
 *     member silent for more than session.timeout.ms (cluster clock) is
 *     removed by mk_groups_expire (and by the background tick in
 *     [replication] mode = auto);
 *   - a refused call (unknown member, stale generation, unowned partition,
 *     offset out of range) changes nothing, not even the session.
 *
 * Locking (in this order; both before any cluster or partition lock):
 *   write_lock   serialises every change that is persisted (create,
 *                delete, join, leave, expire, commit, configure) and the
 *                rebuilds; held while waiting for acks=all
 *   lock         guards all in-memory state; never held while waiting
 * Polls fetch with neither lock held and move positions with a
 * compare-and-set (mk_group_advance), so readers never wait on acks.
 *
 * Failpoints: group.persist.after-append (a change is in the log, not yet
 * applied in memory).
 */
#ifndef MK_GROUP_H
#define MK_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "codec.h"
#include "error.h"
#include "strbuf.h"

#define MK_OFFSETS_TOPIC "__consumer_offsets"

typedef struct mk_groups mk_groups;

/* Open the coordinator: rebuild groups from __consumer_offsets if it
 * exists. */
mk_err mk_groups_open(mk_cluster *c, mk_groups **out, mk_strbuf *why);
/* Start the background expiry tick ([replication] mode = auto only). */
void mk_groups_start(mk_groups *g);
void mk_groups_close(mk_groups *g);

/* Groups. */
mk_err mk_group_create(mk_groups *g, const char *group, mk_strbuf *why);
mk_err mk_group_delete(mk_groups *g, const char *group, mk_strbuf *why);
bool mk_group_exists(mk_groups *g, const char *group);
bool mk_group_member_exists(mk_groups *g, const char *group, const char *member);
/* Sorted names; free each and the array. */
size_t mk_group_names(mk_groups *g, char ***names);
size_t mk_group_member_names(mk_groups *g, const char *group, char ***names);

/* Per-group overrides: auto.offset.reset, session.timeout.ms,
 * max.poll.records. configure validates all pairs first, then persists. */
mk_err mk_group_configure(mk_groups *g, const char *group,
			  const char *const *kv, size_t n, mk_strbuf *why);
mk_err mk_group_config_format(mk_groups *g, const char *group, mk_strbuf *out,
			      mk_strbuf *why);

/* Membership. */
mk_err mk_group_join(mk_groups *g, const char *group, const char *member,
		     const char *const *topics, size_t ntopics, mk_strbuf *why);
mk_err mk_group_leave(mk_groups *g, const char *group, const char *member,
		      mk_strbuf *why);
mk_err mk_group_heartbeat(mk_groups *g, const char *group, const char *member,
			  int64_t generation, mk_strbuf *why);
/* Remove every member whose session expired; *removed (if given) gets
 * how many. One rebalance per group that lost members. */
mk_err mk_groups_expire(mk_groups *g, int *removed, mk_strbuf *why);

/* Positions and commits. */
mk_err mk_group_seek(mk_groups *g, const char *group, const char *member,
		     const char *topic, int partition, int64_t offset,
		     mk_strbuf *why);

typedef struct {
	const char *topic;
	int partition;
	int64_t offset;
} mk_commit_entry;

/*
 * Commit. generation < 0: any; else ILLEGAL_GENERATION unless current.
 * n == 0 commits the current position of every owned partition that has
 * one; else the entries, each owned (TOPIC_AUTHORIZATION_FAILED) and
 * within [log start, log end] (OFFSET_OUT_OF_RANGE). All or nothing: one
 * batch, acks=all, before it returns.
 */
mk_err mk_group_commit(mk_groups *g, const char *group, const char *member,
		       int64_t generation, const mk_commit_entry *entries,
		       size_t n, mk_strbuf *why);

/*
 * The transaction coordinator's commit (txn.h), at the end of a committed
 * transaction: the entries for no member and any generation, each offset
 * taken as check_range's lenient commit takes it. GROUP_ID_NOT_FOUND when
 * the group is gone. One batch, acks=all, before it returns.
 */
mk_err mk_group_commit_offsets(mk_groups *g, const char *group,
				const mk_commit_entry *entries, size_t n,
				mk_strbuf *why);

/* One partition of a poll: where it started. */
typedef struct {
	const char *topic;
	int partition;
	int64_t from;            /* the member's position when the poll began */
} mk_poll_partition;

/* Called for each record returned, in order; the views live until the
 * callback returns. */
typedef void (*mk_poll_fn)(void *arg, const mk_poll_partition *pp,
			   const mk_record_view *rec);
/*
 * Called for each data batch with records to return, in order: it takes
 * the first records of b whose offsets lie in [from, end), at most max
 * (>= 1) of them, returns how many it took and sets *next to the offset
 * after the last one taken (untouched when none). The view lives until
 * the callback returns. A batch at a time, so that a reader formats a
 * whole batch in one call (no per-record call here).
 */
typedef size_t (*mk_poll_batch_fn)(void *arg, const mk_poll_partition *pp,
				   const mk_batch_view *b, int64_t from,
				   int64_t end, size_t max, int64_t *next);

/*
 * What a poller fetched and has not returned yet, per partition, so that
 * a poll of max.poll.records does not read a partition's frames again
 * for every poll (Kafka's consumer keeps its fetched data the same way).
 * Owned by one poller (an open poll file), never shared; entries are
 * used only while the leader epoch is the one they were read in, and only
 * below the HW they were read at. NULL: no cache.
 */
typedef struct poll_cached poll_cached;
typedef struct {
	poll_cached *entries;
	size_t n;
} mk_poll_cache;
mk_poll_cache *mk_poll_cache_new(void);
void mk_poll_cache_clear(mk_poll_cache *c);
void mk_poll_cache_free(mk_poll_cache *c);

/*
 * Poll: the member's next records from its positions up to the visible
 * end (the HW; with committed, the LSO), at most max records (max <= 0 or
 * above the group's max.poll.records: max.poll.records), partitions taken
 * in turn starting after the one the last poll ended on. polls > 1 stands
 * for that many polls in a row (a stream that polls again as soon as it
 * is read): up to polls x max.poll.records in one pass. Positions do not
 * move here: the caller moves them by what it really handed out, with
 * mk_group_advance. Refreshes the session. *count gets the records.
 */
mk_err mk_group_poll(mk_groups *g, const char *group, const char *member,
		     int64_t max, int polls, bool committed, mk_poll_cache *cache,
		     mk_poll_fn fn, void *arg, int64_t *count, mk_strbuf *why);
/* The same, handing out whole batches (fn takes their records). */
mk_err mk_group_poll_batches(mk_groups *g, const char *group,
			     const char *member, int64_t max, int polls,
			     bool committed, mk_poll_cache *cache,
			     mk_poll_batch_fn fn, void *arg, int64_t *count,
			     mk_strbuf *why);
/* Move a position from `from` to `to` if it is still `from` and the
 * member still owns the partition; false otherwise (nothing changes). */
bool mk_group_advance(mk_groups *g, const char *group, const char *member,
		      const char *topic, int partition, int64_t from, int64_t to);
/* The one place a poll waits for more: up to wait_ms (wall time) for a
 * change on the member's partitions or its assignment. */
void mk_group_wait(mk_groups *g, const char *group, const char *member,
		   int wait_ms);
/* Without waiting: the partition the member's next poll starts at, with a
 * topic reference in *t (put it when done); false (and *t NULL) when the
 * member has no partition. */
bool mk_group_poll_target(mk_groups *g, const char *group, const char *member,
			  mk_topic **t, mk_partition **p);

/* Snapshots for the files. */
typedef struct {
	char *topic;
	int partition;
	char *owner;             /* NULL: no member owns it */
	int64_t position;        /* the owner's position; -1 none */
	int64_t committed;       /* -1 none */
	int64_t hw;              /* -1 no leader */
	int64_t log_start;       /* -1 no leader */
} mk_group_part_info;

typedef struct {
	char *name;
	char **topics;
	size_t ntopics;
	int64_t last_seen_ms;
	size_t nparts;           /* assigned partitions */
} mk_group_member_info;

typedef struct {
	int64_t generation;
	int64_t now_ms;
	int64_t session_timeout_ms;
	int reset;               /* MK_RESET_*, effective */
	mk_group_member_info *members;
	size_t nmembers;
	mk_group_part_info *parts;   /* sorted by (topic, partition) */
	size_t nparts;
} mk_group_info;

/*
 * member NULL: the group — members, and every partition assigned or
 * committed. member set: that member and its assigned partitions only.
 */
mk_err mk_group_describe(mk_groups *g, const char *group, const char *member,
			 mk_group_info *out, mk_strbuf *why);
void mk_group_info_free(mk_group_info *info);

#endif
