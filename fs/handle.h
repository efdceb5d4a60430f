/*
 * handle.h — one open file (handles.h): the state every node kind's
 * descriptor shares, and the wait of a request that parks (park.h).
 * Below handles.h and every kind's own file (poll.h...), which include
 * it; it includes none of them.
 *
 * Each kind's own state (records and batches: a cursor; append: the
 * producer and the carried line; raw: a descriptor; poll: poll.h) is its
 * own struct, h->kind, made by its open and freed by its release; its
 * operations are a mk_handle_ops, named by the kind's row of the node
 * table.
 *
 * Locks: h->lock, the handle's own mutex, guards every field but
 * `streamed` (atomic: an fstat reads it without the lock) and what the
 * kind says of its own.
 */
#ifndef MK_HANDLE_H
#define MK_HANDLE_H

#include <pthread.h>
#include <stdatomic.h>

#include "codec.h"
#include "format.h"
#include "names.h"
#include "nodes.h"
#include "producer.h"

typedef struct mk_handle {
	pthread_mutex_t lock;
	mkfs *fs;
	node_ref ref;
	const struct mk_handle_ops *ops;   /* its kind's (below) */
	char *path;
	mk_strbuf text;          /* value snapshot, formatted records, receipts */
	size_t text_pos;
	_Atomic unsigned long long streamed;   /* bytes handed out so far */
	void *kind;              /* the kind's own state, made by its open */
} mk_handle;

typedef enum {
	MK_WAIT_NONE,            /* complete: nothing to wait for */
	MK_WAIT_DATA,            /* a :follow read (or poll) at the visible end */
	MK_WAIT_ACKS,            /* a write: sent; the ISR has yet to acknowledge */
	MK_WAIT_FSYNC_ACKS,      /* as ACKS, then fsync the partitions' logs */
	MK_WAIT_CLOSE_ACKS,      /* the last close: as ACKS, then free */
} mk_wait_kind;

typedef struct {
	mk_wait_kind kind;
	mk_partition *p;         /* whose change may complete it; NULL: none */
	mk_coord *coord;         /* or a coordinator's (a job's call); then
				  * seen is the coordinator's event count */
	uint64_t seen;           /* p's change count when it last looked */
	int64_t deadline_ms;     /* cluster clock; INT64_MAX = none */
	int recheck_ms;          /* wall time: look again then; 0 = only events */
	bool has_ticket;         /* the acks kinds: the ticket p owes first */
	mk_ack_ticket ticket;    /* (mk_watch.ack: not woken for nothing) */
} mk_wait;

static inline bool mk_wait_pending(const mk_wait *w)
{
	return w && w->kind != MK_WAIT_NONE;
}

/* The partition a handle reads or writes (ref's). */
static inline mk_partition *mk_handle_partition(const mk_handle *h)
{
	return mk_topic_partition(h->ref.topic, h->ref.partition);
}

/* A read's reply (mk_handle_read_reply): the bytes, valid during the
 * call only. */
typedef void (*mk_read_reply_fn)(void *arg, const char *data, size_t n);

/* A read (mk_handle_read_reply), as a kind's read operation sees it. */
typedef struct {
	size_t size;
	long long off;
	mk_wait *wait;           /* where a :follow read at the end parks */
	mk_read_reply_fn reply;
	void *arg;
	bool answered;           /* the kind answered it (read by offset) */
} mk_read_req;

/*
 * A node kind's descriptor operations: a row of the node table (nodes.h)
 * names its kind's (node_def.hops; none: a snapshot, value or control).
 * handles.c runs what every kind shares (the lock, the stream hand-out of
 * h->text) and calls these; an absent one is a no-op (write: refused at
 * open by the mode). Those marked "under h->lock" are called holding it;
 * the others take it themselves.
 */
typedef struct mk_handle_ops {
	/* Make h->kind from h->ref; an error refuses the open (release
	 * still runs). flags: open(2)'s. */
	mk_err (*open)(mkfs *fs, mk_handle *h, int flags, mk_strbuf *why);
	/* Under h->lock. A file read by offset answers itself: rq->reply
	 * is called (or an error returned) and rq->answered set. A stream
	 * fills h->text (or rq->wait) for the common hand-out; an error
	 * with text buffered is dropped, that text handed out first. */
	mk_err (*read)(mkfs *fs, mk_handle *h, mk_read_req *rq, mk_strbuf *why);
	/* Under h->lock: n more bytes of h->text were handed out. */
	void (*consumed)(mkfs *fs, mk_handle *h, size_t n);
	/* Under h->lock. */
	mk_err (*write)(mkfs *fs, mk_handle *h, const char *buf, size_t size,
			mk_wait *wait, mk_strbuf *why);
	/* Does this write wait inside a coordinator (ops.c: the command
	 * thread)? */
	bool (*write_waits)(const mk_handle *h, const char *buf, size_t size);
	/* Under h->lock: the close of one copy. */
	mk_err (*flush)(mkfs *fs, mk_handle *h, mk_strbuf *why);
	mk_err (*fsync)(mkfs *fs, mk_handle *h, mk_wait *wait, mk_strbuf *why);
	mk_err (*resume)(mkfs *fs, mk_handle *h, mk_wait *wait, mk_strbuf *why);
	bool (*close_begin)(mk_handle *h, mk_wait *wait);
	/* The last close, after the reply let go of the lock: what the kind
	 * still holds is settled, then h->kind freed (it may be NULL). */
	void (*release)(mk_handle *h);
	/* The size through this descriptor (mk_handle_stream_size): size
	 * answers without the handle lock (true: *size set); else, under
	 * it, peek looks at what is visible now without waiting, then the
	 * size is what was handed out plus what is buffered. */
	bool (*size)(mk_handle *h, long long *size);
	void (*peek)(mk_handle *h);
	bool cached;             /* read through the page cache (raw) */
	bool nonseekable;        /* consumed as written or read: no lseek */
} mk_handle_ops;

#endif
