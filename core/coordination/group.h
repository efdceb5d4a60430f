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
 * Every persisted change (create, delete, configure, join, leave, expire,
 * commit) is an operation of the coordinators' runtime (coordinator.h):
 * queued, run one at a time, its records appended with acks=all and
 * applied once acknowledged. Those calls take an mk_coord_call: they
 * return at once, with the result or with the call pending, and the
 * caller waits for the runtime's event and resumes the call (fs/ parks
 * it as a request; mk_coord_call_wait blocks). A refusal may come at
 * either point, and changes nothing.
 *
 * Locking (in this order; both before any cluster or partition lock):
 *   the runtime's turn   serialises the operations and the rebuilds;
 *                        never held while waiting
 *   lock                 guards all in-memory state
 * Polls (core/client/fetcher.h) fetch with neither lock held and move
 * positions with a compare-and-set (mk_group_advance), so readers never
 * wait on acks.
 *
 * Failpoints: group.persist.after-append (a change is in the log, not yet
 * applied in memory).
 */
#ifndef MK_GROUP_H
#define MK_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "coordinator.h"
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
mk_err mk_group_create(mk_groups *g, const char *group, mk_coord_call *call,
		       mk_strbuf *why);
mk_err mk_group_delete(mk_groups *g, const char *group, mk_coord_call *call,
		       mk_strbuf *why);
bool mk_group_exists(mk_groups *g, const char *group);
bool mk_group_member_exists(mk_groups *g, const char *group, const char *member);
/* Sorted names; free each and the array. */
size_t mk_group_names(mk_groups *g, char ***names);
size_t mk_group_member_names(mk_groups *g, const char *group, char ***names);

/* Per-group overrides: auto.offset.reset, session.timeout.ms,
 * max.poll.records. configure validates all pairs first, then persists. */
mk_err mk_group_configure(mk_groups *g, const char *group,
			  const char *const *kv, size_t n, mk_coord_call *call,
			  mk_strbuf *why);
mk_err mk_group_config_format(mk_groups *g, const char *group, mk_strbuf *out,
			      mk_strbuf *why);

/* Membership. */
mk_err mk_group_join(mk_groups *g, const char *group, const char *member,
		     const char *const *topics, size_t ntopics, mk_coord_call *call,
		     mk_strbuf *why);
mk_err mk_group_leave(mk_groups *g, const char *group, const char *member,
		      mk_coord_call *call, mk_strbuf *why);
mk_err mk_group_heartbeat(mk_groups *g, const char *group, const char *member,
			  int64_t generation, mk_strbuf *why);
/* Remove every member whose session expired by now; *removed (if
 * given; it must outlive the call) counts them as they go. One rebalance
 * per group that lost members. */
mk_err mk_groups_expire(mk_groups *g, int *removed, mk_coord_call *call,
			mk_strbuf *why);

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
 * batch, acks=all. The entries are copied.
 */
mk_err mk_group_commit(mk_groups *g, const char *group, const char *member,
		       int64_t generation, const mk_commit_entry *entries,
		       size_t n, mk_coord_call *call, mk_strbuf *why);

/*
 * The transaction coordinator's commit (txn.h), at the end of a committed
 * transaction: the entries for no member and any generation, each offset
 * taken as check_range's lenient commit takes it. GROUP_ID_NOT_FOUND when
 * the group is gone. One batch, acks=all.
 */
mk_err mk_group_commit_offsets(mk_groups *g, const char *group,
				const mk_commit_entry *entries, size_t n,
				mk_coord_call *call, mk_strbuf *why);

/*
 * For the consumer's fetcher (core/client/fetcher.h), which fetches with
 * neither lock held: a poll starts from these and ends with these.
 */
typedef struct {
	char *topic;
	int partition;
	int64_t from;            /* the member's position as the poll starts */
} mk_group_position;

/*
 * The member's assigned partitions that have a position, in the order a
 * poll takes them (from the one after where the last poll ended:
 * mk_group_poll_ended). A partition with no position, or one outside
 * [log start, log end], first gets one by auto.offset.reset (none:
 * OFFSET_OUT_OF_RANGE, and nothing is returned); a deleted topic's
 * partitions are left out. *max_poll gets the group's max.poll.records.
 * Refreshes the session. Free *out with mk_group_positions_free.
 */
mk_err mk_group_poll_positions(mk_groups *g, const char *group,
			       const char *member, mk_group_position **out,
			       size_t *n, int64_t *max_poll, mk_strbuf *why);
void mk_group_positions_free(mk_group_position *v, size_t n);
/* A poll handed out records of (topic, partition) last: the member's next
 * poll starts at the partition after it. */
void mk_group_poll_ended(mk_groups *g, const char *group, const char *member,
			 const char *topic, int partition);
/* The cluster the coordinator runs on (whose partitions a fetcher reads). */
mk_cluster *mk_groups_cluster(mk_groups *g);

/* Move a position from `from` to `to` if it is still `from` and the
 * member still owns the partition; false otherwise (nothing changes). */
bool mk_group_advance(mk_groups *g, const char *group, const char *member,
		      const char *topic, int partition, int64_t from, int64_t to);
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
