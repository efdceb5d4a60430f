/*
 * handle.h — one open file (handles.h): the state every node kind's
 * descriptor shares, and the wait of a request that parks (park.h).
 * Below handles.h and every kind's own file (poll.h...), which include
 * it; it includes none of them.
 *
 * Locks: h->lock, the handle's own mutex, guards every field but
 * `streamed` (atomic: an fstat reads it without the lock).
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
	char *path;
	mk_strbuf text;          /* value snapshot, formatted records, receipts */
	size_t text_pos;

	/* records */
	mk_read_params rp;
	int64_t next;
	int64_t returned;
	bool eof;
	uint64_t seen;
	mk_strbuf fetched;
	mk_aborted_list aborted;  /* :committed: what `fetched` hides */
	bool at_end;             /* reached the visible end once */
	_Atomic unsigned long long streamed;   /* bytes handed out so far */
	/* records: the view's identity at open (viewmemo.h) */
	bool memo_ok;            /* the view may be memoised or paged */
	uint64_t open_seq;       /* the partition's change count at open */
	int64_t start;           /* the view's first offset */
	int32_t open_epoch;      /* the leader epoch at open */
	/* records, paged: read by offset through the page cache */
	bool paged;
	bool keep_cache;         /* for the open's reply */
	struct mk_view_pages *pages;   /* the name's pages state (viewmemo.h):
					* its limit bounds reads, its told is
					* the size; a step grows both */
	bool pages_fresh;        /* the first paged open of its identity,
				  * until mk_viewmemo_opened (ops.c) */
	long long tbase;         /* the stream offset of text[0] */
	struct mk_page_mark *marks;   /* restart points, by stream offset */
	size_t nmarks, marks_alloc;

	/* append */
	mk_append_params ap;
	bool readable;           /* opened O_RDWR: receipts are kept */
	mk_strbuf pending;       /* unterminated last line */
	mk_strbuf first;         /* the carried line completed by a write */
	mk_parsed parsed;        /* the records of the write being appended */
	mk_producer *prod;
	bool line_refused;       /* the carried line was refused: every
				  * later write is too (below) */
	mk_err held;             /* a parked write's error, told at its end */
	mk_strbuf held_why;

	/* poll (poll.h) */
	struct mk_poll_cursor *poll;

	/* raw */
	int fd;
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

/* A read's reply (mk_handle_read_reply): the bytes, valid during the
 * call only. */
typedef void (*mk_read_reply_fn)(void *arg, const char *data, size_t n);

#endif
