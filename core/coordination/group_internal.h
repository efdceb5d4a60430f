/*
 * group_internal.h — the group coordinator's state, shared by its two
 * files (private to core/coordination/group*.c): group.c (the
 * operations, membership, positions, the snapshots) and group_log.c (the
 * records of __consumer_offsets and the rebuild of the state from them,
 * Kafka's GroupMetadataManager).
 *
 * Locking: as group.h says. Everything here is under g->lock, except
 * where a function says "under the turn" (the runtime's, coordinator.h).
 */
#ifndef MK_GROUP_INTERNAL_H
#define MK_GROUP_INTERNAL_H

#include <pthread.h>

#include "coordinator.h"
#include "group.h"

typedef struct {
	char *topic;
	int partition;
	int64_t position;        /* -1: none yet */
} gm_part;

typedef struct {
	char *name;
	char **topics;           /* sorted, unique */
	size_t ntopics;
	int64_t last_seen_ms;
	gm_part *parts;          /* sorted by (topic, partition) */
	size_t nparts;
	size_t poll_next;        /* the partition the next poll starts at */
} gm_member;

typedef struct {
	char *topic;
	int partition;
	int64_t offset;
} gm_commit;

typedef struct {
	char *name;
	int64_t generation;
	int64_t reset;           /* -1: [group] auto.offset.reset */
	int64_t session_ms;      /* -1: [group] session.timeout.ms */
	int64_t max_poll;        /* -1: [group] max.poll.records */
	gm_member **members;     /* sorted by name */
	size_t nmembers;
	gm_commit *commits;      /* sorted by (topic, partition) */
	size_t ncommits;
} gm_group;

struct mk_groups {
	mk_cluster *c;
	mk_coord *rt;                /* the runtime: its turn serialises changes */
	pthread_mutex_t lock;
	gm_group **groups;           /* sorted by name */
	size_t ngroups;
	int nparts;                  /* of the offsets topic; 0 = no topic yet */
	int32_t *loaded_epoch;       /* per offsets partition */
};

/* The state's containers (group.c). */
gm_group *gm_group_new(const char *name);
void gm_group_free(gm_group *grp);
void gm_member_free(gm_member *m);
void gm_commits_free(gm_commit *c, size_t n);
/* In an array of pointers to structs whose first member is their name
 * (gm_group, gm_member), sorted by name: the match or NULL; *pos its
 * index or the insertion point. */
void *gm_find_named(void *const *arr, size_t n, const char *key, size_t *pos);
gm_group *gm_find_group(mk_groups *g, const char *name, size_t *pos);
gm_member *gm_find_member(gm_group *grp, const char *name, size_t *pos);
void gm_insert_ptr(void ***arr, size_t *n, size_t pos, void *v);
void gm_remove_ptr(void **arr, size_t *n, size_t pos);
/* offset < 0 removes the commit. */
void gm_set_commit(gm_group *grp, const char *topic, int part, int64_t offset);

/* The records (group_log.c). */
extern const char *const gm_reset_names[];   /* by MK_RESET_* */
/* The value of a group's metadata record at generation gen. */
void gm_meta_value(const gm_group *grp, int64_t gen, mk_strbuf *out);
/* Apply one KEY=VALUE of a group's configuration to grp. */
mk_err gm_config_set(gm_group *grp, const char *kv, mk_strbuf *why);
/* A group's partition of __consumer_offsets. */
int gm_opart_of(mk_groups *g, const char *group);
/* Create __consumer_offsets if needed. Under the turn. */
mk_err gm_ensure_topic(mk_groups *g, mk_strbuf *why);
/* Reload every offsets partition whose leader epoch moved. Under the
 * turn; readers use gm_try_refresh, which only tries for it. */
void gm_refresh(mk_groups *g);
void gm_try_refresh(mk_groups *g);

#endif
