/*
 * cacheprobe.h — asks the kernel whether it holds a byte of a file in its
 * page cache; the answer comes later, to a callback. Nobody waits for it.
 *
 * FUSE's retrieve notification (fuse_lowlevel_notify_retrieve) asks the
 * kernel for the cached pages of a range; it answers later, with a
 * request of its own (retrieve_reply), holding the bytes of the pages it
 * found in a row from the start. A probe asks for one byte and reads the
 * answer's length: 1, the page is cached; 0, it is not. Used by paged
 * records (viewmemo.h): a view whose first page left the cache is read as
 * a stream, which is faster from a cold cache than readahead through the
 * page cache (docs/filesystem.md).
 *
 * A probe is started and its asker returns (the house rule: no FUSE
 * worker waits; the open that asked is answered by the probe's done
 * callback). Exactly one of these calls done, once, outside the module's
 * lock: the start itself when the kernel could not be asked (-1); the
 * kernel's answer (mk_cacheprobe_answer, on the thread that took the
 * retrieve_reply); or the expiry (mk_cacheprobe_expire, driven by a timer
 * thread: ops.c has the parking lot's completion thread call it) once the
 * probe's due time passed (-1). An answer after its expiry finds no probe
 * and is dropped; cookies are never reused, so it is not taken for
 * another probe's.
 *
 * Locking: one mutex guards the table of pending probes (a leaf: the
 * kernel is asked and done is called outside it). The module knows
 * nothing of FUSE or clocks: the caller passes the function that asks and
 * the times, in any one clock's milliseconds.
 */
#ifndef MK_CACHEPROBE_H
#define MK_CACHEPROBE_H

#include <stddef.h>
#include <stdint.h>

typedef struct mk_cacheprobe mk_cacheprobe;

/* Ask the kernel for size bytes of ino from off; the answer must come to
 * mk_cacheprobe_answer with cookie. Non-zero: not asked. */
typedef int (*mk_cacheprobe_fn)(void *arg, uint64_t ino, size_t size,
				long long off, void *cookie);
/* A probe's result: 1 cached, 0 not, -1 unknown (not asked, expired, or
 * the table freed while it was pending). */
typedef void (*mk_cacheprobe_done)(void *arg, int cached);

mk_cacheprobe *mk_cacheprobe_new(void);
/* Pending probes are answered -1 first (mk_cacheprobe_expire). */
void mk_cacheprobe_free(mk_cacheprobe *cp);

/*
 * Is byte off of ino cached? Asks with fn(fn_arg, ...) and returns; done
 * (done_arg, result) is called once, maybe before this returns (on this
 * thread or another). due_ms: when mk_cacheprobe_expire gives up on it.
 */
void mk_cacheprobe_start(mk_cacheprobe *cp, mk_cacheprobe_fn fn, void *fn_arg,
			 uint64_t ino, long long off, int64_t due_ms,
			 mk_cacheprobe_done done, void *done_arg);
/* The kernel's answer to the probe cookie: n bytes were cached. */
void mk_cacheprobe_answer(mk_cacheprobe *cp, void *cookie, size_t n);
/* Answer -1 to every probe due at now_ms or before; the earliest due
 * time still pending, or 0 when none is. */
int64_t mk_cacheprobe_expire(mk_cacheprobe *cp, int64_t now_ms);
/* Probes pending now. */
size_t mk_cacheprobe_pending(mk_cacheprobe *cp);

#endif
