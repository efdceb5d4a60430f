/*
 * flushpool.c — the shared pool of flusher threads (flushpool.h).
 */
#include "flushpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "xalloc.h"

struct mk_flush_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;        /* the queue grew, or stop */
	pthread_cond_t quick_work;  /* the quick queue grew, or stop */
	pthread_cond_t done;        /* a task stopped running */
	mk_flush_task *head, *tail;      /* the queue */
	mk_flush_task *qhead, *qtail;    /* quick tasks, run first */
	bool stop;
	int want;                   /* threads to run once started */
	int nthreads;               /* threads started (and to join) */
	pthread_t threads[];
};

static void enqueue(mk_flush_pool *p, mk_flush_task *t)
{
	mk_flush_task **head = t->quick ? &p->qhead : &p->head;
	mk_flush_task **tail = t->quick ? &p->qtail : &p->tail;
	t->next = NULL;
	t->queued = true;
	if (*tail)
		(*tail)->next = t;
	else
		*head = t;
	*tail = t;
	if (t->quick)
		pthread_cond_signal(&p->quick_work);
	pthread_cond_signal(&p->work);
}

static void unlink_task(mk_flush_pool *p, mk_flush_task *t)
{
	mk_flush_task **pp = t->quick ? &p->qhead : &p->head, *prev = NULL;
	mk_flush_task **tail = t->quick ? &p->qtail : &p->tail;
	while (*pp && *pp != t) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = t->next;
	if (*tail == t)
		*tail = prev;
	t->next = NULL;
	t->queued = false;
}

/* Run queued tasks, quick ones first; quick_only: no other. */
static void work(mk_flush_pool *p, bool quick_only)
{
	pthread_cond_t *cond = quick_only ? &p->quick_work : &p->work;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && !p->qhead && (quick_only || !p->head))
			pthread_cond_wait(cond, &p->lock);
		if (p->stop)
			break;
		mk_flush_task *t = p->qhead ? p->qhead : p->head;
		unlink_task(p, t);
		t->running = true;
		pthread_mutex_unlock(&p->lock);
		t->run(t);
		pthread_mutex_lock(&p->lock);
		t->running = false;
		if (t->again) {
			t->again = false;
			enqueue(p, t);
		}
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
}

/*
 * Pool threads are background work: SCHED_BATCH (same CPU share as any
 * thread, but a wake-up never preempts a running one). Waking a pool
 * thread is what a roll does twice (the old segment's flush, the next
 * segment's files); with the default policy the woken thread, placed on
 * the waker's CPU, preempted the append that woke it, which then waited
 * for an fsync's or an inode allocation's CPU time (measured: 0.1-0.3 ms
 * per roll on two cores). RocksDB lowers its background threads the same
 * way. Best effort: a policy the system refuses changes nothing else.
 */
static void background_policy(void)
{
	struct sched_param sp = { 0 };
	(void)sched_setscheduler(0, SCHED_BATCH, &sp);
}

static void *worker(void *arg)
{
	background_policy();
	work(arg, false);
	return NULL;
}

static void *quick_worker(void *arg)
{
	background_policy();
	work(arg, true);
	return NULL;
}

mk_flush_pool *mk_flush_pool_create(int nthreads)
{
	if (nthreads < 1)
		nthreads = 1;
	mk_flush_pool *p = mk_xcalloc(1, sizeof(*p) +
				      (size_t)nthreads * sizeof(pthread_t));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->quick_work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->want = nthreads;
	return p;
}

int mk_flush_pool_start(mk_flush_pool *p)
{
	pthread_mutex_lock(&p->lock);
	/* With two or more, the last runs only quick tasks: started once
	 * every other one runs, so that threads that could not start never
	 * leave the ordinary tasks without one. */
	while (p->nthreads < p->want &&
	       pthread_create(&p->threads[p->nthreads], NULL,
			      p->want > 1 && p->nthreads == p->want - 1
			      ? quick_worker : worker, p) == 0)
		p->nthreads++;
	int n = p->nthreads;
	pthread_mutex_unlock(&p->lock);
	return n;
}

mk_flush_pool *mk_flush_pool_new(int nthreads)
{
	mk_flush_pool *p = mk_flush_pool_create(nthreads);
	if (mk_flush_pool_start(p) == 0) {
		mk_flush_pool_free(p);
		return NULL;
	}
	return p;
}

void mk_flush_pool_free(mk_flush_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_cond_broadcast(&p->quick_work);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->quick_work);
	pthread_cond_destroy(&p->done);
	free(p);
}

void mk_flush_pool_submit(mk_flush_pool *p, mk_flush_task *t)
{
	pthread_mutex_lock(&p->lock);
	if (t->running)
		t->again = true;
	else if (!t->queued)
		enqueue(p, t);
	pthread_mutex_unlock(&p->lock);
}

void mk_flush_pool_remove(mk_flush_pool *p, mk_flush_task *t)
{
	pthread_mutex_lock(&p->lock);
	for (;;) {
		t->again = false;
		if (t->queued)
			unlink_task(p, t);
		if (!t->running)
			break;
		pthread_cond_wait(&p->done, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
}

int mk_flush_pool_threads(mk_flush_pool *p)
{
	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	int n = p->nthreads;
	pthread_mutex_unlock(&p->lock);
	return n;
}
