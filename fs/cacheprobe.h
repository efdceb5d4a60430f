/*
 * cacheprobe.h — asks the kernel whether it holds a byte of a file in its
 * page cache, and waits (briefly) for the answer.
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
 * The asker blocks on a condition variable until the answer or its
 * timeout; the answer arrives on another request thread. A late answer
 * (after its asker gave up) finds no one waiting and is dropped.
 *
 * Locking: one mutex guards the table of pending probes; the kernel is
 * asked outside it. The module knows nothing of FUSE: the caller passes
 * the function that asks.
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

mk_cacheprobe *mk_cacheprobe_new(void);
/* No probe may be pending. */
void mk_cacheprobe_free(mk_cacheprobe *cp);

/* Is byte off of ino cached? 1 yes, 0 no, -1 unknown (not asked, or no
 * answer within timeout_ms). */
int mk_cacheprobe_ask(mk_cacheprobe *cp, mk_cacheprobe_fn fn, void *arg,
		      uint64_t ino, long long off, int timeout_ms);
/* The kernel's answer to the probe cookie: n bytes were cached. */
void mk_cacheprobe_answer(mk_cacheprobe *cp, void *cookie, size_t n);

#endif
