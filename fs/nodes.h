/*
 * nodes.h — the tree of docs/filesystem.md section 2, as data.
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

#include <stdbool.h>
#include <sys/types.h>

#include "mkfs.h"
#include "names.h"
#include "strbuf.h"

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

typedef mk_err (*node_read_fn)(mkfs *fs, const node_ref *ref, mk_strbuf *out,
			       mk_strbuf *why);
typedef mk_err (*node_write_fn)(mkfs *fs, const node_ref *ref, char *line,
				mk_coord_call *call, mk_strbuf *why);
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
	/* The kind's descriptor operations (handle.h): records, batches,
	 * append, raw and poll rows; none: a snapshot (value, control). */
	const struct mk_handle_ops *hops;
};

/* The descriptor operations of the kinds, for the rows (handle.h; each
 * in its kind's file). */
struct mk_handle_ops;
extern const struct mk_handle_ops mk_records_handle_ops;   /* handle_records.c */
extern const struct mk_handle_ops mk_batches_handle_ops;   /* handle_records.c */
extern const struct mk_handle_ops mk_append_handle_ops;    /* handle_append.c */
extern const struct mk_handle_ops mk_raw_handle_ops;       /* handles.c */
extern const struct mk_handle_ops mk_poll_handle_ops;      /* poll.c */

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

/*
 * Run the lines of a CONTROL write from *from on (from NULL: all of
 * them); stops at the first failing line, or after a line whose command
 * left call pending (a coordinator's records not yet acknowledged: the
 * caller waits for the call, resumes it and goes on from *from). A
 * command that waits inside a coordinator needs a call
 * (mk_node_write_waits); without one it is refused.
 */
mk_err mk_node_control(mkfs *fs, const node_ref *ref, const char *buf,
		       size_t len, size_t *from, mk_coord_call *call,
		       mk_strbuf *why);

/* Directory operations. */
/* Does this control write wait inside a coordinator (a node kind marked
 * waits, or a /ctl command whose records are appended with acks=all)? The
 * serving layer then runs it on the command thread, never on a FUSE
 * worker. */
bool mk_node_write_waits(const node_ref *ref, const char *buf, size_t size);
/* Does a mkdir or rmdir of path (a child of a directory marked waits:
 * /groups/G, /transactions/ID) wait inside a coordinator? */
bool mk_node_mkdir_waits(mkfs *fs, const char *path);
/* call: as mk_node_control's, for the directories that wait. */
mk_err mk_node_mkdir(mkfs *fs, const char *path, mk_coord_call *call,
		     mk_strbuf *why);
mk_err mk_node_rmdir(mkfs *fs, const char *path, mk_coord_call *call,
		     mk_strbuf *why);

#endif
