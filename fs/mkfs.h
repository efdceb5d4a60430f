/*
 * mkfs.h — the daemon's root object (mkfs: everything fs/ operations
 * reach) and a resolved path (node_ref): what every node function takes,
 * in nodes.c and in the files of node functions it lists in its table
 * (nodes_groups.c, nodes_txn.c). Those files include this header, not
 * nodes.h, so that the table depends on them and not the other way round.
 * Also the helpers they share with nodes.c for control commands
 * (mk_duplicate_key, mk_node_coordinator_check). No state of its own, no lock: mkfs's fields say
 * what guards them.
 */
#ifndef MK_MKFS_H
#define MK_MKFS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cluster.h"
#include "coordinator.h"
#include "strbuf.h"

typedef struct mkfs mkfs;

typedef struct node_def node_def;   /* a row of the table (nodes.h) */

/* A resolved path. Owns a topic reference when topic is set. */
typedef struct {
	const node_def *def;
	mk_topic *topic;
	int partition;           /* -1 when not under a partition */
	int broker;              /* -1 when not under a broker; under
				  * /brokers/B/logs/T/P, the replica shown */
	char name[256];          /* the last component as given */
	char parent_name[256];   /* the component before it */
	char group[256];         /* under /groups/G: G */
	char member[256];        /* under /groups/G/members/M: M */
} node_ref;

/* The daemon's root object: everything fs/ operations reach. */
struct mkfs {
	mk_cluster *cluster;
	struct mk_groups *groups;   /* the group coordinator (group.h) */
	struct mk_producers *producers;   /* the append descriptors' producers */
	struct mk_txns *txns;       /* the transaction coordinator (txn.h) */
	char *readme;            /* /README text */
	/* Open handles, so that a stop with files still open (SIGTERM) can
	 * release them after the request loop ended. */
	pthread_mutex_t handles_lock;
	struct mk_handle **handles;
	size_t nhandles, handles_alloc;
	struct mk_inodes *inodes;    /* the kernel's inode numbers (inodes.h) */
	struct mk_parking *parking;  /* requests waiting for the cluster */
	/* known records views (viewmemo.h); NULL: none. Atomic: set by the
	 * init request's thread, read by the stop signal's handler on any
	 * thread (the store publishes the memo to it). */
	_Atomic(struct mk_viewmemo *) views;
	void *session;               /* the FUSE session, for notifications
					* (set by mount/main.c); NULL: none */
	struct mk_cacheprobe *probe; /* asks the kernel what it caches */
	unsigned workers;            /* FUSE worker threads at most (set by
					* mount/main.c; 0: libfuse's 10) */
	pthread_t loop_thread;       /* runs the request loop (mount/main.c) */
	bool has_loop_thread;
	uid_t owner;                 /* who mounted: may change the cluster */
	size_t max_write;            /* the largest piece of a write(2) the
					* kernel sends (set at init, ops.c);
					* 0: unknown (handles.h) */
	/* Broker B's Kafka protocol listener as HOST:PORT into out, false
	 * for none (set by mount/main.c, which has the protocol's server;
	 * NULL: none). */
	bool (*listener)(void *arg, int broker, mk_strbuf *out);
	void *listener_arg;
};

/* Control commands: the first KEY=VALUE word whose KEY an earlier word
 * gave, or NULL (a key given twice is EINVAL in every command). */
const char *mk_duplicate_key(char *const *words, int n);

/*
 * For the node functions of a coordinator (nodes_groups.c, nodes_txn.c):
 * `code`, and why, when the coordinator (what: "group", "transaction")
 * is not running; with `changes`, a command that changes it, also when
 * there is no call for it to leave pending (such a command runs as a
 * job, mk_node_write_waits).
 */
mk_err mk_node_coordinator_check(const void *coordinator, const char *what,
				 mk_err code, bool changes,
				 const mk_coord_call *call, mk_strbuf *why);
#define NEED_COORDINATOR(coord, what, code, changes, call, why)              \
	do {                                                                 \
		mk_err need_ = mk_node_coordinator_check(coord, what, code,  \
							 changes, call, why); \
		if (need_)                                                   \
			return need_;                                        \
	} while (0)

#endif
