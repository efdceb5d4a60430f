/*
 * handles.h — the state of one open file, by node type. The common part
 * and each kind's operations are handle.h; the kinds' code is handles.c
 * (value, control, raw), handle_records.c (records, batches),
 * handle_append.c (append) and poll.c (poll).
 *
 *   value     a snapshot of the text taken at open; reads page through it
 *   control   writes run commands; a readable control file snapshots too
 *   records   a cursor: the next offset to fetch, formatted text not yet
 *             returned, the read parameters; reads stream to the visible
 *             end (and park there with :follow)
 *   append    the write parameters, the unterminated last line carried to
 *             the next write, and the descriptor's producer (producer.h),
 *             which holds every rule of appending, its batches and its
 *             receipts. This file only carries lines: it parses each write
 *             (format.h) into records that point into the written bytes and
 *             hands them to the producer.
 *
 * The unit of an append is the open file description. A close of one copy
 * of the descriptor (FUSE flush: every `cmd >&3` in a shell) sends nothing;
 * the carried line and lingering batches are sent at the last close
 * (release), at fsync, or when linger.ms passes.
 *
 * Lines over message.max.bytes. The kernel splits a write(2) into pieces
 * of at most fs->max_write (the first one max_write less the buffer's
 * offset in its page) and sends them one after another; a piece refused
 * after others were taken makes write(2) return their count, and nothing
 * tells a piece the write's size. So a write that leaves a carried line
 * is refused when that line can never be sent (longer than the limit;
 * plain: its one-record batch over it) and, when the write is a full
 * piece (more than max_write less a page), when that batch comes within
 * a page of the limit: with the defaults (1 MiB pieces, 1048588) every
 * over-long line is refused by its write's first piece, write(2) -1. A
 * refusal of the carried line itself (its start taken before: an earlier
 * write, or an earlier piece, a short count) drops it, never sent, and
 * sets line_refused: every later write is refused, as the rest of that
 * line cannot be told from new data; the last close sends what was taken
 * before it.
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
 * A handle's own mutex serialises operations on one descriptor; nothing
 * here waits for the cluster (Parking, below). A read's reply is
 * written under it (mk_handle_read_reply), so the close takes it once
 * before freeing: the kernel may deliver the release before the reply's
 * write returned.
 *
 * Parking (the seam to fs/park.c): read, write, fsync and the last close
 * take an mk_wait, and never wait for the cluster: where they would (a
 * :follow read or poll at the visible end; the acks=all acknowledgements
 * of what a write, fsync or last close sent, which the producer keeps:
 * mk_producer_check), they fill the wait, return MK_OK and leave
 * mk_wait_pending() true. The caller parks the
 * request, watches wait->p from wait->seen (mk_partition_watch), looks
 * again after wait->recheck_ms of wall time and at wait->deadline_ms on
 * the cluster clock, and at each such event calls mk_handle_resume (a
 * read is resumed by reading again): it completes the request (its
 * error, or MK_OK) or refreshes the wait. The close of one copy (flush)
 * sends nothing, so it has nothing to wait for; a last close without
 * close_begin (mk_handle_close alone: at a stop, mk_fs_release_all) takes
 * one last look at what is owed (mk_producer_close) and waits for none.
 */
#ifndef MK_HANDLES_H
#define MK_HANDLES_H

#include "handle.h"

struct mk_view_pages;

/*
 * Paged records (viewmemo.h): a records descriptor opened while its
 * view's length is known reads by offset like a regular file (the page
 * cache serves it; its paging's keep_cache says whether the cached pages
 * stand), bytes below its name's limit only; its size is the name's told size,
 * which an fstat grows (a step: viewmemo.h) once the partition changed.
 * The opener (ops.c) calls mk_viewmemo_opened with the inode before
 * answering the open. Any other records descriptor is a stream (above);
 * one that reads its view to the end while the partition does not change
 * leaves the memo.
 */

/*
 * The size of a paged records name (its pages state pg, viewmemo.h),
 * through any descriptor or by name (ref: the name's node): told, after a
 * step when the partition (ref's) changed since the last one. Takes no
 * handle lock; a step waits for the kernel to drop pages (reads in
 * flight), so call it holding no lock.
 */
long long mk_records_paged_size(mkfs *fs, struct mk_view_pages *pg,
				const node_ref *ref, mk_format format);

/* A paged records descriptor's paging, for the open's reply (ops.c):
 * the name's pages state; fresh: the first paged open of its identity,
 * until the opener's mk_viewmemo_opened clears it; keep_cache: the
 * reply keeps the inode's cached pages. */
typedef struct {
	struct mk_view_pages *pages;
	bool fresh;
	bool keep_cache;
} mk_handle_paging;
/* NULL: not a paged records descriptor. */
mk_handle_paging *mk_handle_paged(mk_handle *h);

/* A paged records descriptor, not yet in use, becomes a stream (its
 * view's first page is not cached: docs/filesystem.md). */
void mk_handle_unpage(mk_handle *h);

/* Open a handle for a resolved node; the handle takes over ref. */
mk_err mk_handle_open(mkfs *fs, node_ref *ref, const char *path, int flags,
		      mk_handle **out, mk_strbuf *why);
/* The last close (FUSE release): an append file's carried line and
 * lingering batches are sent and what is owed looked at once (waited for
 * by mk_handle_close_begin before, if at all), errors go to /errors; then
 * free. */
void mk_handle_close(mk_handle *h);
/*
 * The last close without waiting: sends what an append file holds; when
 * acknowledgements are still owed, fills wait (MK_WAIT_CLOSE_ACKS) and
 * returns false — resume until it completes, then mk_handle_close (which
 * then has nothing left to wait for). True: close now.
 */
bool mk_handle_close_begin(mk_handle *h, mk_wait *wait);

/* Read up to size bytes; *n gets how many (0 = EOF). */
mk_err mk_handle_read(mkfs *fs, mk_handle *h, char *buf, size_t size,
		      long long off, mk_wait *wait, size_t *n, mk_strbuf *why);
/*
 * The same without the copy: when the read completes (MK_OK, no wait
 * left pending) reply is called exactly once, under the handle's lock,
 * with the bytes (n = 0: EOF), which stay valid only during the call: a
 * FUSE read answers with fuse_reply_buf straight from the handle's
 * formatted text. On an error or a pending wait it is not called.
 */
mk_err mk_handle_read_reply(mkfs *fs, mk_handle *h, size_t size,
			    long long off, mk_wait *wait,
			    mk_read_reply_fn reply, void *arg, mk_strbuf *why);
/*
 * The size of a stream (records, batches) through this descriptor: bytes
 * read so far plus those visible now (fetched without waiting, once the
 * stream reached its end). Never waits for a read: a descriptor busy in
 * one answers with what it handed out. A paged descriptor's is
 * mk_records_paged_size (a step may wait for the kernel).
 */
long long mk_handle_stream_size(mk_handle *h);
/* Write: commands for control files, records for append files. */
mk_err mk_handle_write(mkfs *fs, mk_handle *h, const char *buf, size_t size,
		       mk_wait *wait, mk_strbuf *why);
/* Does a write of buf wait for a coordinator (a control write that does,
 * mk_node_write_waits)? The serving layer runs it on the command thread.
 * (A transactional append does not: its producer holds a batch whose
 * partition's registration is owed, and the write parks on it.) */
bool mk_handle_write_waits(const mk_handle *h, const char *buf, size_t size);
/* The close of one copy (FUSE flush): sends nothing and waits for
 * nothing; reports the error of a batch sent in the background since, if
 * any. */
mk_err mk_handle_flush(mkfs *fs, mk_handle *h, mk_strbuf *why);
/* fsync: the carried line and every batch sent and acknowledged, then the
 * partitions' logs made durable. */
mk_err mk_handle_fsync(mkfs *fs, mk_handle *h, mk_wait *wait,
		       mk_strbuf *why);
/* A parked ACKS wait after an event: complete it, or refresh the wait. */
mk_err mk_handle_resume(mkfs *fs, mk_handle *h, mk_wait *wait, mk_strbuf *why);

#endif
