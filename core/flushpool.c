/*
 * flushpool.c — the shared pool of flusher threads (flushpool.h).
 */
#include "flushpool.h"

#include <pthread.h>
#include <stdlib.h>

#include "xalloc.h"

struct mk_flush_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;        /* the queue grew, or stop */
	pthread_cond_t done;        /* a task stopped running */
	mk_flush_task *head, *tail;
	bool stop;
	bool started;               /* the threads were started (lazily) */
	int want, nthreads;
	pthread_t threads[];
};

static void enqueue(mk_flush_pool *p, mk_flush_task *t)
{
	t->next = NULL;
	t->queued = true;
	if (p->tail)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	pthread_cond_signal(&p->work);
}

static void unlink_task(mk_flush_pool *p, mk_flush_task *t)
{
	mk_flush_task **pp = &p->head, *prev = NULL;
	while (*pp && *pp != t) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = t->next;
	if (p->tail == t)
		p->tail = prev;
	t->next = NULL;
	t->queued = false;
}

static void *worker(void *arg)
{
	mk_flush_pool *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && !p->head)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		mk_flush_task *t = p->head;
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
	return NULL;
}

mk_flush_pool *mk_flush_pool_new(int nthreads)
{
	if (nthreads < 1)
		nthreads = 1;
	mk_flush_pool *p = mk_xcalloc(1, sizeof(*p) +
				      (size_t)nthreads * sizeof(pthread_t));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->want = nthreads;
	return p;
}

/* Under p->lock: start the threads the first time. Any running? */
static bool start_locked(mk_flush_pool *p)
{
	if (!p->started) {
		p->started = true;
		for (int i = 0; i < p->want; i++) {
			if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
				break;
			p->nthreads++;
		}
	}
	return p->nthreads > 0;
}

bool mk_flush_pool_ready(mk_flush_pool *p)
{
	pthread_mutex_lock(&p->lock);
	bool ok = start_locked(p);
	pthread_mutex_unlock(&p->lock);
	return ok;
}

void mk_flush_pool_free(mk_flush_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	free(p);
}

void mk_flush_pool_submit(mk_flush_pool *p, mk_flush_task *t)
{
	pthread_mutex_lock(&p->lock);
	start_locked(p);
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

int mk_flush_pool_threads(const mk_flush_pool *p)
{
	return p ? p->nthreads : 0;
}
