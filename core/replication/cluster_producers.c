/*
 * cluster_producers.c — the registry of idempotent producer identities
 * (/producers/NAME), after Kafka's ProducerIdManager and the producer-id
 * part of InitProducerId: a name maps to a producer id and an epoch;
 * creation hands out the next id with epoch 0, init bumps the epoch
 * (fencing the writers of the old one; a new id once the epoch runs out),
 * deletion forgets the name.
 *
 * Invariants: the registry is sorted by name; next_producer_id is above
 * every id ever handed out (the metadata file keeps it), so an id is never
 * handed out twice, and a name's epoch never goes back; every change is
 * saved before anyone can see it (decide, persist, act).
 *
 * Locking: c->lock guards the registry and next_producer_id (readers:
 * get, names; writers: a change, once saved); a change holds meta_lock
 * from its decision to its end, so two changes never plan from one state.
 */
#include "cluster_internal.h"

#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "topic_name.h"
#include "xalloc.h"

typedef struct {
	const mk_cluster *c;
	const char *name;
} name_key;

static int cmp_producer(const void *ctx, size_t i)
{
	const name_key *k = ctx;
	return strcmp(k->c->producers[i].name, k->name);
}

/* The producer called name, or NULL; *pos (when not NULL) gets its index
 * or the insertion point. Under c->lock. */
static mk_producer_id *find_producer(mk_cluster *c, const char *name, size_t *pos)
{
	name_key k = { c, name };
	size_t at;
	bool found = mk_search_sorted(c->nproducers, cmp_producer, &k, &at);
	if (pos)
		*pos = at;
	return found ? &c->producers[at] : NULL;
}

void producers_put(mk_cluster *c, const char *name, int64_t id, int16_t epoch)
{
	size_t pos;
	mk_producer_id *p = find_producer(c, name, &pos);
	if (!p) {
		mk_producer_id *v = mk_xrealloc(c->producers, (c->nproducers + 1) * sizeof(*v));
		c->producers = v;
		memmove(v + pos + 1, v + pos, (c->nproducers - pos) * sizeof(*v));
		c->nproducers++;
		p = &v[pos];
		p->name = mk_xstrdup(name);
	}
	p->id = id;
	p->epoch = epoch;
	if (id >= c->next_producer_id)
		c->next_producer_id = id + 1;
}

void producers_free(mk_cluster *c)
{
	for (size_t i = 0; i < c->nproducers; i++)
		free(c->producers[i].name);
	free(c->producers);
	c->producers = NULL;
	c->nproducers = 0;
}

/* The change a command asks for, planned from p (NULL: no such name).
 * Under c->lock (read). */
static mk_err plan_change(mk_cluster *c, const char *name, mk_producer_id *p,
			  bool create, bool init, mk_meta_plan *plan,
			  mk_strbuf *why)
{
	plan->producer = name;
	plan->next_producer_id = c->next_producer_id;
	if (create && p)
		return mk_error(why, MK_PRODUCER_ALREADY_EXISTS, "producer %s already exists",
				name);
	if (!create && !p)
		return mk_error(why, MK_UNKNOWN_PRODUCER_ID, "no producer %s", name);
	if (create || (init && p->epoch == INT16_MAX)) {
		/* Kafka gives the producer a new id when its epoch runs out. */
		plan->producer_id = c->next_producer_id;
		plan->next_producer_id = plan->producer_id + 1;
	} else if (init) {
		plan->producer_id = p->id;
		plan->producer_epoch = (int16_t)(p->epoch + 1);
	} else {
		plan->producer_gone = true;
	}
	return MK_OK;
}

/* The saved plan applied. Under the write lock. */
static void apply_change(mk_cluster *c, const char *name,
			 const mk_meta_plan *plan)
{
	if (plan->producer_gone) {
		size_t pos;
		mk_producer_id *p = find_producer(c, name, &pos);
		free(p->name);
		memmove(p, p + 1, (c->nproducers - pos - 1) * sizeof(*p));
		c->nproducers--;
	} else {
		producers_put(c, name, plan->producer_id, plan->producer_epoch);
	}
	c->next_producer_id = plan->next_producer_id;
}

/*
 * Decide, persist, act for producer identities: the new identity (or its
 * removal) is saved before anyone can see it, so an id is never handed out
 * twice and a fencing epoch never goes back.
 */
static mk_err producer_change(mk_cluster *c, const char *name, bool create,
			      bool init, mk_strbuf *why)
{
	pthread_mutex_lock(&c->meta_lock);
	pthread_rwlock_rdlock(&c->lock);
	mk_meta_plan plan = MK_META_PLAN_NONE;
	mk_err err = plan_change(c, name, find_producer(c, name, NULL), create,
				 init, &plan, why);
	pthread_rwlock_unlock(&c->lock);
	if (!err) {
		err = meta_save(c, &plan);
		if (err && why)
			mk_strbuf_addf(why, "cannot save producer %s; nothing changed", name);
	}
	if (!err) {
		pthread_rwlock_wrlock(&c->lock);
		apply_change(c, name, &plan);
		pthread_rwlock_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->meta_lock);
	return err;
}

mk_err mk_cluster_producer_create(mk_cluster *c, const char *name, mk_strbuf *why)
{
	if (!mk_topic_name_valid(name))
		return mk_error(why, MK_INVALID_REQUEST, "invalid producer name '%s': 1 to %d of [A-Za-z0-9._-]",
				name, MK_TOPIC_NAME_MAX);
	return producer_change(c, name, true, false, why);
}

mk_err mk_cluster_producer_init(mk_cluster *c, const char *name, mk_strbuf *why)
{
	return producer_change(c, name, false, true, why);
}

mk_err mk_cluster_producer_delete(mk_cluster *c, const char *name, mk_strbuf *why)
{
	return producer_change(c, name, false, false, why);
}

mk_err mk_cluster_producer_get(mk_cluster *c, const char *name, int64_t *id,
			       int16_t *epoch)
{
	pthread_rwlock_rdlock(&c->lock);
	mk_producer_id *p = find_producer(c, name, NULL);
	if (p) {
		*id = p->id;
		*epoch = p->epoch;
	}
	pthread_rwlock_unlock(&c->lock);
	return p ? MK_OK : MK_UNKNOWN_PRODUCER_ID;
}

size_t mk_cluster_producer_names(mk_cluster *c, char ***names)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = c->nproducers;
	*names = mk_xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		(*names)[i] = mk_xstrdup(c->producers[i].name);
	pthread_rwlock_unlock(&c->lock);
	return n;
}
