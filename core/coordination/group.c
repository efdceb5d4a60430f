/*
 * group.c — the group coordinator (see group.h for the rules).
 *
 * Every persisted change is an operation of the coordinators' runtime
 * (coordinator.h): its prepare, under the runtime's turn, refreshes from
 * the log if a leader moved and, under lock, validates and adds the
 * records; the runtime appends them with acks=all; its apply, once they
 * are acknowledged, makes them true under lock. Operations run one at a
 * time, so what prepare validated still holds when apply runs.
 */
#include "group_internal.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assignor.h"
#include "coordinator.h"
#include "failpoint.h"
#include "parse.h"
#include "partitioner.h"
#include "search.h"
#include "topic_name.h"

/* ---- small helpers ----------------------------------------------------- */

static int part_cmp(const char *t1, int p1, const char *t2, int p2)
{
	int c = strcmp(t1, t2);
	return c ? c : (p1 > p2) - (p1 < p2);
}

static int64_t now_ms(mk_groups *g)
{
	return mk_clock_now(&g->c->clock);
}

void gm_member_free(gm_member *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ntopics; i++)
		free(m->topics[i]);
	free(m->topics);
	for (size_t i = 0; i < m->nparts; i++)
		free(m->parts[i].topic);
	free(m->parts);
	free(m->name);
	free(m);
}

void gm_commits_free(gm_commit *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(c[i].topic);
	free(c);
}

void gm_group_free(gm_group *grp)
{
	if (!grp)
		return;
	for (size_t i = 0; i < grp->nmembers; i++)
		gm_member_free(grp->members[i]);
	free(grp->members);
	gm_commits_free(grp->commits, grp->ncommits);
	free(grp->name);
	free(grp);
}

gm_group *gm_group_new(const char *name)
{
	gm_group *grp = mk_xcalloc(1, sizeof(*grp));
	grp->name = mk_xstrdup(name);
	grp->reset = grp->session_ms = grp->max_poll = -1;
	return grp;
}

/* A name search: element i of an array of pointers to structs whose
 * first member is their name (gm_group, gm_member), against key. */
typedef struct {
	void *const *arr;
	const char *key;
} named_key;

static int cmp_named(const void *ctx, size_t i)
{
	const named_key *k = ctx;
	return strcmp(*(char *const *)k->arr[i], k->key);
}

void *gm_find_named(void *const *arr, size_t n, const char *key, size_t *pos)
{
	named_key k = { arr, key };
	size_t at;
	bool found = mk_search_sorted(n, cmp_named, &k, &at);
	if (pos)
		*pos = at;
	return found ? arr[at] : NULL;
}

gm_group *gm_find_group(mk_groups *g, const char *name, size_t *pos)
{
	return gm_find_named((void *const *)g->groups, g->ngroups, name, pos);
}

gm_member *gm_find_member(gm_group *grp, const char *name, size_t *pos)
{
	return gm_find_named((void *const *)grp->members, grp->nmembers, name, pos);
}

void gm_insert_ptr(void ***arr, size_t *n, size_t pos, void *v)
{
	void **a = mk_xrealloc(*arr, (*n + 1) * sizeof(*a));
	memmove(a + pos + 1, a + pos, (*n - pos) * sizeof(*a));
	a[pos] = v;
	*arr = a;
	(*n)++;
}

void gm_remove_ptr(void **arr, size_t *n, size_t pos)
{
	memmove(arr + pos, arr + pos + 1, (*n - pos - 1) * sizeof(*arr));
	(*n)--;
}

typedef struct {
	const gm_commit *v;
	const char *topic;
	int partition;
} commit_key;

static int cmp_commit(const void *ctx, size_t i)
{
	const commit_key *k = ctx;
	return part_cmp(k->v[i].topic, k->v[i].partition, k->topic, k->partition);
}

static gm_commit *find_commit(gm_group *grp, const char *topic, int part, size_t *pos)
{
	commit_key k = { grp->commits, topic, part };
	size_t at;
	bool found = mk_search_sorted(grp->ncommits, cmp_commit, &k, &at);
	if (pos)
		*pos = at;
	return found ? &grp->commits[at] : NULL;
}

void gm_set_commit(gm_group *grp, const char *topic, int part, int64_t offset)
{
	size_t pos;
	gm_commit *c = find_commit(grp, topic, part, &pos);
	if (offset < 0) {
		if (c) {
			free(c->topic);
			memmove(c, c + 1, (grp->ncommits - pos - 1) * sizeof(*c));
			grp->ncommits--;
		}
		return;
	}
	if (!c) {
		gm_commit *v = mk_xrealloc(grp->commits, (grp->ncommits + 1) * sizeof(*v));
		grp->commits = v;
		memmove(v + pos + 1, v + pos, (grp->ncommits - pos) * sizeof(*v));
		grp->ncommits++;
		c = &v[pos];
		c->topic = mk_xstrdup(topic);
		c->partition = part;
	}
	c->offset = offset;
}

static int64_t committed_of(gm_group *grp, const char *topic, int part)
{
	gm_commit *c = find_commit(grp, topic, part, NULL);
	return c ? c->offset : -1;
}

static gm_part *find_part(gm_member *m, const char *topic, int part)
{
	for (size_t i = 0; i < m->nparts; i++)
		if (m->parts[i].partition == part && !strcmp(m->parts[i].topic, topic))
			return &m->parts[i];
	return NULL;
}

static int64_t eff_reset(mk_groups *g, gm_group *grp)
{
	return grp->reset >= 0 ? grp->reset : g->c->cfg.auto_offset_reset;
}

static int64_t eff_session(mk_groups *g, gm_group *grp)
{
	return grp->session_ms >= 0 ? grp->session_ms : g->c->cfg.session_timeout_ms;
}

static int64_t eff_max_poll(mk_groups *g, gm_group *grp)
{
	return grp->max_poll >= 0 ? grp->max_poll : g->c->cfg.max_poll_records;
}

/* Partition info of topic/part; false when the topic or partition is gone. */
static bool part_info(mk_groups *g, const char *topic, int part,
		      mk_partition_info *pi)
{
	mk_topic *t = mk_cluster_topic(g->c, topic);
	mk_partition *p = t ? mk_topic_partition(t, part) : NULL;
	if (p)
		mk_partition_info_get(p, pi);
	mk_topic_put(t);
	return p != NULL;
}

/* A position by the reset policy; -1 when there is none (policy none, or
 * no leader to ask). */
static int64_t reset_position(mk_groups *g, gm_group *grp, const char *topic, int part)
{
	mk_partition_info pi;
	int64_t policy = eff_reset(g, grp);
	if (policy == MK_RESET_NONE || !part_info(g, topic, part, &pi) || pi.leader < 0)
		return -1;
	return policy == MK_RESET_LATEST ? pi.hw : pi.log_start;
}

/* ---- open / close / tick ---------------------------------------------------- */

static mk_coord_op *tick(void *arg);

mk_err mk_groups_open(mk_cluster *c, mk_groups **out, mk_strbuf *why)
{
	mk_groups *g = mk_xcalloc(1, sizeof(*g));
	g->c = c;
	pthread_mutex_init(&g->lock, NULL);
	mk_coord_def def = {
		.topic = MK_OFFSETS_TOPIC,
		.partitions = (int)c->cfg.offsets_topic_num_partitions,
		.replication = (int)c->cfg.offsets_topic_replication_factor,
		.failpoint = "group.persist.after-append",
		.tick = tick, .arg = g,
	};
	g->rt = mk_coord_new(c, &def);
	mk_topic *t = mk_cluster_topic(c, MK_OFFSETS_TOPIC);
	if (t) {
		mk_topic_put(t);
		mk_coord_lock(g->rt);
		mk_err err = gm_ensure_topic(g, why);
		if (!err)
			gm_refresh(g);
		mk_coord_unlock(g->rt);
		if (err) {
			mk_groups_close(g);
			return err;
		}
	}
	*out = g;
	return MK_OK;
}

void mk_groups_start(mk_groups *g)
{
	mk_coord_start(g->rt);
}

void mk_groups_close(mk_groups *g)
{
	if (!g)
		return;
	mk_coord_free(g->rt);
	for (size_t i = 0; i < g->ngroups; i++)
		gm_group_free(g->groups[i]);
	free(g->groups);
	free(g->loaded_epoch);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* ---- lookups ------------------------------------------------------------------ */

static mk_err lookup(mk_groups *g, const char *group, const char *member,
		     gm_group **grp, gm_member **m, mk_strbuf *why)
{
	*grp = gm_find_group(g, group, NULL);
	if (!*grp)
		return mk_error(why, MK_GROUP_ID_NOT_FOUND, "no group %s", group);
	if (!member)
		return MK_OK;
	*m = gm_find_member(*grp, member, NULL);
	if (!*m)
		return mk_error(why, MK_UNKNOWN_MEMBER_ID, "no member %s in group %s", member, group);
	return MK_OK;
}

bool mk_group_exists(mk_groups *g, const char *group)
{
	gm_try_refresh(g);
	pthread_mutex_lock(&g->lock);
	bool ok = gm_find_group(g, group, NULL) != NULL;
	pthread_mutex_unlock(&g->lock);
	return ok;
}

bool mk_group_member_exists(mk_groups *g, const char *group, const char *member)
{
	pthread_mutex_lock(&g->lock);
	gm_group *grp = gm_find_group(g, group, NULL);
	bool ok = grp && gm_find_member(grp, member, NULL);
	pthread_mutex_unlock(&g->lock);
	return ok;
}

size_t mk_group_names(mk_groups *g, char ***names)
{
	gm_try_refresh(g);
	pthread_mutex_lock(&g->lock);
	size_t n = g->ngroups;
	*names = mk_xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		(*names)[i] = mk_xstrdup(g->groups[i]->name);
	pthread_mutex_unlock(&g->lock);
	return n;
}

size_t mk_group_member_names(mk_groups *g, const char *group, char ***names)
{
	pthread_mutex_lock(&g->lock);
	gm_group *grp = gm_find_group(g, group, NULL);
	size_t n = grp ? grp->nmembers : 0;
	*names = mk_xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		(*names)[i] = mk_xstrdup(grp->members[i]->name);
	pthread_mutex_unlock(&g->lock);
	return n;
}

/* ---- operations (coordinator.h): every persisted change ------------------------- */

/* One operation of any kind: the fields its kind uses. */
typedef struct {
	mk_coord_op base;        /* first */
	mk_groups *g;
	char *group;
	char *member;            /* join, leave, commit (NULL: the txn's) */
	char **strs;             /* join: the topics; configure: the pairs */
	size_t nstrs;
	gm_group *fresh;         /* create: the group to insert */
	gm_group trial;          /* configure: the overrides to set */
	int64_t gen;             /* the caller's generation (commit, <0 any),
				  * then the new one (join, leave, expire) */
	mk_commit_entry *todo;   /* commit: the caller's, then what is written */
	size_t ntodo;
	bool all_positions;      /* commit with no entries */
	int64_t now;             /* expire */
	bool sweeping;           /* expire: this round writes for group, the
				  * last group the sweep looked at */
} gm_op;

static void op_release(mk_coord_op *base)
{
	gm_op *op = (gm_op *)base;
	free(op->group);
	free(op->member);
	for (size_t i = 0; i < op->nstrs; i++)
		free(op->strs[i]);
	free(op->strs);
	gm_group_free(op->fresh);
	for (size_t i = 0; i < op->ntodo; i++)
		free((char *)op->todo[i].topic);
	free(op->todo);
	free(op);
}

static gm_op *op_new(mk_groups *g, const char *group, const char *member)
{
	gm_op *op = mk_xcalloc(1, sizeof(*op));
	op->g = g;
	op->group = group ? mk_xstrdup(group) : NULL;
	op->member = member ? mk_xstrdup(member) : NULL;
	return op;
}

static char **strs_copy(const char *const *v, size_t n)
{
	char **c = mk_xcalloc(n ? n : 1, sizeof(*c));
	for (size_t i = 0; i < n; i++)
		c[i] = mk_xstrdup(v[i]);
	return c;
}

/*
 * An operation's kind: what it does under lock (prepare: validate and
 * record; apply: make it true; true when there is more to do), wrapped
 * by group_prepare and group_apply, which refresh from the log and take
 * the lock. ensure: create __consumer_offsets first (a group's mkdir).
 */
typedef struct {
	mk_coord_op_kind base;   /* first: the runtime's view */
	bool ensure;
	mk_err (*prepare)(gm_op *op, mk_groups *g, mk_strbuf *why);
	bool (*apply)(gm_op *op, mk_groups *g);
} gm_kind;

static mk_err group_prepare(mk_coord_op *base, mk_strbuf *why)
{
	gm_op *op = (gm_op *)base;
	const gm_kind *k = (const gm_kind *)base->kind;
	mk_groups *g = op->g;
	mk_err err = k->ensure ? gm_ensure_topic(g, why) : MK_OK;
	if (err)
		return err;
	gm_refresh(g);
	pthread_mutex_lock(&g->lock);
	err = k->prepare(op, g, why);
	pthread_mutex_unlock(&g->lock);
	return err;
}

static mk_err group_apply(mk_coord_op *base, mk_err err, bool *more,
			  mk_strbuf *why)
{
	(void)why;
	if (err)
		return err;
	gm_op *op = (gm_op *)base;
	pthread_mutex_lock(&op->g->lock);
	*more = ((const gm_kind *)base->kind)->apply(op, op->g);
	pthread_mutex_unlock(&op->g->lock);
	return MK_OK;
}

static mk_err submit(gm_op *op, const gm_kind *kind, mk_coord_call *call,
		     mk_strbuf *why)
{
	op->base.kind = &kind->base;
	return mk_coord_submit(op->g->rt, &op->base, call, why);
}

/* Record group's metadata (generation gen, the overrides of cfg). */
static void record_meta(gm_op *op, const gm_group *cfg, int64_t gen)
{
	mk_strbuf v = MK_STRBUF_INIT;
	gm_meta_value(cfg, gen, &v);
	mk_coord_op_record(&op->base, gm_opart_of(op->g, op->group), op->group, v.buf);
	mk_strbuf_release(&v);
}

/* ---- create, delete, configure ---------------------------------------------------- */

static mk_err create_prepare(gm_op *op, mk_groups *g, mk_strbuf *why)
{
	if (gm_find_group(g, op->group, NULL))
		return mk_error(why, MK_GROUP_ALREADY_EXISTS, "group %s already exists", op->group);
	op->fresh = gm_group_new(op->group);
	record_meta(op, op->fresh, 0);
	return MK_OK;
}

static bool create_apply(gm_op *op, mk_groups *g)
{
	size_t pos;
	gm_find_group(g, op->group, &pos);
	gm_insert_ptr((void ***)&g->groups, &g->ngroups, pos, op->fresh);
	op->fresh = NULL;
	return false;
}

static const gm_kind create_kind = { { "group create", group_prepare, group_apply,
				       op_release }, true, create_prepare, create_apply };

mk_err mk_group_create(mk_groups *g, const char *group, mk_coord_call *call,
		       mk_strbuf *why)
{
	if (!mk_topic_name_valid(group))
		return mk_error(why, MK_INVALID_REQUEST,
				"invalid group name '%s': 1 to 249 of [A-Za-z0-9._-]", group);
	return submit(op_new(g, group, NULL), &create_kind, call, why);
}

static mk_err delete_prepare(gm_op *op, mk_groups *g, mk_strbuf *why)
{
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, op->group, NULL, &grp, &m, why);
	if (!err && grp->nmembers)
		err = mk_error(why, MK_NON_EMPTY_GROUP,
			       "group %s has members; they must leave first", op->group);
	int part = err ? -1 : gm_opart_of(g, op->group);
	for (size_t i = 0; !err && i < grp->ncommits; i++) {
		mk_strbuf k = MK_STRBUF_INIT;
		mk_strbuf_addf(&k, "%s/%s/%d", op->group, grp->commits[i].topic,
			       grp->commits[i].partition);
		mk_coord_op_record(&op->base, part, k.buf, NULL);
		mk_strbuf_release(&k);
	}
	if (!err)
		mk_coord_op_record(&op->base, part, op->group, NULL);   /* the group last */
	return err;
}

static bool delete_apply(gm_op *op, mk_groups *g)
{
	size_t pos;
	gm_group *grp = gm_find_group(g, op->group, &pos);
	if (grp) {
		gm_group_free(grp);
		gm_remove_ptr((void **)g->groups, &g->ngroups, pos);
	}
	return false;
}

static const gm_kind delete_kind = { { "group delete", group_prepare, group_apply,
				       op_release }, false, delete_prepare, delete_apply };

mk_err mk_group_delete(mk_groups *g, const char *group, mk_coord_call *call,
		       mk_strbuf *why)
{
	return submit(op_new(g, group, NULL), &delete_kind, call, why);
}

static mk_err configure_prepare(gm_op *op, mk_groups *g, mk_strbuf *why)
{
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, op->group, NULL, &grp, &m, why);
	if (!err) {
		op->trial.reset = grp->reset;
		op->trial.session_ms = grp->session_ms;
		op->trial.max_poll = grp->max_poll;
		for (size_t i = 0; i < op->nstrs && !err; i++)
			err = gm_config_set(&op->trial, op->strs[i], why);
		if (!err)
			record_meta(op, &op->trial, grp->generation);
	}
	return err;
}

static bool configure_apply(gm_op *op, mk_groups *g)
{
	gm_group *grp = gm_find_group(g, op->group, NULL);
	if (grp) {
		grp->reset = op->trial.reset;
		grp->session_ms = op->trial.session_ms;
		grp->max_poll = op->trial.max_poll;
	}
	return false;
}

static const gm_kind configure_kind = { { "group configuration", group_prepare, group_apply,
				       op_release }, false, configure_prepare, configure_apply };

mk_err mk_group_configure(mk_groups *g, const char *group,
			  const char *const *kv, size_t n, mk_coord_call *call,
			  mk_strbuf *why)
{
	gm_op *op = op_new(g, group, NULL);
	op->strs = strs_copy(kv, n);
	op->nstrs = n;
	return submit(op, &configure_kind, call, why);
}
mk_err mk_group_config_format(mk_groups *g, const char *group, mk_strbuf *out,
			      mk_strbuf *why)
{
	gm_try_refresh(g);
	pthread_mutex_lock(&g->lock);
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, group, NULL, &grp, &m, why);
	if (!err)
		mk_strbuf_addf(out, "auto.offset.reset=%s\nsession.timeout.ms=%lld\nmax.poll.records=%lld\n",
			       gm_reset_names[eff_reset(g, grp)],
			       (long long)eff_session(g, grp),
			       (long long)eff_max_poll(g, grp));
	pthread_mutex_unlock(&g->lock);
	return err;
}

/* ---- rebalance ---------------------------------------------------------------------- */

/* Recompute every member's assignment at generation gen. Under lock. */
static void rebalance(mk_groups *g, gm_group *grp, int64_t gen)
{
	grp->generation = gen;
	size_t nm = grp->nmembers;
	mk_assign_member *am = mk_xcalloc(nm ? nm : 1, sizeof(*am));
	/* Every subscribed topic, once, with its partition count. */
	size_t nt = 0, talloc = 0;
	mk_assign_topic *at = NULL;
	for (size_t i = 0; i < nm; i++) {
		gm_member *m = grp->members[i];
		am[i] = (mk_assign_member){ m->name, (const char *const *)m->topics, m->ntopics };
		for (size_t k = 0; k < m->ntopics; k++) {
			bool seen = false;
			for (size_t j = 0; j < nt && !seen; j++)
				seen = !strcmp(at[j].name, m->topics[k]);
			if (seen)
				continue;
			mk_topic *t = mk_cluster_topic(g->c, m->topics[k]);
			if (!t)
				continue;
			if (nt == talloc) {
				talloc = talloc ? talloc * 2 : 8;
				at = mk_xrealloc(at, talloc * sizeof(*at));
			}
			at[nt++] = (mk_assign_topic){ m->topics[k], t->npartitions };
			mk_topic_put(t);
		}
	}
	mk_assign_pair *pairs;
	size_t np = mk_assign_round_robin(am, nm, at, nt, &pairs);
	/* New part lists, positions from the committed offsets. */
	gm_part **nparts = mk_xcalloc(nm ? nm : 1, sizeof(*nparts));
	size_t *counts = mk_xcalloc(nm ? nm : 1, sizeof(*counts));
	for (size_t i = 0; i < np; i++)
		counts[pairs[i].member]++;
	for (size_t i = 0; i < nm; i++) {
		nparts[i] = mk_xcalloc(counts[i] ? counts[i] : 1, sizeof(gm_part));
		counts[i] = 0;
	}
	for (size_t i = 0; i < np; i++) {
		size_t mi = pairs[i].member;
		gm_part *np_ = &nparts[mi][counts[mi]++];
		np_->topic = mk_xstrdup(pairs[i].topic);
		np_->partition = pairs[i].partition;
		/* Eager: everything was revoked; every owner starts again at
		 * the committed offset, whether or not the partition moved. */
		int64_t c = committed_of(grp, pairs[i].topic, pairs[i].partition);
		np_->position = c >= 0 ? c : reset_position(g, grp, pairs[i].topic,
							    pairs[i].partition);
	}
	for (size_t i = 0; i < nm; i++) {
		gm_member *m = grp->members[i];
		for (size_t k = 0; k < m->nparts; k++)
			free(m->parts[k].topic);
		free(m->parts);
		m->parts = nparts[i];
		m->nparts = counts[i];
		m->poll_next = 0;
	}
	free(nparts);
	free(counts);
	free(pairs);
	free(at);
	free(am);
}

/* ---- join, leave, expire: one rebalance each ------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static mk_err join_prepare(gm_op *op, mk_groups *g, mk_strbuf *why)
{
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, op->group, NULL, &grp, &m, why);
	if (!err) {
		op->gen = grp->generation + 1;
		record_meta(op, grp, op->gen);
	}
	return err;
}

static bool join_apply(gm_op *op, mk_groups *g)
{
	gm_group *grp = gm_find_group(g, op->group, NULL);
	size_t pos;
	gm_member *m = gm_find_member(grp, op->member, &pos);
	if (!m) {
		m = mk_xcalloc(1, sizeof(*m));
		m->name = mk_xstrdup(op->member);
		gm_insert_ptr((void ***)&grp->members, &grp->nmembers, pos, m);
	}
	for (size_t i = 0; i < m->ntopics; i++)
		free(m->topics[i]);
	free(m->topics);
	/* The subscription, sorted and unique (op->strs is sorted). */
	m->topics = mk_xcalloc(op->nstrs, sizeof(char *));
	m->ntopics = 0;
	for (size_t i = 0; i < op->nstrs; i++)
		if (!i || strcmp(op->strs[i], op->strs[i - 1]))
			m->topics[m->ntopics++] = mk_xstrdup(op->strs[i]);
	m->last_seen_ms = now_ms(g);
	rebalance(g, grp, op->gen);
	return false;
}

static const gm_kind join_kind = { { "group join", group_prepare, group_apply,
				       op_release }, false, join_prepare, join_apply };

mk_err mk_group_join(mk_groups *g, const char *group, const char *member,
		     const char *const *topics, size_t ntopics, mk_coord_call *call,
		     mk_strbuf *why)
{
	if (!mk_topic_name_valid(member))
		return mk_error(why, MK_INVALID_REQUEST,
				"invalid member name '%s': 1 to 249 of [A-Za-z0-9._-]", member);
	if (!ntopics)
		return mk_error(why, MK_INVALID_REQUEST, "member %s subscribes to no topic", member);
	for (size_t i = 0; i < ntopics; i++) {
		mk_topic *t = mk_topic_name_valid(topics[i]) ? mk_cluster_topic(g->c, topics[i]) : NULL;
		if (!t)
			return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "no topic %s", topics[i]);
		mk_topic_put(t);
	}
	gm_op *op = op_new(g, group, member);
	op->strs = strs_copy(topics, ntopics);
	op->nstrs = ntopics;
	qsort(op->strs, ntopics, sizeof(char *), cmp_str);
	return submit(op, &join_kind, call, why);
}

/* Is m one the operation removes: the leaving member, or (expire) one
 * whose session ended by op->now. */
static bool gone(const gm_op *op, gm_group *grp, gm_member *m)
{
	if (op->member)
		return !strcmp(m->name, op->member);
	return op->now - m->last_seen_ms > eff_session(op->g, grp);
}

/* Under lock: record grp's next generation if the operation removes any
 * of its members. */
static bool record_removal(gm_op *op, gm_group *grp)
{
	size_t n = 0;
	for (size_t i = 0; i < grp->nmembers; i++)
		n += gone(op, grp, grp->members[i]);
	if (!n)
		return false;
	op->gen = grp->generation + 1;
	record_meta(op, grp, op->gen);
	return true;
}

/* Under lock: remove the members, in one rebalance. */
static void apply_removal(gm_op *op, gm_group *grp)
{
	for (size_t i = grp->nmembers; i-- > 0;)
		if (gone(op, grp, grp->members[i])) {
			gm_member_free(grp->members[i]);
			gm_remove_ptr((void **)grp->members, &grp->nmembers, i);
			op->base.counted++;
		}
	rebalance(op->g, grp, op->gen);
}

static mk_err leave_prepare(gm_op *op, mk_groups *g, mk_strbuf *why)
{
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, op->group, op->member, &grp, &m, why);
	if (!err)
		record_removal(op, grp);
	return err;
}

static bool removal_apply(gm_op *op, mk_groups *g)
{
	gm_group *grp = op->member || op->sweeping ? gm_find_group(g, op->group, NULL)
						   : NULL;
	if (grp)
		apply_removal(op, grp);
	/* An expiry sweep goes on to the next group after this one. */
	bool more = !op->member && op->sweeping;
	op->sweeping = false;
	return more;
}

static const gm_kind leave_kind = { { "group leave", group_prepare, group_apply,
				       op_release }, false, leave_prepare, removal_apply };

mk_err mk_group_leave(mk_groups *g, const char *group, const char *member,
		      mk_coord_call *call, mk_strbuf *why)
{
	return submit(op_new(g, group, member), &leave_kind, call, why);
}

/* One round of the sweep: the first group after op->group (the last one
 * looked at) that loses a member (none: the sweep ends). */
static mk_err expire_prepare(gm_op *op, mk_groups *g, mk_strbuf *why)
{
	(void)why;
	size_t i = 0;
	if (op->group && gm_find_group(g, op->group, &i))
		i++;
	for (; i < g->ngroups && !op->sweeping; i++) {
		gm_group *grp = g->groups[i];
		free(op->group);
		op->group = mk_xstrdup(grp->name);
		op->sweeping = record_removal(op, grp);
	}
	return MK_OK;
}

static const gm_kind expire_kind = { { "session expiry", group_prepare, group_apply,
				       op_release }, false, expire_prepare, removal_apply };

mk_err mk_groups_expire(mk_groups *g, int *removed, mk_coord_call *call,
			mk_strbuf *why)
{
	if (removed)
		*removed = 0;
	gm_op *op = op_new(g, NULL, NULL);
	op->now = now_ms(g);
	op->base.count_to = removed;
	return submit(op, &expire_kind, call, why);
}

/* The periodic task (auto mode): an expiry sweep. */
static mk_coord_op *tick(void *arg)
{
	mk_groups *g = arg;
	gm_op *op = op_new(g, NULL, NULL);
	op->now = now_ms(g);
	op->base.kind = &expire_kind.base;
	return &op->base;
}

mk_err mk_group_heartbeat(mk_groups *g, const char *group, const char *member,
			  int64_t generation, mk_strbuf *why)
{
	pthread_mutex_lock(&g->lock);
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, group, member, &grp, &m, why);
	if (!err && generation != grp->generation) {
		err = mk_error(why, MK_ILLEGAL_GENERATION, "generation %lld is not the current %lld: rejoin",
				       (long long)generation, (long long)grp->generation);
	}
	if (!err)
		m->last_seen_ms = now_ms(g);
	pthread_mutex_unlock(&g->lock);
	return err;
}

/* ---- positions and commits ---------------------------------------------------------- */

/* offset within [log start, log end]; without a leader to ask, a commit
 * is taken as it is (lenient) and a seek refused. */
static mk_err check_range(mk_groups *g, const char *topic, int part,
			  int64_t offset, bool lenient, mk_strbuf *why)
{
	mk_partition_info pi;
	if (!part_info(g, topic, part, &pi)) {
		return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "no partition %s/%d", topic, part);
	}
	if (pi.leader < 0) {
		if (lenient)
			return MK_OK;
		return mk_error(why, MK_LEADER_NOT_AVAILABLE, "%s/%d has no online leader", topic, part);
	}
	if (offset < pi.log_start || offset > pi.leo) {
		return mk_error(why, MK_OFFSET_OUT_OF_RANGE, "offset %lld of %s/%d outside [%lld, %lld]",
				       (long long)offset, topic, part,
				       (long long)pi.log_start, (long long)pi.leo);
	}
	return MK_OK;
}

static mk_err unowned(mk_strbuf *why, const char *member, const char *topic, int part)
{
	return mk_error(why, MK_TOPIC_AUTHORIZATION_FAILED, "member %s does not own %s/%d", member, topic, part);
}

mk_err mk_group_seek(mk_groups *g, const char *group, const char *member,
		     const char *topic, int partition, int64_t offset,
		     mk_strbuf *why)
{
	pthread_mutex_lock(&g->lock);
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, group, member, &grp, &m, why);
	gm_part *p = NULL;
	if (!err && !(p = find_part(m, topic, partition)))
		err = unowned(why, member, topic, partition);
	if (!err)
		err = check_range(g, topic, partition, offset, false, why);
	if (!err)
		p->position = offset;
	pthread_mutex_unlock(&g->lock);
	return err;
}

static mk_err commit_prepare(gm_op *op, mk_groups *g, mk_strbuf *why)
{
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, op->group, op->member, &grp, &m, why);
	if (!err && op->gen >= 0 && op->gen != grp->generation)
		err = mk_error(why, MK_ILLEGAL_GENERATION,
			       "generation %lld is not the current %lld: the commit is fenced",
			       (long long)op->gen, (long long)grp->generation);
	if (!err && op->all_positions) {
		op->todo = mk_xcalloc(m->nparts ? m->nparts : 1, sizeof(*op->todo));
		for (size_t i = 0; i < m->nparts; i++)
			if (m->parts[i].position >= 0)
				op->todo[op->ntodo++] = (mk_commit_entry){
					mk_xstrdup(m->parts[i].topic), m->parts[i].partition,
					m->parts[i].position };
	}
	for (size_t i = 0; !err && !op->all_positions && i < op->ntodo; i++) {
		const mk_commit_entry *e = &op->todo[i];
		if (m && !find_part(m, e->topic, e->partition))
			err = unowned(why, op->member, e->topic, e->partition);
		else
			err = check_range(g, e->topic, e->partition, e->offset, true, why);
	}
	for (size_t i = 0; !err && i < op->ntodo; i++) {
		mk_strbuf k = MK_STRBUF_INIT, v = MK_STRBUF_INIT;
		mk_strbuf_addf(&k, "%s/%s/%d", op->group, op->todo[i].topic,
			       op->todo[i].partition);
		mk_strbuf_addf(&v, "%lld", (long long)op->todo[i].offset);
		mk_coord_op_record(&op->base, gm_opart_of(g, op->group), k.buf, v.buf);
		mk_strbuf_release(&k);
		mk_strbuf_release(&v);
	}
	return err;
}

static bool commit_apply(gm_op *op, mk_groups *g)
{
	gm_group *grp = gm_find_group(g, op->group, NULL);
	gm_member *m = grp && op->member ? gm_find_member(grp, op->member, NULL) : NULL;
	for (size_t i = 0; grp && i < op->ntodo; i++)
		gm_set_commit(grp, op->todo[i].topic, op->todo[i].partition, op->todo[i].offset);
	if (m)
		m->last_seen_ms = now_ms(g);
	return false;
}

static const gm_kind commit_kind = { { "offset commit", group_prepare, group_apply,
				       op_release }, false, commit_prepare, commit_apply };

mk_err mk_group_commit(mk_groups *g, const char *group, const char *member,
		       int64_t generation, const mk_commit_entry *entries,
		       size_t n, mk_coord_call *call, mk_strbuf *why)
{
	gm_op *op = op_new(g, group, member);
	op->gen = generation;
	op->all_positions = !n;
	op->todo = n ? mk_xcalloc(n, sizeof(*op->todo)) : NULL;
	for (size_t i = 0; i < n; i++)
		op->todo[i] = (mk_commit_entry){ mk_xstrdup(entries[i].topic),
						 entries[i].partition, entries[i].offset };
	op->ntodo = n;
	return submit(op, &commit_kind, call, why);
}

mk_err mk_group_commit_offsets(mk_groups *g, const char *group,
				const mk_commit_entry *entries, size_t n,
				mk_coord_call *call, mk_strbuf *why)
{
	if (!n)
		return MK_OK;
	return mk_group_commit(g, group, NULL, -1, entries, n, call, why);
}
/* ---- positions for the fetcher (core/client/fetcher.h) -------------------- */

/* Give position -1 or an out-of-range position one by the policy. Under lock. */
static mk_err resolve_position(mk_groups *g, gm_group *grp, gm_part *p,
			       mk_strbuf *why)
{
	mk_partition_info pi;
	if (!part_info(g, p->topic, p->partition, &pi))
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	if (pi.leader < 0)
		return MK_OK;        /* fetch will say there is no leader */
	if (p->position >= pi.log_start && p->position <= pi.leo)
		return MK_OK;
	int64_t policy = eff_reset(g, grp);
	if (policy == MK_RESET_NONE) {
		if (why) {
			if (p->position < 0)
				mk_strbuf_addf(why, "no committed offset for %s/%d and auto.offset.reset=none (seek first)",
					       p->topic, p->partition);
			else
				mk_strbuf_addf(why, "position %lld of %s/%d outside [%lld, %lld] and auto.offset.reset=none",
					       (long long)p->position, p->topic, p->partition,
					       (long long)pi.log_start, (long long)pi.leo);
		}
		return MK_OFFSET_OUT_OF_RANGE;
	}
	p->position = policy == MK_RESET_LATEST ? pi.hw : pi.log_start;
	return MK_OK;
}

mk_err mk_group_poll_positions(mk_groups *g, const char *group,
			       const char *member, mk_group_position **out,
			       size_t *n, int64_t *max_poll, mk_strbuf *why)
{
	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&g->lock);
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, group, member, &grp, &m, why);
	mk_group_position *tg = NULL;
	size_t nt = 0;
	if (!err) {
		*max_poll = eff_max_poll(g, grp);
		tg = mk_xcalloc(m->nparts ? m->nparts : 1, sizeof(*tg));
		size_t start = m->nparts ? m->poll_next % m->nparts : 0;
		for (size_t k = 0; k < m->nparts && !err; k++) {
			gm_part *p = &m->parts[(start + k) % m->nparts];
			err = resolve_position(g, grp, p, why);
			if (err == MK_UNKNOWN_TOPIC_OR_PARTITION) {
				err = MK_OK;     /* topic deleted: nothing to poll */
				continue;
			}
			if (!err && p->position >= 0)
				tg[nt++] = (mk_group_position){
					mk_xstrdup(p->topic), p->partition,
					p->position };
		}
		if (!err)
			m->last_seen_ms = now_ms(g);
	}
	pthread_mutex_unlock(&g->lock);
	if (err) {
		mk_group_positions_free(tg, nt);
		return err;
	}
	*out = tg;
	*n = nt;
	return MK_OK;
}

void mk_group_positions_free(mk_group_position *v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(v[k].topic);
	free(v);
}

void mk_group_poll_ended(mk_groups *g, const char *group, const char *member,
			 const char *topic, int partition)
{
	pthread_mutex_lock(&g->lock);
	gm_group *grp = gm_find_group(g, group, NULL);
	gm_member *m = grp ? gm_find_member(grp, member, NULL) : NULL;
	if (m && m->nparts)
		for (size_t k = 0; k < m->nparts; k++)
			if (m->parts[k].partition == partition &&
			    !strcmp(m->parts[k].topic, topic))
				m->poll_next = k + 1;
	pthread_mutex_unlock(&g->lock);
}

mk_cluster *mk_groups_cluster(mk_groups *g)
{
	return g->c;
}

bool mk_group_advance(mk_groups *g, const char *group, const char *member,
		      const char *topic, int partition, int64_t from, int64_t to)
{
	pthread_mutex_lock(&g->lock);
	gm_group *grp = gm_find_group(g, group, NULL);
	gm_member *m = grp ? gm_find_member(grp, member, NULL) : NULL;
	gm_part *p = m ? find_part(m, topic, partition) : NULL;
	bool ok = p && p->position == from;
	if (ok)
		p->position = to;
	pthread_mutex_unlock(&g->lock);
	return ok;
}

/* The member's next poll start as a name; false without an assignment.
 * Under g->lock. */
static bool poll_start(mk_groups *g, const char *group, const char *member,
		       char topic[MK_TOPIC_NAME_MAX + 1], int *part)
{
	gm_group *grp = gm_find_group(g, group, NULL);
	gm_member *m = grp ? gm_find_member(grp, member, NULL) : NULL;
	if (!m || !m->nparts)
		return false;
	gm_part *p = &m->parts[m->poll_next % m->nparts];
	snprintf(topic, MK_TOPIC_NAME_MAX + 1, "%s", p->topic);
	*part = p->partition;
	return true;
}

bool mk_group_poll_target(mk_groups *g, const char *group, const char *member,
			  mk_topic **t, mk_partition **p)
{
	char topic[MK_TOPIC_NAME_MAX + 1] = "";
	int part = -1;
	pthread_mutex_lock(&g->lock);
	bool found = poll_start(g, group, member, topic, &part);
	pthread_mutex_unlock(&g->lock);
	*t = found ? mk_cluster_topic(g->c, topic) : NULL;
	*p = *t ? mk_topic_partition(*t, part) : NULL;
	if (*t && !*p) {
		mk_topic_put(*t);
		*t = NULL;
	}
	return *p != NULL;
}

/* ---- describe ------------------------------------------------------------------------------ */

static void add_part(mk_groups *g, mk_group_info *out, size_t *alloc,
		     const char *topic, int part, const char *owner,
		     int64_t position, int64_t committed)
{
	if (out->nparts == *alloc) {
		*alloc = *alloc ? *alloc * 2 : 16;
		out->parts = mk_xrealloc(out->parts, *alloc * sizeof(*out->parts));
	}
	mk_group_part_info *pi = &out->parts[out->nparts++];
	pi->topic = mk_xstrdup(topic);
	pi->partition = part;
	pi->owner = owner ? mk_xstrdup(owner) : NULL;
	pi->position = position;
	pi->committed = committed;
	mk_partition_info info;
	if (part_info(g, topic, part, &info) && info.leader >= 0) {
		pi->hw = info.hw;
		pi->log_start = info.log_start;
	} else {
		pi->hw = pi->log_start = -1;
	}
}

static int cmp_part_info(const void *a, const void *b)
{
	const mk_group_part_info *x = a, *y = b;
	return part_cmp(x->topic, x->partition, y->topic, y->partition);
}

mk_err mk_group_describe(mk_groups *g, const char *group, const char *member,
			 mk_group_info *out, mk_strbuf *why)
{
	memset(out, 0, sizeof(*out));
	gm_try_refresh(g);
	pthread_mutex_lock(&g->lock);
	gm_group *grp;
	gm_member *m = NULL;
	mk_err err = lookup(g, group, member, &grp, &m, why);
	if (!err) {
		out->generation = grp->generation;
		out->now_ms = now_ms(g);
		out->session_timeout_ms = eff_session(g, grp);
		out->reset = (int)eff_reset(g, grp);
		size_t alloc = 0;
		out->members = mk_xcalloc(grp->nmembers ? grp->nmembers : 1, sizeof(*out->members));
		for (size_t i = 0; i < grp->nmembers; i++) {
			gm_member *mm = grp->members[i];
			if (member && mm != m)
				continue;
			mk_group_member_info *mi = &out->members[out->nmembers++];
			mi->name = mk_xstrdup(mm->name);
			mi->ntopics = mm->ntopics;
			mi->topics = mk_xcalloc(mm->ntopics ? mm->ntopics : 1, sizeof(char *));
			for (size_t k = 0; k < mm->ntopics; k++)
				mi->topics[k] = mk_xstrdup(mm->topics[k]);
			mi->last_seen_ms = mm->last_seen_ms;
			mi->nparts = mm->nparts;
			for (size_t k = 0; k < mm->nparts; k++)
				add_part(g, out, &alloc, mm->parts[k].topic,
					 mm->parts[k].partition, mm->name,
					 mm->parts[k].position,
					 committed_of(grp, mm->parts[k].topic,
						      mm->parts[k].partition));
		}
		if (!member) {
			size_t owned = out->nparts;
			for (size_t i = 0; i < grp->ncommits; i++) {
				bool seen = false;
				for (size_t k = 0; k < owned && !seen; k++)
					seen = out->parts[k].partition == grp->commits[i].partition &&
					       !strcmp(out->parts[k].topic, grp->commits[i].topic);
				if (!seen)
					add_part(g, out, &alloc, grp->commits[i].topic,
						 grp->commits[i].partition, NULL, -1,
						 grp->commits[i].offset);
			}
		}
		if (out->nparts)
			qsort(out->parts, out->nparts, sizeof(*out->parts), cmp_part_info);
	}
	pthread_mutex_unlock(&g->lock);
	return err;
}

void mk_group_info_free(mk_group_info *info)
{
	for (size_t i = 0; i < info->nmembers; i++) {
		for (size_t k = 0; k < info->members[i].ntopics; k++)
			free(info->members[i].topics[k]);
		free(info->members[i].topics);
		free(info->members[i].name);
	}
	free(info->members);
	for (size_t i = 0; i < info->nparts; i++) {
		free(info->parts[i].topic);
		free(info->parts[i].owner);
	}
	free(info->parts);
	memset(info, 0, sizeof(*info));
}

