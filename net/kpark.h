/*
 * kpark.h — protocol requests that wait for partitions without holding a
 * thread: an acks=all Produce until the ISR has its batches, a Fetch
 * until min_bytes are there or max_wait_ms passed. fs/park.h's idea for
 * the wire.
 *
 * A request that must wait embeds an mk_kpark (first member) and parks:
 * its response is deferred (kserver.h), it goes on its handlers' parked
 * list, a timer is set for its deadline, and a watcher is armed on every
 * partition it waits for (mk_partition_watch, with the change count the
 * request saw). A watcher fires under its partition's lock and only posts
 * a look to the network thread; the look (the request's own `look`)
 * disarms and asks again: it answers (mk_kpark_finish, then frees its
 * request) or arms the watchers once more. A post may come after the
 * request was answered: a look is made only for a request still on the
 * parked list. At the deadline, and when the server stops
 * (mk_kpark_stop_all), look is called with timed_out set and must answer.
 *
 * Threads: everything here but the watchers' fire runs on the network
 * thread, which alone touches the parked list.
 */
#ifndef MK_KPARK_H
#define MK_KPARK_H

#include <stdbool.h>
#include <stdint.h>

#include "khandlers.h"
#include "replica.h"

typedef struct mk_kpark mk_kpark;

typedef struct {
	mk_partition *p;        /* NULL: not watched */
	mk_watch w;
	mk_kpark *owner;
	uint64_t seen;          /* the look's change count (on the heap: a
				 * request may list many partitions) */
} mk_kpark_slot;

struct mk_kpark {
	mk_khandlers *h;
	void (*look)(mk_kpark *k, bool timed_out);
	void (*drop)(mk_kpark *k);   /* free the request: its connection
				      * closed before the answer */
	mk_kdefer *defer;
	uint64_t timer;
	mk_kpark *next;         /* h->parked */
	mk_kpark_slot *watch;   /* nwatch slots, the request's partitions */
	size_t nwatch;
};

/* Park k (its h, look, drop and nwatch set) for the request on conn,
 * answered by timeout_ms at the latest; if the connection closes first,
 * k is unparked and dropped. */
void mk_kpark_start(mk_kpark *k, const mk_kconn_info *conn, int64_t timeout_ms);
/* Arm slot i's watcher on p, to fire at its first change after seen. */
void mk_kpark_watch(mk_kpark *k, size_t i, mk_partition *p, uint64_t seen);
/* Disarm every watcher (once this returns none fires). */
void mk_kpark_unwatch_all(mk_kpark *k);
/* Answer with resp (header and body): the watchers disarmed, the timer
 * cancelled, k off the list. The caller frees its request after. */
void mk_kpark_finish(mk_kpark *k, const mk_strbuf *resp);
/* Every parked request looked at with timed_out (each answers); the
 * server's stop hook (mk_kserver_on_stop), arg an mk_khandlers. */
void mk_kpark_stop_all(void *arg);

#endif
