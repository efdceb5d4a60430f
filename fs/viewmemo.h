/*
 * viewmemo.h — what the daemon knows of a records view's whole text, and
 * what the kernel's page cache may hold of it (docs/filesystem.md, "paged
 * records").
 *
 * A records file (leader's view, no :follow, no :committed, a topic that
 * is not compacted) is a function of its partition's records: while the
 * partition does not change (its change count, mk_partition_seq, stays
 * the same) the same name gives the same bytes. A descriptor that read
 * such a view to its end without the partition changing meanwhile
 * leaves a memo: the name, the topic (a reference, so that a topic
 * deleted and made again is never taken for the old one), the partition,
 * its change count, the view's first offset, the offset after its last
 * record and the text's length. While the partition's change count is
 * still the memo's, a new descriptor is paged: it reads by offset,
 * through the page cache.
 *
 * The page cache and the size the kernel knows (the invariant this file
 * keeps). The kernel caches whole pages: the page holding a view's last
 * byte is cached with zeros after it, and a size it is told that is
 * smaller than before zeroes the rest of that page too. When it then
 * learns a larger size it sets the size first and drops the pages only
 * after, waiting for reads in flight: meanwhile a reader copies the zeros
 * as text. So, per name, from the first paged open of a memo (its pages
 * state) until no paged descriptor is open and the memo no longer
 * stands:
 *   - every size the daemon reports for the name (stat by name, fstat of
 *     any descriptor) is `told`, which never decreases;
 *   - a paged read serves bytes below `limit` only (limit >= told);
 *   - told grows only by a step (mk_viewmemo_step_begin/end): limit is
 *     raised first, then the kernel drops the pages from the one holding
 *     the old end on (inval: it waits for reads in flight), then the
 *     kernel is told the new size by storing the text's last byte at its
 *     place (store: a page present then was read with the new limit, so
 *     it holds the new text), and only then told is raised;
 *   - the first paged open of an identity (a new memo, or the name's
 *     pages state forgotten) drops every page the name had (inval from
 *     0) before any other descriptor may read it paged (meanwhile they
 *     are streams); later paged opens of the same identity keep the
 *     cache (FOPEN_KEEP_CACHE).
 * Every paged descriptor open on a name has the same identity (a
 * descriptor whose identity differs is a stream, not paged).
 *
 * Locking: one mutex guards the table and each entry's identity, counts
 * and kernel inode; a step holds its entry's step mutex (taken with
 * trylock: a step under way makes another caller report told as it is)
 * and no other lock while it calls the kernel; limit and told are
 * atomics. Calls into core only put topic references (mk_topic_put takes
 * no lock the callers hold). An entry with paged descriptors open is
 * never forgotten, so their handles may keep its address.
 *
 * Why a step cannot deadlock (it runs on a FUSE worker, in a getattr or
 * a lookup, and its kernel calls wait for reads in flight on the inode:
 * notify_inval_inode locks each page it drops, notify_store each page it
 * writes, and a page being read stays locked until a worker answers its
 * FUSE_READ; libfuse's header promises no-blocking only without dirty
 * pages for inval, and nothing for store):
 *   - the locks: while it calls the kernel the stepping thread holds its
 *     entry's step mutex only. A paged read takes its handle's lock and
 *     the partition's (to format), reads limit (atomic) and never the step
 *     mutex, vm->lock or a handle lock the step holds (a step takes no
 *     handle lock: mk_records_paged_size counts from the partition). The
 *     other callers of the step mutex use trylock. The kernel side: a
 *     getattr or lookup holds no page lock and no inode lock of the file
 *     (a read that needs the size sends its getattr before it locks
 *     pages), so the reads waited for never wait for the step's request;
 *   - the threads: a read waited for needs a free worker, and workers
 *     never wait for anything else (the house rule: waits are parked;
 *     the cache probe is answered later, cacheprobe.h). At most
 *     max_stepping steps (mk_viewmemo_new; ops.c: half of libfuse's
 *     worker threads, none with a single thread, which has no paged
 *     records) call the kernel at once; a stat that finds them all taken
 *     reports told, as when its own name's step is under way. So at least
 *     one worker always takes the reads;
 *   - the first paged open's inval (mk_viewmemo_opened) waits for
 *     nothing: no paged descriptor is open on the name, and a paged
 *     descriptor's async readahead holds its file open, so no page of the
 *     inode is being read;
 *   - the session gone: the connection aborted (or unmounted) fails the
 *     reads in flight, which unlocks their pages, and the notifications
 *     then fail (ENOTCONN/ENOENT, ignored: told is raised anyway, and no
 *     page of the name is cached any more). A normal unmount cannot
 *     happen with descriptors open. A stop by signal: libfuse's loop,
 *     once told to exit, takes no more requests and waits for its busy
 *     workers, so a step waiting for a read would never end; the
 *     daemon's signal handler (mount/main.c, mk_fs_stop) calls
 *     mk_viewmemo_stop instead and ends the loop only once no step is
 *     under way (the last one to end does), new steps being refused
 *     meanwhile.
 */
#ifndef MK_VIEWMEMO_H
#define MK_VIEWMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"

typedef struct mk_viewmemo mk_viewmemo;
/* One name's memo and pages state. */
typedef struct mk_view_pages mk_view_pages;

/* What identifies a view's text. */
typedef struct {
	mk_topic *topic;         /* not a reference: compared only */
	int partition;
	uint64_t seq;            /* the partition's change count */
	int64_t start;           /* the view's first offset */
} mk_view_id;

/* What the daemon asks of the kernel (ops.c: FUSE notifications); arg
 * and ino are those mk_viewmemo_opened was given. Both may block until
 * reads in flight on those pages are answered: never call them holding
 * a lock a read needs. */
typedef struct {
	/* Drop ino's cached pages from the one holding byte off on. */
	void (*inval)(void *arg, uint64_t ino, long long off);
	/* Store n bytes at off; the kernel's size becomes off + n if larger. */
	void (*store)(void *arg, uint64_t ino, long long off, const char *data,
		      size_t n);
} mk_view_kernel;

/* k (copied; NULL: no kernel, for tests) is called by opens and steps;
 * at most max_stepping steps run at once (above). */
mk_viewmemo *mk_viewmemo_new(const mk_view_kernel *k, int max_stepping);
/*
 * A stop (ops.c: SIGTERM, SIGINT, SIGHUP): no step begins from now on.
 * True when none is under way (the request loop may end now); false: the
 * last one under way calls drained(arg) (once) as it ends, and until then
 * the loop must go on serving (that step waits for reads).
 * Async-signal-safe (atomics only). Set drained before any step.
 */
bool mk_viewmemo_stop(mk_viewmemo *vm);
void mk_viewmemo_on_drained(mk_viewmemo *vm, void (*drained)(void *arg),
			    void *arg);
/* Puts every topic reference; call before the cluster is closed. */
void mk_viewmemo_free(mk_viewmemo *vm);

/* A stream read path's view [id.start, end) to its end: size bytes.
 * ref is a reference to id->topic, which the memo takes over. */
void mk_viewmemo_learn(mk_viewmemo *vm, const char *path, const mk_view_id *id,
		       int64_t end, long long size, mk_topic *ref);
/*
 * The size to report for path, by name or through any descriptor: told
 * while its pages state lives (above), else the memo's length when the
 * memo stands for (topic, partition, seq) (start is not compared: a stat
 * does not resolve positions); false: report what the caller would.
 */
bool mk_viewmemo_size(mk_viewmemo *vm, const char *path, mk_topic *topic,
		      int partition, uint64_t seq, long long *size);
/*
 * A descriptor opens path with identity id: non-NULL when it is paged;
 * *end is the offset its text (told bytes at open) ends at; *fresh: the
 * first paged open of this identity, which must call mk_viewmemo_opened
 * before the open is answered (others are streams until then). A paged
 * open is counted until mk_viewmemo_close.
 */
mk_view_pages *mk_viewmemo_open(mk_viewmemo *vm, const char *path,
				const mk_view_id *id, int32_t epoch, int64_t *end,
				bool *fresh);
/* The leader epoch the first paged open of this identity saw; whether
 * the pages state is (topic, partition)'s. */
int32_t mk_viewmemo_epoch(mk_view_pages *pg);
bool mk_viewmemo_is(mk_view_pages *pg, mk_topic *topic, int partition);
/* A stat by name: path's pages state while it lives (pinned: it stays
 * path's until mk_viewmemo_unpin), else NULL. */
mk_view_pages *mk_viewmemo_pin(mk_viewmemo *vm, const char *path);
void mk_viewmemo_unpin(mk_viewmemo *vm, mk_view_pages *pg);
/* The paged open is on inode ino (arg: for the kernel calls); a fresh one
 * drops every page the inode had cached. */
void mk_viewmemo_opened(mk_viewmemo *vm, mk_view_pages *pg, uint64_t ino,
			void *arg, bool fresh);
/* fresh: mk_viewmemo_opened was not called (the open failed). */
void mk_viewmemo_close(mk_viewmemo *vm, mk_view_pages *pg, bool fresh);

/* A paged open found the view's first page not cached: true, read it as
 * a stream (mk_viewmemo_close it); every other such open in a row is
 * paged instead, so that a view read again and again fills the cache
 * again. mk_viewmemo_warm: the page was cached (the count starts over). */
bool mk_viewmemo_cold(mk_viewmemo *vm, mk_view_pages *pg);
void mk_viewmemo_warm(mk_viewmemo *vm, mk_view_pages *pg);

/* Paged reads serve bytes below this. */
long long mk_viewmemo_limit(mk_view_pages *pg);
/* The size the kernel was told. */
long long mk_viewmemo_told(mk_view_pages *pg);
/*
 * A step, for a partition whose change count is now seq: false when one
 * is under way on pg, max_stepping are under way, or this seq was
 * stepped to already (report told). True:
 * *end and *size are the text's end offset and length so far; count the
 * text of [*end, visible end) and call mk_viewmemo_step_end.
 */
bool mk_viewmemo_step_begin(mk_viewmemo *vm, mk_view_pages *pg, uint64_t seq,
			    int64_t *end, long long *size);
/* The text now ends at offset end, size bytes, its last byte last (when
 * size grew); ok false: the count failed, look again at the next call. */
void mk_viewmemo_step_end(mk_viewmemo *vm, mk_view_pages *pg, uint64_t seq,
			  bool ok, int64_t end, long long size, char last);

#endif
