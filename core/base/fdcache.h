/*
 * fdcache.h — a bounded cache of open file descriptors, shared by every
 * segment of every log (the cluster owns one; segment.c is its user).
 *
 * A user (a segment) embeds an mk_fdcache_node and brackets every use of
 * its descriptors with mk_fdcache_use / mk_fdcache_done. use pins the node,
 * calls the user's open callback (which opens whatever the use needs and
 * is not open, returning how many descriptors it opened) and then, while
 * the cache holds more than its bound, evicts the least recently used
 * unpinned nodes through their evict callback (which closes all their
 * descriptors and returns how many). A pinned node is never evicted, so
 * between use and done its descriptors stay valid; the bound may be
 * exceeded while everything is pinned. mk_fdcache_forget takes a node out
 * (before its owner closes or deletes its files).
 *
 * Locking: c->lock guards the LRU list and every node's pins, nfds and
 * opening flag. The evict callbacks run under it (they only close files).
 * The open callback runs without it, so that a file creation (slow on some
 * file systems) in one log never holds up another log's appends; the node
 * is pinned meanwhile (never evicted) and marked opening, and a second use
 * of the same node waits for that open to finish (so two users of one node
 * never open its files twice).
 */
#ifndef MK_FDCACHE_H
#define MK_FDCACHE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct mk_fdcache_node {
	/* open what this use needs; returns how many it opened (a failure
	 * is the user's to report through arg) */
	int (*open)(struct mk_fdcache_node *n, void *arg);
	/* close every descriptor; returns how many were closed */
	int (*evict)(struct mk_fdcache_node *n);
	/* The cache's, under its lock: */
	struct mk_fdcache_node *prev, *next;
	int pins;
	int nfds;
	bool linked;
	bool opening;           /* its open callback runs (without c->lock) */
} mk_fdcache_node;

typedef struct mk_fdcache mk_fdcache;

/* A cache of at most max_fds descriptors (<= 0: unbounded). */
mk_fdcache *mk_fdcache_new(int max_fds);
/* Every node must have been forgotten. NULL is fine. */
void mk_fdcache_free(mk_fdcache *c);
/* Pin n and run its open callback with arg; done unpins. */
void mk_fdcache_use(mk_fdcache *c, mk_fdcache_node *n, void *arg);
void mk_fdcache_done(mk_fdcache *c, mk_fdcache_node *n);
/* Whether n holds a descriptor or is opening one now, read under the
 * cache's lock: a caller that has not pinned n must ask this rather than
 * look at its own descriptors, which another thread's eviction may close. */
bool mk_fdcache_holds(mk_fdcache *c, mk_fdcache_node *n);
/* The node's descriptors were opened or closed outside use (count may be
 * negative); accounted without eviction. */
void mk_fdcache_adjust(mk_fdcache *c, mk_fdcache_node *n, int count);
/* Take n out: it is not evicted any more; its descriptors are the owner's
 * to close. */
void mk_fdcache_forget(mk_fdcache *c, mk_fdcache_node *n);

/* Statistics, for tests and /README figures. */
typedef struct {
	int max_fds;
	int open_fds;           /* descriptors the cache accounts for */
	size_t evictions;
} mk_fdcache_stats;
void mk_fdcache_get_stats(mk_fdcache *c, mk_fdcache_stats *out);

#endif
