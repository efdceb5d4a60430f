/*
 * nodes.h — the tree of SPEC section 2, as data.
 *
 * Every file and directory is an instance of one node kind, a row of the
 * table in nodes.c: its parent kind, its name (fixed, or matched by a
 * function for topic, partition, broker and segment names), its type and
 * mode, and its operations. mk_resolve() walks a path through that table;
 * nothing else in fs/ looks at path strings.
 *
 * Node types:
 *   DIR      listed with mk_node_list
 *   VALUE    read-only text computed at open (one value, a list, a table)
 *   CONTROL  write-only commands, one per line (some also readable)
 *   RECORDS  a record stream (records, records@POS...)
 *   APPEND   produce (append, append:...)
 *   RAW      a real file of the data directory, read-only (segments/)
 *   POLL     a group member's poll (poll, poll:...)
 *   BATCHES  a stream of batch headers (batches, batches@POS...)
 *
 * A partition directory has two views: /topics/T/P (the partition, read
 * through its leader) and /brokers/B/logs/T/P (broker B's own replica).
 * The second is not a copy of the rows: the resolver gives it the rows of
 * the first that make sense for one replica (records, leo, hw, ...), and
 * node_ref.broker says whose log a row shows (-1: the leader's).
 *
 * fs/ holds no domain rule: every node operation calls into core and turns
 * its answer into text.
 */
#ifndef MK_NODES_H
#define MK_NODES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cluster.h"
#include "names.h"
#include "strbuf.h"

typedef struct mkfs mkfs;

typedef enum {
	NODE_DIR,
	NODE_VALUE,
	NODE_CONTROL,
	NODE_RECORDS,
	NODE_APPEND,
	NODE_RAW,
	NODE_POLL,
	NODE_BATCHES,
} node_type;

typedef struct node_def node_def;

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

typedef mk_err (*node_read_fn)(mkfs *fs, const node_ref *ref, mk_strbuf *out,
			       mk_strbuf *why);
typedef mk_err (*node_write_fn)(mkfs *fs, const node_ref *ref, char *line,
				mk_strbuf *why);
typedef void (*node_list_fn)(mkfs *fs, const node_ref *ref,
			     void (*add)(void *arg, const char *name, bool dir),
			     void *arg);

struct node_def {
	int kind;
	int parent;              /* kind of the parent directory; -1 = root */
	const char *name;        /* fixed name, or NULL for a matched one */
	bool (*match)(mkfs *fs, node_ref *ref, const char *component);
	node_type type;
	mode_t mode;
	node_read_fn read;       /* VALUE (and readable CONTROL) */
	node_write_fn write;     /* CONTROL: one command line */
	node_list_fn list;       /* DIR: dynamic children */
	/* Waits inside a coordinator (its records are appended with
	 * acks=all): a CONTROL write, or for a DIR the mkdir and rmdir of
	 * its children. The serving layer runs these on the command thread,
	 * never on a FUSE worker (ops.c). */
	bool waits;
};

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
};

/* Control commands: the first KEY=VALUE word whose KEY an earlier word
 * gave, or NULL (a key given twice is EINVAL in every command). */
const char *mk_duplicate_key(char *const *words, int n);

/* Resolve a path. ENOENT-style errors come back as core codes. */
mk_err mk_resolve(mkfs *fs, const char *path, node_ref *ref, mk_strbuf *why);
void mk_node_ref_release(node_ref *ref);

/* List a directory: fixed children from the table, then dynamic ones. */
void mk_node_list(mkfs *fs, const node_ref *dir,
		  void (*add)(void *arg, const char *name, bool dir), void *arg);

/* How much of a RAW node's file it shows: the active segment's .log ends
 * at the log's size (the zeros of its runway past it, segment.h, are not
 * the log's); -1: the whole file. */
int64_t mk_node_raw_limit(mkfs *fs, const node_ref *ref);
/* The real path of a RAW node (a segment file), for reading; and, when
 * limit is not NULL, mk_node_raw_limit's answer from the same listing. */
mk_err mk_node_raw_path(mkfs *fs, const node_ref *ref, mk_strbuf *path,
			int64_t *limit);

/*
 * The size of a value file's text, when it is cheap to know (the text is
 * computed now; files that scan a log say false).
 */
bool mk_node_value_size(mkfs *fs, const node_ref *ref, size_t *size);

/* Run every line of a CONTROL write; stops at the first failing line. */
mk_err mk_node_control(mkfs *fs, const node_ref *ref, const char *buf,
		       size_t len, mk_strbuf *why);

/* Directory operations. */
/* Does this control write wait inside a coordinator (a node kind marked
 * waits, or a /ctl command whose records are appended with acks=all)? The
 * serving layer then runs it on the command thread, never on a FUSE
 * worker. */
bool mk_node_write_waits(const node_ref *ref, const char *buf, size_t size);
/* Does a mkdir or rmdir of path (a child of a directory marked waits:
 * /groups/G, /transactions/ID) wait inside a coordinator? */
bool mk_node_mkdir_waits(mkfs *fs, const char *path);
mk_err mk_node_mkdir(mkfs *fs, const char *path, mk_strbuf *why);
mk_err mk_node_rmdir(mkfs *fs, const char *path, mk_strbuf *why);

#endif
