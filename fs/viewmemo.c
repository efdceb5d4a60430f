/*
 * viewmemo.c — the known lengths of records views (viewmemo.h).
 */
#include "viewmemo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Memos kept at most; a full table forgets its oldest unused one. */
#define MEMO_MAX 64

typedef struct {
	char *path;
	mk_view_id id;           /* id.topic: a reference */
	int64_t end;
	long long size;
	uint64_t used;           /* when last learnt or opened */
	int nopen;               /* paged descriptors open on path */
	mk_view_id open_id;      /* their identity (all the same) */
	bool primed;             /* a paged open of id did not keep the cache */
} memo;

struct mk_viewmemo {
	pthread_mutex_t lock;
	memo *m;
	size_t n, alloc;
	uint64_t clock;
};

mk_viewmemo *mk_viewmemo_new(void)
{
	mk_viewmemo *vm = mk_xcalloc(1, sizeof(*vm));
	pthread_mutex_init(&vm->lock, NULL);
	return vm;
}

void mk_viewmemo_free(mk_viewmemo *vm)
{
	if (!vm)
		return;
	for (size_t i = 0; i < vm->n; i++) {
		free(vm->m[i].path);
		mk_topic_put(vm->m[i].id.topic);
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
static memo *find(mk_viewmemo *vm, const char *path)
{
	for (size_t i = 0; i < vm->n; i++)
		if (!strcmp(vm->m[i].path, path))
			return &vm->m[i];
	return NULL;
}

/* A free slot for path: a new one, or the oldest unused memo. Under
 * vm->lock; NULL when every memo has paged descriptors open. */
static memo *slot(mk_viewmemo *vm, const char *path, mk_topic **put)
{
	if (vm->n < MEMO_MAX) {
		if (vm->n == vm->alloc) {
			vm->alloc = vm->alloc ? vm->alloc * 2 : 8;
			vm->m = mk_xrealloc(vm->m, vm->alloc * sizeof(*vm->m));
		}
		memo *m = &vm->m[vm->n++];
		memset(m, 0, sizeof(*m));
		m->path = mk_xstrdup(path);
		return m;
	}
	memo *old = NULL;
	for (size_t i = 0; i < vm->n; i++)
		if (!vm->m[i].nopen && (!old || vm->m[i].used < old->used))
			old = &vm->m[i];
	if (!old)
		return NULL;
	free(old->path);
	*put = old->id.topic;
	memset(old, 0, sizeof(*old));
	old->path = mk_xstrdup(path);
	return old;
}

void mk_viewmemo_learn(mk_viewmemo *vm, const char *path, const mk_view_id *id,
		       int64_t end, long long size, mk_topic *ref)
{
	mk_topic *put = NULL;
	pthread_mutex_lock(&vm->lock);
	memo *m = find(vm, path);
	if (m && same_id(&m->id, id) && m->end == end && m->size == size) {
		m->used = ++vm->clock;
	} else {
		if (!m)
			m = slot(vm, path, &put);
		if (m) {
			if (m->id.topic) {
				mk_topic_put(put);
				put = m->id.topic;
			}
			m->id = *id;
			m->id.topic = ref;
			ref = NULL;
			m->end = end;
			m->size = size;
			m->primed = false;
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
	memo *m = find(vm, path);
	bool ok = m && m->id.topic == topic && m->id.partition == partition &&
		  m->id.seq == seq;
	if (ok)
		*size = m->size;
	pthread_mutex_unlock(&vm->lock);
	return ok;
}

bool mk_viewmemo_open(mk_viewmemo *vm, const char *path, const mk_view_id *id,
		      long long *size, int64_t *end, bool *keep_cache)
{
	pthread_mutex_lock(&vm->lock);
	memo *m = find(vm, path);
	bool paged = m && same_id(&m->id, id) &&
		     (!m->nopen || same_id(&m->open_id, id));
	if (paged) {
		*size = m->size;
		*end = m->end;
		*keep_cache = m->primed;
		m->primed = true;
		m->nopen++;
		m->open_id = *id;
		m->used = ++vm->clock;
	}
	pthread_mutex_unlock(&vm->lock);
	return paged;
}

void mk_viewmemo_close(mk_viewmemo *vm, const char *path)
{
	pthread_mutex_lock(&vm->lock);
	memo *m = find(vm, path);
	if (m && m->nopen > 0)
		m->nopen--;
	pthread_mutex_unlock(&vm->lock);
}
