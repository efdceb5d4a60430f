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
 *   poll      a group member's poll cursor (poll.h)
 *   batches   a cursor like records, over batch headers (one line each)
 *
 * Streams (records, batches) ignore the read offset: lseek succeeds (head
 * and tail seek) but reading continues the stream. At the end, a later
 * read looks again, as a growing file does. Their size, through an open
 * descriptor (fstat), is what was read so far plus what is visible now, so
 * that `tail -f` follows them; by path it is 0.
 *
 * A handle's own mutex serialises operations on one descriptor; no other
 * lock is held while a handle waits (acks=all, follow).
 */
#ifndef MK_HANDLES_H
#define MK_HANDLES_H

#include <pthread.h>
#include <stdatomic.h>

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
	bool at_end;             /* reached the visible end once */
	_Atomic unsigned long long streamed;   /* bytes handed out so far */

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

	/* poll (poll.h) */
	struct mk_poll_cursor *poll;

	/* raw */
	int fd;
} mk_handle;

/* Open a handle for a resolved node; the handle takes over ref. */
mk_err mk_handle_open(mkfs *fs, node_ref *ref, const char *path, int flags,
		      mk_handle **out, mk_strbuf *why);
void mk_handle_close(mk_handle *h);

/* Read up to size bytes; *n gets how many (0 = EOF). */
mk_err mk_handle_read(mkfs *fs, mk_handle *h, char *buf, size_t size,
		      long long off, const mk_waiter *w, size_t *n,
		      mk_strbuf *why);
/*
 * The size of a stream (records, batches) through this descriptor: bytes
 * read so far plus those visible now (fetched without waiting, once the
 * stream reached its end). Never blocks: a descriptor busy in a read
 * answers with what it handed out.
 */
long long mk_handle_stream_size(mk_handle *h);
/* Write: commands for control files, records for append files. */
mk_err mk_handle_write(mkfs *fs, mk_handle *h, const char *buf, size_t size,
		       const mk_waiter *w, mk_strbuf *why);
/* Close-time flush: an append file's unterminated last line is a record. */
mk_err mk_handle_flush(mkfs *fs, mk_handle *h, const mk_waiter *w,
		       mk_strbuf *why);
/* fsync: flush, then make the partition's logs durable. */
mk_err mk_handle_fsync(mkfs *fs, mk_handle *h, const mk_waiter *w,
		       mk_strbuf *why);

#endif
