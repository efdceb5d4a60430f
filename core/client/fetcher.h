/*
 * fetcher.h — the consumer side of a group member's poll: fetching the
 * member's partitions, keeping what was fetched and not yet returned, and
 * handing out what a reader may see (Kafka's client: the Fetcher and its
 * buffer of completed fetches, beside the producer of producer.h).
 *
 * The group coordinator (group.h) keeps the rules: membership, the
 * assignment, positions and their reset policy, the session. A poll asks
 * it for the member's positions (mk_group_poll_positions), fetches each
 * partition from its position with neither of the coordinator's locks
 * held, reduces every fetch to its visible records (visible.h: no
 * markers, with read_committed no aborted data, nothing at or past the
 * visible end), and tells the coordinator where it ended
 * (mk_group_poll_ended). Positions do not move here: the caller moves
 * them by what it really handed out, with mk_group_advance.
 *
 * A cache (mk_poll_cache) belongs to one poller (an open poll file) and
 * is never shared: it needs no lock. Its entries are used only while the
 * partition's leader epoch is the one they were read in, and only below
 * the visible end they were read at.
 */
#ifndef MK_FETCHER_H
#define MK_FETCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "error.h"
#include "group.h"
#include "strbuf.h"

/* One partition of a poll: where it started. */
typedef struct {
	const char *topic;
	int partition;
	int64_t from;            /* the member's position when the poll began */
} mk_poll_partition;

/* Called for each record returned, in order; the views live until the
 * callback returns. */
typedef void (*mk_poll_fn)(void *arg, const mk_poll_partition *pp,
			   const mk_record_view *rec);
/*
 * Called for each data batch with records to return, in order: it takes
 * the first records of b whose offsets lie in [from, end), at most max
 * (>= 1) of them, returns how many it took and sets *next to the offset
 * after the last one taken (untouched when none). The view lives until
 * the callback returns. A batch at a time, so that a reader formats a
 * whole batch in one call (no per-record call here).
 */
typedef size_t (*mk_poll_batch_fn)(void *arg, const mk_poll_partition *pp,
				   const mk_batch_view *b, int64_t from,
				   int64_t end, size_t max, int64_t *next);

/*
 * What a poller fetched and has not returned yet, per partition, so that
 * a poll of max.poll.records does not read a partition's frames again
 * for every poll (Kafka's consumer keeps its fetched data the same way).
 * At most MK_POLL_CACHE_MAX bytes of buffers over all its partitions.
 * NULL where a poll takes one: no cache.
 */
#define MK_POLL_CACHE_MAX (8u << 20)
typedef struct poll_cached poll_cached;
typedef struct {
	poll_cached *entries;
	size_t n;
} mk_poll_cache;
mk_poll_cache *mk_poll_cache_new(void);
void mk_poll_cache_clear(mk_poll_cache *c);
void mk_poll_cache_free(mk_poll_cache *c);

/*
 * Poll: the member's next records from its positions up to the visible
 * end (the HW; with committed, the LSO), at most max records (max <= 0 or
 * above the group's max.poll.records: max.poll.records), partitions taken
 * in turn starting after the one the last poll ended on. polls > 1 stands
 * for that many polls in a row (a stream that polls again as soon as it
 * is read): up to polls x max.poll.records in one pass. A partition that
 * cannot be fetched now (no leader) is skipped; its error is the poll's
 * only when no partition returned anything. Refreshes the session.
 * *count gets the records.
 */
mk_err mk_fetcher_poll(mk_groups *g, const char *group, const char *member,
		       int64_t max, int polls, bool committed,
		       mk_poll_cache *cache, mk_poll_fn fn, void *arg,
		       int64_t *count, mk_strbuf *why);
/* The same, handing out whole batches (fn takes their records). */
mk_err mk_fetcher_poll_batches(mk_groups *g, const char *group,
			       const char *member, int64_t max, int polls,
			       bool committed, mk_poll_cache *cache,
			       mk_poll_batch_fn fn, void *arg, int64_t *count,
			       mk_strbuf *why);

#endif
