/*
 * kpark.c — deferred protocol requests waiting on partitions (kpark.h).
 */
#include "kpark.h"

#include <stddef.h>
#include <stdlib.h>

#include "xalloc.h"

static bool parked(mk_khandlers *h, const mk_kpark *k)
{
	for (const mk_kpark *x = h->parked; x; x = x->next)
		if (x == k)
			return true;
	return false;
}

/* A posted look (network thread). The request may have been answered
 * since (another partition's post, its deadline): only one still parked
 * is looked at; k is compared, not read, until found. (An address reused
 * by a newer parked request gets a look: harmless, a look only asks.) */
typedef struct {
	mk_khandlers *h;
	mk_kpark *k;
} look_arg;

static void checked_look(void *arg, bool dropped)
{
	look_arg *a = arg;
	if (!dropped && parked(a->h, a->k))
		a->k->look(a->k, false);
	free(a);
}

/* A watched partition changed (under its lock): post a look. */
static void on_change(mk_watch *w)
{
	mk_kpark_slot *kw = (mk_kpark_slot *)((char *)w - offsetof(mk_kpark_slot, w));
	look_arg *a = mk_xcalloc(1, sizeof(*a));
	a->h = kw->owner->h;
	a->k = kw->owner;
	mk_kserver_post(a->h->server, checked_look, a);
}

static void on_deadline(void *arg)
{
	mk_kpark *k = arg;
	k->timer = 0;
	k->look(k, true);
}

static void unpark(mk_kpark *k)
{
	mk_kpark_unwatch_all(k);
	if (k->timer)
		mk_kserver_cancel(k->h->server, k->timer);
	k->timer = 0;
	for (mk_kpark **pp = &k->h->parked; *pp; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	free(k->watch);
	k->watch = NULL;
}

/* The connection closed with the answer owed (network thread). */
static void on_close(void *arg)
{
	mk_kpark *k = arg;
	unpark(k);
	k->defer = NULL;
	k->drop(k);
}

void mk_kpark_start(mk_kpark *k, const mk_kconn_info *conn, int64_t timeout_ms)
{
	k->defer = mk_kserver_defer(conn, on_close, k);
	k->watch = mk_xcalloc(k->nwatch ? k->nwatch : 1, sizeof(*k->watch));
	for (size_t i = 0; i < k->nwatch; i++)
		k->watch[i].owner = k;
	k->next = k->h->parked;
	k->h->parked = k;
	k->timer = mk_kserver_after(k->h->server, timeout_ms, on_deadline, k);
}

void mk_kpark_watch(mk_kpark *k, size_t i, mk_partition *p, uint64_t seen)
{
	mk_kpark_slot *kw = &k->watch[i];
	if (kw->p)
		mk_partition_unwatch(kw->p, &kw->w);
	kw->p = p;
	kw->w.fn = on_change;
	mk_partition_watch(p, &kw->w, seen);
}

void mk_kpark_unwatch_all(mk_kpark *k)
{
	for (size_t i = 0; i < k->nwatch; i++)
		if (k->watch[i].p) {
			mk_partition_unwatch(k->watch[i].p, &k->watch[i].w);
			k->watch[i].p = NULL;
		}
}

void mk_kpark_finish(mk_kpark *k, const mk_strbuf *resp)
{
	unpark(k);
	mk_kserver_answer(k->defer, resp->buf, resp->len);
	k->defer = NULL;
}

void mk_kpark_stop_all(void *arg)
{
	mk_khandlers *h = arg;
	while (h->parked)
		h->parked->look(h->parked, true);
}
