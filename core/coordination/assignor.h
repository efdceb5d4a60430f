/*
 * assignor.h — the round-robin partition assignor of an eager rebalance.
 *
 * Owns nothing and keeps no state: a pure function from (members and their
 * subscriptions, topics and their partition counts) to an assignment.
 *
 * Rule (Kafka's RoundRobinAssignor): members sorted by name, the
 * (topic, partition) pairs of every subscribed topic sorted by topic then
 * partition; each pair in turn goes to the next member in circular order
 * that subscribes to its topic. The result depends only on the sets given,
 * never on their order, so every member can compute it and get the same.
 *
 * Invariants: every pair of a subscribed topic has exactly one owner, and
 * that owner subscribes to the topic. No locks.
 */
#ifndef MK_ASSIGNOR_H
#define MK_ASSIGNOR_H

#include <stddef.h>

typedef struct {
	const char *name;
	const char *const *topics;
	size_t ntopics;
} mk_assign_member;

typedef struct {
	const char *name;
	int partitions;
} mk_assign_topic;

typedef struct {
	size_t member;           /* index into the members as given */
	const char *topic;       /* points at the mk_assign_topic name */
	int partition;
} mk_assign_pair;

/*
 * Assign. Topics a member subscribes to that are not in `topics` have no
 * partitions and are skipped. *out (free it) gets the pairs sorted by
 * (topic, partition); returns how many.
 */
size_t mk_assign_round_robin(const mk_assign_member *members, size_t nmembers,
			     const mk_assign_topic *topics, size_t ntopics,
			     mk_assign_pair **out);

#endif
