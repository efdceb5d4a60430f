/*
 * handles.h — the state of one open file, by node type.
 *
 *   value     a snapshot of the text taken at open; reads page through it
 *   control   writes run commands; a readable control file snapshots too
 *   records   a cursor: the next offset to fetch, formatted text not yet
 *             returned, the read parameters; reads stream to the visible
 *             end (or block there with :follow)
 *   append    the write parameters, the unterminated last line carried to
 *             the next write or to close, the receipts not yet read (under
 *             their own lock: a lingering batch's receipt comes from the
 *             cluster's sender), and for a topic append its accumulator
 *   raw       a read-only descriptor on a real segment or index file
 *
 * A handle's own mutex serialises operations on one descriptor; no other
 * lock is held while a handle waits (acks=all, follow).
 *
 * Parking (the seam to fs/park.c): read, write, flush and fsync take an
 * optional mk_wait. Given one, they never wait for the cluster: where they
 * would (a :follow read at the visible end, a partition append's acks=all
 * wait after the append), they fill the wait, return MK_OK and leave
 * mk_wait_pending() true. The caller parks the request, watches wait->p
 * from wait->seen (mk_partition_watch) and, at each event (and at
 * wait->deadline_ms on the cluster clock), calls mk_handle_resume: it
 * completes the request (its error, or MK_OK) or refreshes the wait. A
 * read is resumed by reading again. Without a wait (NULL) they block as
 * before, polling the waiter for interruption. A topic append still
 * waits inside its accumulator (core/accumulator.c).
 */
#ifndef MK_HANDLES_H
#define MK_HANDLES_H

#include <pthread.h>

#include "accumulator.h"
#include "codec.h"
#include "names.h"
#include "nodes.h"

typedef struct mk_handle {
	pthread_mutex_t lock;
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

	/* append */
	mk_append_params ap;
	int acks;
	bool readable;           /* opened O_RDWR: receipts are kept */
	mk_strbuf pending;       /* unterminated last line */
	bool idempotent;         /* producer=: its id and epoch at open */
	int64_t pid;
	int16_t epoch;
	int32_t next_seq;        /* with seq=: the next explicit sequence */
	struct mk_accumulator *acc;   /* topic-level append */
	pthread_mutex_t receipts_lock;   /* receipts may come from the sender */
	mk_strbuf receipts;

	/* raw */
	int fd;
} mk_handle;

typedef enum {
	MK_WAIT_NONE,            /* complete: nothing to wait for */
	MK_WAIT_DATA,            /* a :follow read at the visible end */
	MK_WAIT_ACKS,            /* appended; the ISR has yet to acknowledge */
	MK_WAIT_FSYNC_ACKS,      /* as ACKS, then fsync the partition's logs */
} mk_wait_kind;

typedef struct {
	mk_wait_kind kind;
	mk_partition *p;         /* the partition whose change may complete it */
	uint64_t seen;           /* p's change count when it last looked */
	int64_t deadline_ms;     /* cluster clock; INT64_MAX = none */
	mk_ack_ticket ticket;    /* ACKS */
	int32_t seq, count;      /* ACKS with seq=: the batch's sequences */
} mk_wait;

static inline bool mk_wait_pending(const mk_wait *w)
{
	return w && w->kind != MK_WAIT_NONE;
}

/* Open a handle for a resolved node; the handle takes over ref. */
mk_err mk_handle_open(mkfs *fs, node_ref *ref, const char *path, int flags,
		      mk_handle **out, mk_strbuf *why);
void mk_handle_close(mk_handle *h);

/* Read up to size bytes; *n gets how many (0 = EOF). */
mk_err mk_handle_read(mkfs *fs, mk_handle *h, char *buf, size_t size,
		      long long off, const mk_waiter *w, mk_wait *wait,
		      size_t *n, mk_strbuf *why);
/* Write: commands for control files, records for append files. */
mk_err mk_handle_write(mkfs *fs, mk_handle *h, const char *buf, size_t size,
		       const mk_waiter *w, mk_wait *wait, mk_strbuf *why);
/* Close-time flush: an append file's unterminated last line is a record. */
mk_err mk_handle_flush(mkfs *fs, mk_handle *h, const mk_waiter *w,
		       mk_wait *wait, mk_strbuf *why);
/* fsync: flush, then make the partition's logs durable. */
mk_err mk_handle_fsync(mkfs *fs, mk_handle *h, const mk_waiter *w,
		       mk_wait *wait, mk_strbuf *why);
/* A parked ACKS wait after an event: complete it, or refresh the wait. */
mk_err mk_handle_resume(mkfs *fs, mk_handle *h, mk_wait *wait, mk_strbuf *why);

#endif
