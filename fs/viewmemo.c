/*
 * viewmemo.c — the known lengths of records views and their pages state
 * (viewmemo.h).
 */
#include "viewmemo.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Memos kept at most; a full table forgets its oldest unused one. */
#define MEMO_MAX 64

struct mk_view_pages {
	char *path;
	/* The memo (vm->lock). */
	bool has_memo;
	mk_view_id id;           /* id.topic: a reference */
	int64_t end;
	long long size;
	uint64_t used;           /* when last learnt or opened */
	/* The pages state (vm->lock): paged descriptors open, their
	 * identity, whether it stands (valid), a first open dropping the
	 * old pages (priming), the inode and the kernel calls' argument. */
	int nopen;
	bool valid;
	bool priming;
	mk_view_id open_id;
	uint64_t ino;
	void *arg;
	int32_t epoch;
	bool streamed_cold;      /* the last open found the cache cold and
				  * was read as a stream */
	int pins;                /* stats by name using it (never forgotten) */
	/* Steps (step lock; limit and told also read without it). */
	pthread_mutex_t step;
	_Atomic long long limit;
	_Atomic long long told;
	int64_t pend;            /* the offset limit's text ends at */
	_Atomic uint64_t stepped;   /* the change count last stepped to */
};

struct mk_viewmemo {
	pthread_mutex_t lock;
	mk_view_kernel k;
	bool has_k;
	mk_view_pages **m;
	size_t n, alloc;
	uint64_t clock;
	/* Steps in their kernel calls, at most max_stepping (no lock);
	 * a stop refuses new ones and waits for these (mk_viewmemo_stop). */
	_Atomic int stepping;
	int max_stepping;
	atomic_bool stopping;
	atomic_bool drained_told;    /* drained is called once */
	void (*drained)(void *arg);
	void *drained_arg;
};

mk_viewmemo *mk_viewmemo_new(const mk_view_kernel *k, int max_stepping)
{
	mk_viewmemo *vm = mk_xcalloc(1, sizeof(*vm));
	pthread_mutex_init(&vm->lock, NULL);
	vm->max_stepping = max_stepping;
	if (k) {
		vm->k = *k;
		vm->has_k = true;
	}
	return vm;
}

void mk_viewmemo_free(mk_viewmemo *vm)
{
	if (!vm)
		return;
	for (size_t i = 0; i < vm->n; i++) {
		free(vm->m[i]->path);
		if (vm->m[i]->has_memo)
			mk_topic_put(vm->m[i]->id.topic);
		pthread_mutex_destroy(&vm->m[i]->step);
		free(vm->m[i]);
	}
	free(vm->m);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}

static bool same_id(const mk_view_id *a, const mk_view_id *b)
{
	return a->topic == b->topic && a->partition == b->partition &&
	       a->seq == b->seq && a->start == b->start;
}

/* Under vm->lock. */
static mk_view_pages *find(mk_viewmemo *vm, const char *path)
{
	for (size_t i = 0; i < vm->n; i++)
		if (!strcmp(vm->m[i]->path, path))
			return vm->m[i];
	return NULL;
}

/* Does the pages state live (viewmemo.h)? Under vm->lock. */
static bool pages_live(const mk_view_pages *m)
{
	return m->nopen > 0 || m->priming;
}

/* An entry for path: a new one, or the oldest one without paged
 * descriptors (its memo's topic reference goes to *put). Under
 * vm->lock; NULL when every entry has paged descriptors open. */
static mk_view_pages *slot(mk_viewmemo *vm, const char *path, mk_topic **put)
{
	if (vm->n < MEMO_MAX) {
		if (vm->n == vm->alloc) {
			vm->alloc = vm->alloc ? vm->alloc * 2 : 8;
			vm->m = mk_xrealloc(vm->m, vm->alloc * sizeof(*vm->m));
		}
		mk_view_pages *m = mk_xcalloc(1, sizeof(*m));
		pthread_mutex_init(&m->step, NULL);
		m->path = mk_xstrdup(path);
		vm->m[vm->n++] = m;
		return m;
	}
	mk_view_pages *old = NULL;
	for (size_t i = 0; i < vm->n; i++) {
		mk_view_pages *m = vm->m[i];
		if (!pages_live(m) && !m->pins && (!old || m->used < old->used))
			old = m;
	}
	if (!old)
		return NULL;
	free(old->path);
	if (old->has_memo)
		*put = old->id.topic;
	/* Nobody holds its address (no paged descriptor): start afresh. */
	old->path = mk_xstrdup(path);
	old->has_memo = false;
	old->valid = false;
	old->ino = 0;
	old->arg = NULL;
	return old;
}

void mk_viewmemo_learn(mk_viewmemo *vm, const char *path, const mk_view_id *id,
		       int64_t end, long long size, mk_topic *ref)
{
	mk_topic *put = NULL;
	pthread_mutex_lock(&vm->lock);
	mk_view_pages *m = find(vm, path);
	if (m && m->has_memo && same_id(&m->id, id) && m->end == end &&
	    m->size == size) {
		m->used = ++vm->clock;
	} else {
		if (!m)
			m = slot(vm, path, &put);
		if (m) {
			if (m->has_memo) {
				mk_topic_put(put);
				put = m->id.topic;
			}
			m->has_memo = true;
			m->id = *id;
			m->id.topic = ref;
			ref = NULL;
			m->end = end;
			m->size = size;
			m->used = ++vm->clock;
		}
	}
	pthread_mutex_unlock(&vm->lock);
	/* Outside the lock: a last put closes a deleted topic's logs. */
	mk_topic_put(ref);
	mk_topic_put(put);
}

bool mk_viewmemo_size(mk_viewmemo *vm, const char *path, mk_topic *topic,
		      int partition, uint64_t seq, long long *size)
{
	pthread_mutex_lock(&vm->lock);
	mk_view_pages *m = find(vm, path);
	bool ok = false;
	if (m && pages_live(m)) {
		*size = atomic_load(&m->told);
		ok = true;
	} else if (m && m->has_memo && m->id.topic == topic &&
		   m->id.partition == partition && m->id.seq == seq) {
		*size = m->size;
		ok = true;
	}
	pthread_mutex_unlock(&vm->lock);
	return ok;
}

mk_view_pages *mk_viewmemo_open(mk_viewmemo *vm, const char *path,
				const mk_view_id *id, int32_t epoch, int64_t *end,
				bool *fresh)
{
	pthread_mutex_lock(&vm->lock);
	mk_view_pages *m = find(vm, path);
	bool paged = m && m->has_memo && same_id(&m->id, id) && !m->priming &&
		     (!m->nopen || same_id(&m->open_id, id));
	if (paged) {
		*fresh = !m->nopen && !(m->valid && same_id(&m->open_id, id));
		if (*fresh) {
			/* A new pages state: nobody reads the name paged, so
			 * no step runs and no paged read is in flight. */
			m->open_id = *id;
			m->epoch = epoch;
			m->streamed_cold = false;
			m->valid = false;
			m->priming = true;
			atomic_store(&m->limit, m->size);
			atomic_store(&m->told, m->size);
			m->pend = m->end;
			atomic_store(&m->stepped, id->seq);
		}
		*end = m->pend;
		m->nopen++;
		m->used = ++vm->clock;
	}
	pthread_mutex_unlock(&vm->lock);
	return paged ? m : NULL;
}

void mk_viewmemo_opened(mk_viewmemo *vm, mk_view_pages *pg, uint64_t ino,
			void *arg, bool fresh)
{
	pthread_mutex_lock(&vm->lock);
	pg->ino = ino;
	pg->arg = arg;
	pthread_mutex_unlock(&vm->lock);
	if (!fresh)
		return;
	/* Outside the lock: no paged read of this name is in flight, so the
	 * kernel waits for nothing of ours. */
	if (vm->has_k && ino)
		vm->k.inval(arg, ino, 0);
	pthread_mutex_lock(&vm->lock);
	pg->priming = false;
	pg->valid = true;
	pthread_mutex_unlock(&vm->lock);
}

void mk_viewmemo_close(mk_viewmemo *vm, mk_view_pages *pg, bool fresh)
{
	pthread_mutex_lock(&vm->lock);
	if (pg->nopen > 0)
		pg->nopen--;
	if (fresh)
		pg->priming = false;    /* valid stays false: the next drops */
	pthread_mutex_unlock(&vm->lock);
}

int32_t mk_viewmemo_epoch(mk_view_pages *pg)
{
	return pg->epoch;    /* fixed while paged descriptors are open */
}

bool mk_viewmemo_is(mk_view_pages *pg, mk_topic *topic, int partition)
{
	return pg->open_id.topic == topic && pg->open_id.partition == partition;
}

mk_view_pages *mk_viewmemo_pin(mk_viewmemo *vm, const char *path)
{
	pthread_mutex_lock(&vm->lock);
	mk_view_pages *m = find(vm, path);
	if (m && pages_live(m))
		m->pins++;
	else
		m = NULL;
	pthread_mutex_unlock(&vm->lock);
	return m;
}

void mk_viewmemo_unpin(mk_viewmemo *vm, mk_view_pages *pg)
{
	pthread_mutex_lock(&vm->lock);
	pg->pins--;
	pthread_mutex_unlock(&vm->lock);
}

bool mk_viewmemo_cold(mk_viewmemo *vm, mk_view_pages *pg)
{
	pthread_mutex_lock(&vm->lock);
	bool stream = !pg->streamed_cold;
	pg->streamed_cold = stream;
	pthread_mutex_unlock(&vm->lock);
	return stream;
}

void mk_viewmemo_warm(mk_viewmemo *vm, mk_view_pages *pg)
{
	pthread_mutex_lock(&vm->lock);
	pg->streamed_cold = false;
	pthread_mutex_unlock(&vm->lock);
}

long long mk_viewmemo_limit(mk_view_pages *pg)
{
	return atomic_load(&pg->limit);
}

long long mk_viewmemo_told(mk_view_pages *pg)
{
	return atomic_load(&pg->told);
}

/* Give a step's place back; the last one after a stop says so. */
static void stepping_give(mk_viewmemo *vm)
{
	if (atomic_fetch_sub(&vm->stepping, 1) == 1 && atomic_load(&vm->stopping) &&
	    vm->drained && !atomic_exchange(&vm->drained_told, true))
		vm->drained(vm->drained_arg);
}

/* One of the vm->max_stepping places for a step; false: all taken, or
 * stopping. Taken before stopping is looked at, and mk_viewmemo_stop
 * sets stopping before it counts: one of the two sees the other. */
static bool stepping_take(mk_viewmemo *vm)
{
	if (atomic_load(&vm->stopping))
		return false;
	int n = atomic_load(&vm->stepping);
	for (;;) {
		if (n >= vm->max_stepping)
			return false;
		if (atomic_compare_exchange_weak(&vm->stepping, &n, n + 1))
			break;
	}
	if (atomic_load(&vm->stopping)) {
		stepping_give(vm);
		return false;
	}
	return true;
}

bool mk_viewmemo_stop(mk_viewmemo *vm)
{
	atomic_store(&vm->stopping, true);
	return atomic_load(&vm->stepping) == 0;
}

void mk_viewmemo_on_drained(mk_viewmemo *vm, void (*drained)(void *arg),
			    void *arg)
{
	vm->drained = drained;
	vm->drained_arg = arg;
}

bool mk_viewmemo_step_begin(mk_viewmemo *vm, mk_view_pages *pg, uint64_t seq,
			    int64_t *end, long long *size)
{
	if (atomic_load(&pg->stepped) == seq)
		return false;
	if (pthread_mutex_trylock(&pg->step) != 0)
		return false;
	if (atomic_load(&pg->stepped) == seq || !stepping_take(vm)) {
		pthread_mutex_unlock(&pg->step);
		return false;
	}
	*end = pg->pend;
	*size = atomic_load(&pg->limit);
	return true;
}

void mk_viewmemo_step_end(mk_viewmemo *vm, mk_view_pages *pg, uint64_t seq,
			  bool ok, int64_t end, long long size, char last)
{
	if (ok && size > atomic_load(&pg->limit)) {
		long long old = atomic_load(&pg->told);
		/* 1. Reads may serve the new text. */
		atomic_store(&pg->limit, size);
		pg->pend = end;
		pthread_mutex_lock(&vm->lock);
		uint64_t ino = pg->ino;
		void *arg = pg->arg;
		pthread_mutex_unlock(&vm->lock);
		if (vm->has_k && ino) {
			/* 2. Drop the page holding the old end, and after. */
			vm->k.inval(arg, ino, old);
			/* 3. The new size, with a byte of the new text. */
			vm->k.store(arg, ino, size - 1, &last, 1);
		}
		/* 4. Stats may report it. */
		atomic_store(&pg->told, size);
	}
	if (ok)
		atomic_store(&pg->stepped, seq);
	pthread_mutex_unlock(&pg->step);
	stepping_give(vm);
}
