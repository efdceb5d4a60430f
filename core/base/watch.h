/*
 * watch.h — one-shot watchers on a list: how every waiter of the daemon
 * hears of the event it waits for (a partition's change, replica.h; a
 * coordinator's, coordinator.h). The owner of the list keeps a change
 * count and fires every armed watcher once at each change; a waiter arms
 * its watcher with the count it last saw, so a change between its look
 * and its arming is never missed (mk_watch_arm fires at once then).
 *
 * Locking: the list and the watchers on it are guarded by the owner's
 * lock; fn runs under it, in whichever thread made the change, and may
 * only record the event (take a leaf lock of its own, signal a
 * condition), never call back into the owner.
 */
#ifndef MK_WATCH_H
#define MK_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mk_ack_ticket;

typedef struct mk_watch {
	void (*fn)(struct mk_watch *w);
	struct mk_watch *prev, *next;   /* guarded by the owner's lock */
	bool armed;
	/* A partition's watcher of an acks=all ticket (replica.h): NULL,
	 * every change fires it. */
	const struct mk_ack_ticket *ack;
} mk_watch;

static inline void mk_watch_list_init(mk_watch *head)
{
	head->prev = head->next = head;
}

/* Disarm w if it is armed (then it will not fire). */
static inline void mk_watch_disarm(mk_watch *w)
{
	if (!w->armed)
		return;
	w->prev->next = w->next;
	w->next->prev = w->prev;
	w->prev = w->next = NULL;
	w->armed = false;
}

/* Fire w, which is armed: disarmed before its fn runs. */
static inline void mk_watch_fire(mk_watch *w)
{
	mk_watch_disarm(w);
	w->fn(w);
}

static inline void mk_watch_fire_all(mk_watch *head)
{
	while (head->next != head)
		mk_watch_fire(head->next);
}

/* Arm w on head to fire at the first change after `seen`; at once (here)
 * when the owner's count seq moved past it already. */
static inline void mk_watch_arm(mk_watch *head, mk_watch *w, uint64_t seq,
				uint64_t seen)
{
	if (seq != seen) {
		mk_watch_disarm(w);
		w->fn(w);
	} else if (!w->armed) {
		w->armed = true;
		w->prev = head->prev;
		w->next = head;
		head->prev->next = w;
		head->prev = w;
	}
}

#endif
