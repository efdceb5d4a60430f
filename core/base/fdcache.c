/*
 * fdcache.c — the bounded, least-recently-used descriptor cache
 * (fdcache.h). The list runs from the least recently used (head) to the
 * most (tail); a node is linked while it holds descriptors or is pinned.
 */
#include "fdcache.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "xalloc.h"

struct mk_fdcache {
	pthread_mutex_t lock;
	pthread_cond_t opened;      /* a node's open callback returned */
	mk_fdcache_node *head, *tail;
	int max_fds;
	int open_fds;
	size_t evictions;
};

static void unlink_node(mk_fdcache *c, mk_fdcache_node *n)
{
	if (!n->linked)
		return;
	if (n->prev)
		n->prev->next = n->next;
	else
		c->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		c->tail = n->prev;
	n->prev = n->next = NULL;
	n->linked = false;
}

static void push_tail(mk_fdcache *c, mk_fdcache_node *n)
{
	n->prev = c->tail;
	n->next = NULL;
	if (c->tail)
		c->tail->next = n;
	else
		c->head = n;
	c->tail = n;
	n->linked = true;
}

mk_fdcache *mk_fdcache_new(int max_fds)
{
	mk_fdcache *c = mk_xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->opened, NULL);
	c->max_fds = max_fds > 0 ? max_fds : INT_MAX;
	return c;
}

void mk_fdcache_free(mk_fdcache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->opened);
	free(c);
}

/* Evict least recently used unpinned nodes until within the bound. */
static void shrink(mk_fdcache *c)
{
	mk_fdcache_node *n = c->head;
	while (c->open_fds > c->max_fds && n) {
		mk_fdcache_node *next = n->next;
		if (n->pins == 0 && n->nfds > 0) {
			int closed = n->evict(n);
			c->open_fds -= closed;
			n->nfds -= closed;
			c->evictions++;
			if (n->nfds <= 0) {
				n->nfds = 0;
				unlink_node(c, n);
			}
		}
		n = next;
	}
}

void mk_fdcache_use(mk_fdcache *c, mk_fdcache_node *n, void *arg)
{
	pthread_mutex_lock(&c->lock);
	n->pins++;
	unlink_node(c, n);
	push_tail(c, n);
	while (n->opening)
		pthread_cond_wait(&c->opened, &c->lock);
	n->opening = true;
	pthread_mutex_unlock(&c->lock);
	int opened = n->open(n, arg);   /* pinned: nobody evicts it */
	pthread_mutex_lock(&c->lock);
	n->opening = false;
	pthread_cond_broadcast(&c->opened);
	if (opened > 0) {
		n->nfds += opened;
		c->open_fds += opened;
	}
	shrink(c);
	pthread_mutex_unlock(&c->lock);
}

void mk_fdcache_done(mk_fdcache *c, mk_fdcache_node *n)
{
	pthread_mutex_lock(&c->lock);
	n->pins--;
	if (n->pins == 0 && n->nfds == 0)
		unlink_node(c, n);
	shrink(c);
	pthread_mutex_unlock(&c->lock);
}

bool mk_fdcache_holds(mk_fdcache *c, mk_fdcache_node *n)
{
	pthread_mutex_lock(&c->lock);
	bool holds = n->nfds > 0 || n->opening;
	pthread_mutex_unlock(&c->lock);
	return holds;
}

void mk_fdcache_adjust(mk_fdcache *c, mk_fdcache_node *n, int count)
{
	pthread_mutex_lock(&c->lock);
	n->nfds += count;
	c->open_fds += count;
	if (n->nfds < 0) {
		c->open_fds -= n->nfds;
		n->nfds = 0;
	}
	if (n->nfds > 0 && !n->linked)
		push_tail(c, n);
	else if (n->nfds == 0 && n->pins == 0)
		unlink_node(c, n);
	pthread_mutex_unlock(&c->lock);
}

void mk_fdcache_forget(mk_fdcache *c, mk_fdcache_node *n)
{
	pthread_mutex_lock(&c->lock);
	unlink_node(c, n);
	c->open_fds -= n->nfds;
	n->nfds = 0;
	n->pins = 0;
	pthread_mutex_unlock(&c->lock);
}

void mk_fdcache_get_stats(mk_fdcache *c, mk_fdcache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	out->max_fds = c->max_fds == INT_MAX ? 0 : c->max_fds;
	out->open_fds = c->open_fds;
	out->evictions = c->evictions;
	pthread_mutex_unlock(&c->lock);
}
