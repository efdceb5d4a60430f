/*
 * txn.c — the transaction coordinator (txn.h).
 */
#include "txn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "failpoint.h"
#include "parse.h"
#include "topic_name.h"
#include "xalloc.h"


typedef struct {
	char *topic;
	int partition;
} tx_part;

typedef struct {
	char *group;
	char *topic;
	int partition;
	int64_t offset;
} tx_off;

typedef struct {
	char *id;
	int64_t pid;
	int16_t epoch;
	mk_txn_state state;
	int64_t start_ms;
	tx_part *parts;          /* sorted by (topic, partition) */
	size_t nparts;
	tx_off *offs;            /* sorted by (group, topic, partition) */
	size_t noffs;
	int inflight;            /* writes between begin_write and end_write */
} tx_entry;

struct mk_txns {
	mk_cluster *c;
	mk_groups *groups;
	pthread_mutex_t write_lock;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	tx_entry **v;            /* sorted by id; Dead ones too */
	size_t n;
	int64_t next_pid;
	bool have_topic;
	_Atomic bool loaded;     /* the log was read */
	bool recover_ok;         /* finishing prepared ones may wait for acks */
	bool recovered;          /* ... and they were (both under write_lock) */
	pthread_t recoverer;
	bool recoverer_started;

	pthread_t ticker;
	bool ticker_started;
	bool stop;               /* with lock and changed */
};

static const char *const state_names[] = {
	[MK_TXN_EMPTY] = "Empty",
	[MK_TXN_ONGOING] = "Ongoing",
	[MK_TXN_PREPARE_COMMIT] = "PrepareCommit",
	[MK_TXN_PREPARE_ABORT] = "PrepareAbort",
	[MK_TXN_COMPLETE_COMMIT] = "CompleteCommit",
	[MK_TXN_COMPLETE_ABORT] = "CompleteAbort",
	[MK_TXN_DEAD] = "Dead",
};

const char *mk_txn_state_name(mk_txn_state s)
{
	return (unsigned)s <= MK_TXN_DEAD ? state_names[s] : "?";
}

static bool is_prepared(mk_txn_state s)
{
	return s == MK_TXN_PREPARE_COMMIT || s == MK_TXN_PREPARE_ABORT;
}

static int64_t now_ms(mk_txns *t)
{
	return mk_clock_now(&t->c->clock);
}

/* ---- entries ------------------------------------------------------------ */

static void entry_clear_txn(tx_entry *e)
{
	for (size_t i = 0; i < e->nparts; i++)
		free(e->parts[i].topic);
	for (size_t i = 0; i < e->noffs; i++) {
		free(e->offs[i].group);
		free(e->offs[i].topic);
	}
	free(e->parts);
	free(e->offs);
	e->parts = NULL;
	e->offs = NULL;
	e->nparts = e->noffs = 0;
}

static void entry_free(tx_entry *e)
{
	if (!e)
		return;
	entry_clear_txn(e);
	free(e->id);
	free(e);
}

/* A deep copy of the persistent fields (inflight is not copied). */
static tx_entry *entry_copy(const tx_entry *e)
{
	tx_entry *c = mk_xcalloc(1, sizeof(*c));
	c->id = mk_xstrdup(e->id);
	c->pid = e->pid;
	c->epoch = e->epoch;
	c->state = e->state;
	c->start_ms = e->start_ms;
	c->nparts = e->nparts;
	c->parts = mk_xcalloc(e->nparts ? e->nparts : 1, sizeof(*c->parts));
	for (size_t i = 0; i < e->nparts; i++)
		c->parts[i] = (tx_part){ mk_xstrdup(e->parts[i].topic), e->parts[i].partition };
	c->noffs = e->noffs;
	c->offs = mk_xcalloc(e->noffs ? e->noffs : 1, sizeof(*c->offs));
	for (size_t i = 0; i < e->noffs; i++)
		c->offs[i] = (tx_off){ mk_xstrdup(e->offs[i].group),
				       mk_xstrdup(e->offs[i].topic),
				       e->offs[i].partition, e->offs[i].offset };
	return c;
}

/* Move the persistent fields of src into dst (src is freed). */
static void entry_take(tx_entry *dst, tx_entry *src)
{
	entry_clear_txn(dst);
	dst->pid = src->pid;
	dst->epoch = src->epoch;
	dst->state = src->state;
	dst->start_ms = src->start_ms;
	dst->parts = src->parts;
	dst->nparts = src->nparts;
	dst->offs = src->offs;
	dst->noffs = src->noffs;
	src->parts = NULL;
	src->offs = NULL;
	src->nparts = src->noffs = 0;
	entry_free(src);
}

static tx_entry *find(mk_txns *t, const char *id, size_t *pos)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(t->v[mid]->id, id);
		if (!c) {
			if (pos)
				*pos = mid;
			return t->v[mid];
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (pos)
		*pos = lo;
	return NULL;
}

/* A live (not Dead) entry or NULL. Under lock. */
static tx_entry *find_live(mk_txns *t, const char *id)
{
	tx_entry *e = find(t, id, NULL);
	return e && e->state != MK_TXN_DEAD ? e : NULL;
}

static void insert(mk_txns *t, tx_entry *e)
{
	size_t pos;
	find(t, e->id, &pos);
	t->v = mk_xrealloc(t->v, (t->n + 1) * sizeof(*t->v));
	memmove(t->v + pos + 1, t->v + pos, (t->n - pos) * sizeof(*t->v));
	t->v[pos] = e;
	t->n++;
	if (e->pid >= t->next_pid)
		t->next_pid = e->pid + 1;
}

static int part_cmp(const char *t1, int p1, const char *t2, int p2)
{
	int c = strcmp(t1, t2);
	return c ? c : (p1 > p2) - (p1 < p2);
}

static bool has_part(const tx_entry *e, const char *topic, int part, size_t *pos)
{
	size_t i = 0;
	while (i < e->nparts && part_cmp(e->parts[i].topic, e->parts[i].partition,
					 topic, part) < 0)
		i++;
	*pos = i;
	return i < e->nparts && !part_cmp(e->parts[i].topic, e->parts[i].partition,
					  topic, part);
}

static void add_part(tx_entry *e, const char *topic, int part)
{
	size_t pos;
	if (has_part(e, topic, part, &pos))
		return;
	e->parts = mk_xrealloc(e->parts, (e->nparts + 1) * sizeof(*e->parts));
	memmove(e->parts + pos + 1, e->parts + pos, (e->nparts - pos) * sizeof(*e->parts));
	e->parts[pos] = (tx_part){ mk_xstrdup(topic), part };
	e->nparts++;
}

static int off_cmp(const tx_off *o, const char *g, const char *topic, int part)
{
	int c = strcmp(o->group, g);
	return c ? c : part_cmp(o->topic, o->partition, topic, part);
}

static void add_off(tx_entry *e, const char *g, const char *topic, int part,
		    int64_t offset)
{
	size_t i = 0;
	while (i < e->noffs && off_cmp(&e->offs[i], g, topic, part) < 0)
		i++;
	if (i < e->noffs && !off_cmp(&e->offs[i], g, topic, part)) {
		e->offs[i].offset = offset;
		return;
	}
	e->offs = mk_xrealloc(e->offs, (e->noffs + 1) * sizeof(*e->offs));
	memmove(e->offs + i + 1, e->offs + i, (e->noffs - i) * sizeof(*e->offs));
	e->offs[i] = (tx_off){ mk_xstrdup(g), mk_xstrdup(topic), part, offset };
	e->noffs++;
}

/* ---- the record ------------------------------------------------------------ */

static void format_value(const tx_entry *e, mk_strbuf *out)
{
	mk_strbuf_addf(out, "pid=%lld epoch=%d state=%s start=%lld",
		       (long long)e->pid, e->epoch, state_names[e->state],
		       (long long)e->start_ms);
	for (size_t i = 0; i < e->nparts; i++)
		mk_strbuf_addf(out, "%s%s/%d", i ? "," : " parts=", e->parts[i].topic,
			       e->parts[i].partition);
	for (size_t i = 0; i < e->noffs; i++)
		mk_strbuf_addf(out, "%s%s:%s/%d:%lld", i ? "," : " offsets=",
			       e->offs[i].group, e->offs[i].topic, e->offs[i].partition,
			       (long long)e->offs[i].offset);
}

/* "T/P" into a topic name and a partition; false when malformed. */
static bool parse_tp(char *s, char **topic, int *part)
{
	char *slash = strrchr(s, '/');
	int64_t p;
	if (!slash)
		return false;
	*slash = '\0';
	if (!mk_topic_name_valid(s) || !mk_parse_range(slash + 1, 0, INT32_MAX, &p))
		return false;
	*topic = s;
	*part = (int)p;
	return true;
}

/* Parse a record value into e (id already set); false when malformed. */
static bool parse_value(tx_entry *e, const char *value, size_t len)
{
	char *copy = mk_xmalloc(len + 1), *save = NULL;
	memcpy(copy, value, len);
	copy[len] = '\0';
	bool ok = true, have_pid = false, have_state = false;
	for (char *w = strtok_r(copy, " ", &save); w && ok; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');
		if (!eq) {
			ok = false;
			break;
		}
		*eq = '\0';
		char *v = eq + 1;
		int64_t n;
		if (!strcmp(w, "pid")) {
			ok = mk_parse_range(v, 0, INT64_MAX, &n);
			e->pid = n;
			have_pid = true;
		} else if (!strcmp(w, "epoch")) {
			ok = mk_parse_range(v, 0, INT16_MAX, &n);
			e->epoch = (int16_t)n;
		} else if (!strcmp(w, "start")) {
			ok = mk_parse_i64(v, &n);
			e->start_ms = n;
		} else if (!strcmp(w, "state")) {
			ok = false;
			for (int s = 0; s <= MK_TXN_DEAD && !ok; s++)
				if (!strcmp(v, state_names[s])) {
					e->state = (mk_txn_state)s;
					ok = have_state = true;
				}
		} else if (!strcmp(w, "parts")) {
			char *s2 = NULL;
			for (char *tp = strtok_r(v, ",", &s2); tp && ok; tp = strtok_r(NULL, ",", &s2)) {
				char *topic;
				int part;
				if ((ok = parse_tp(tp, &topic, &part)))
					add_part(e, topic, part);
			}
		} else if (!strcmp(w, "offsets")) {
			char *s2 = NULL;
			for (char *o = strtok_r(v, ",", &s2); o && ok; o = strtok_r(NULL, ",", &s2)) {
				char *c1 = strchr(o, ':'), *c2 = c1 ? strrchr(c1 + 1, ':') : NULL;
				char *topic;
				int part;
				int64_t off;
				if (!c1 || !c2 || c2 == c1) {
					ok = false;
					break;
				}
				*c1 = *c2 = '\0';
				if ((ok = parse_tp(c1 + 1, &topic, &part) &&
					  mk_parse_range(c2 + 1, 0, INT64_MAX, &off)))
					add_off(e, o, topic, part, off);
			}
		} else {
			ok = false;
		}
	}
	free(copy);
	return ok && have_pid && have_state;
}

/* Create __transaction_state if needed. Under write_lock. */
static mk_err ensure_topic(mk_txns *t, mk_strbuf *why)
{
	if (t->have_topic)
		return MK_OK;
	mk_topic *tp = mk_cluster_topic(t->c, MK_TXN_TOPIC);
	if (!tp) {
		int rf = (int)t->c->cfg.offsets_topic_replication_factor;
		if (rf > t->c->nbrokers)
			rf = t->c->nbrokers;
		const char *ov[] = { "cleanup.policy=compact" };
		mk_err err = mk_cluster_create_topic(t->c, MK_TXN_TOPIC, 1, rf, ov, 1, why);
		if (err && err != MK_TOPIC_ALREADY_EXISTS)
			return err;
	} else {
		mk_topic_put(tp);
	}
	t->have_topic = true;
	return MK_OK;
}

/* Append e's state as one record with acks=all. Under write_lock. */
static mk_err persist(mk_txns *t, const tx_entry *e, mk_strbuf *why)
{
	mk_err err = ensure_topic(t, why);
	if (err)
		return err;
	mk_topic *tp = mk_cluster_topic(t->c, MK_TXN_TOPIC);
	mk_partition *p = tp ? mk_topic_partition(tp, 0) : NULL;
	if (!p) {
		mk_topic_put(tp);
		if (why)
			mk_strbuf_addstr(why, "the transaction log " MK_TXN_TOPIC " is missing");
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	static const mk_batch_meta meta = {
		.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
		.producer_epoch = -1, .base_sequence = -1, .txn_id = { NULL, -1 },
	};
	mk_strbuf v = MK_STRBUF_INIT;
	format_value(e, &v);
	mk_batch_builder b;
	mk_builder_init(&b, &meta);
	mk_builder_add(&b, now_ms(t), mk_bytes_of(e->id, strlen(e->id)),
		       mk_bytes_of(v.buf, v.len), NULL, 0);
	mk_builder_finish(&b);
	mk_produce_args a = { .acks = -1, .seq = -1, .count = b.count };
	mk_produce_result res;
	err = mk_partition_produce(p, (uint8_t *)b.frame.buf, b.frame.len, &a,
				   NULL, &res, why);
	mk_builder_release(&b);
	mk_strbuf_release(&v);
	mk_topic_put(tp);
	if (err && why)
		mk_strbuf_addstr(why, " (writing to " MK_TXN_TOPIC ")");
	return err;
}

/* Persist the copy n, then install it in e (under lock). n is consumed. */
static mk_err commit_change(mk_txns *t, tx_entry *e, tx_entry *n, mk_strbuf *why)
{
	mk_err err = persist(t, n, why);
	if (err) {
		entry_free(n);
		return err;
	}
	pthread_mutex_lock(&t->lock);
	entry_take(e, n);
	pthread_mutex_unlock(&t->lock);
	return MK_OK;
}

/* ---- load ------------------------------------------------------------------- */

static void load_record(mk_txns *t, const mk_record_view *rec);

static void replay_one(void *arg, const mk_record_view *rec)
{
	load_record(arg, rec);
}

static void load_record(mk_txns *t, const mk_record_view *rec)
{
	if (rec->key.len <= 0 || rec->key.len > MK_TOPIC_NAME_MAX || rec->value.len < 0)
		return;
	char id[MK_TOPIC_NAME_MAX + 1];
	memcpy(id, rec->key.ptr, (size_t)rec->key.len);
	id[rec->key.len] = '\0';
	tx_entry *n = mk_xcalloc(1, sizeof(*n));
	n->id = mk_xstrdup(id);
	if (!mk_topic_name_valid(id) ||
	    !parse_value(n, (const char *)rec->value.ptr, (size_t)rec->value.len)) {
		mk_errlog_add(&t->c->errlog, mk_wall_ms(), NULL, MK_CORRUPT_MESSAGE,
			      MK_TXN_TOPIC " offset %lld: malformed record of %s, ignored",
			      (long long)rec->offset, id);
		entry_free(n);
		return;
	}
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find(t, id, NULL);
	if (e) {
		entry_take(e, n);
		if (e->pid >= t->next_pid)
			t->next_pid = e->pid + 1;
	} else {
		insert(t, n);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Read the transaction log to its HW. Under write_lock. */
static mk_err load(mk_txns *t)
{
	mk_topic *tp = mk_cluster_topic(t->c, MK_TXN_TOPIC);
	mk_partition *p = tp ? mk_topic_partition(tp, 0) : NULL;
	if (!p) {
		mk_topic_put(tp);
		return MK_OK;
	}
	t->have_topic = true;
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	mk_err err = pi.leader < 0 ? MK_LEADER_NOT_AVAILABLE : MK_OK;
	if (!err)
		err = mk_partition_replay(p, pi.log_start, replay_one, t);
	mk_topic_put(tp);
	return err;
}

/* ---- ending a transaction ----------------------------------------------------- */

/* Wait until no write of e is in flight. Under write_lock, not lock. */
static void drain_writes(mk_txns *t, tx_entry *e)
{
	pthread_mutex_lock(&t->lock);
	while (e->inflight > 0)
		pthread_cond_wait(&t->changed, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

static mk_err write_marker(mk_txns *t, const tx_entry *e, const tx_part *tp,
			   bool commit, mk_strbuf *why)
{
	mk_topic *topic = mk_cluster_topic(t->c, tp->topic);
	mk_partition *p = topic ? mk_topic_partition(topic, tp->partition) : NULL;
	if (!p) {
		/* The topic was deleted: there is nothing left to mark. */
		mk_topic_put(topic);
		return MK_OK;
	}
	mk_batch_meta meta = {
		.flags = commit ? MK_BATCH_COMMIT_MARKER : MK_BATCH_ABORT_MARKER,
		.base_offset = 0, .leader_epoch = 0, .producer_id = e->pid,
		.producer_epoch = e->epoch, .base_sequence = -1,
		.txn_id = { NULL, -1 },
	};
	mk_strbuf frame = MK_STRBUF_INIT;
	mk_frame_marker(&frame, &meta, now_ms(t));
	mk_produce_args a = { .acks = -1, .seq = -1, .count = 1 };
	mk_produce_result res;
	mk_err err = mk_partition_produce(p, (uint8_t *)frame.buf, frame.len, &a,
					  NULL, &res, why);
	mk_strbuf_release(&frame);
	mk_topic_put(topic);
	if (err && why)
		mk_strbuf_addf(why, " (the %s marker of transaction %s on %s/%d)",
			       commit ? "COMMIT" : "ABORT", e->id, tp->topic,
			       tp->partition);
	return err;
}

/* Commit the staged offsets, one call per group. */
static mk_err commit_offsets(mk_txns *t, const tx_entry *e, mk_strbuf *why)
{
	size_t i = 0;
	while (i < e->noffs) {
		size_t j = i;
		while (j < e->noffs && !strcmp(e->offs[j].group, e->offs[i].group))
			j++;
		mk_commit_entry *ce = mk_xcalloc(j - i, sizeof(*ce));
		for (size_t k = i; k < j; k++)
			ce[k - i] = (mk_commit_entry){ e->offs[k].topic,
						       e->offs[k].partition,
						       e->offs[k].offset };
		mk_strbuf gwhy = MK_STRBUF_INIT;
		mk_coord_call call = { 0 };
		mk_err err = t->groups
			? mk_group_commit_offsets(t->groups, e->offs[i].group, ce,
						  j - i, &call, &gwhy)
			: MK_GROUP_ID_NOT_FOUND;
		if (!err)
			err = mk_coord_call_wait(&call, &gwhy);
		free(ce);
		if (err == MK_GROUP_ID_NOT_FOUND || err == MK_UNKNOWN_TOPIC_OR_PARTITION) {
			/* Gone since they were staged: the transaction
			 * commits without them, and /errors says so. */
			mk_errlog_add(&t->c->errlog, now_ms(t), NULL, err,
				      "transaction %s: offsets of group %s not committed: %s",
				      e->id, e->offs[i].group, gwhy.buf);
			err = MK_OK;
		}
		if (err && why)
			mk_strbuf_addf(why, "committing the offsets of group %s: %s",
				       e->offs[i].group, gwhy.buf);
		mk_strbuf_release(&gwhy);
		if (err)
			return err;
		i = j;
	}
	return MK_OK;
}

/*
 * Steps 2-4 of an end for a prepared e (txn.h). Under write_lock; no
 * write is in flight (Prepare refuses new ones).
 */
static mk_err complete(mk_txns *t, tx_entry *e, mk_strbuf *why)
{
	bool commit = e->state == MK_TXN_PREPARE_COMMIT;
	pthread_mutex_lock(&t->lock);
	tx_entry *snap = entry_copy(e);
	pthread_mutex_unlock(&t->lock);
	mk_err err = MK_OK;
	for (size_t i = 0; i < snap->nparts && !err; i++) {
		err = write_marker(t, snap, &snap->parts[i], commit, why);
		if (!err)
			MK_FAILPOINT("txn.end.after-marker");
	}
	if (!err && commit) {
		err = commit_offsets(t, snap, why);
		if (!err)
			MK_FAILPOINT("txn.end.after-offsets");
	}
	if (!err) {
		entry_clear_txn(snap);
		snap->state = commit ? MK_TXN_COMPLETE_COMMIT : MK_TXN_COMPLETE_ABORT;
		err = commit_change(t, e, snap, why);
		snap = NULL;
		if (!err)
			MK_FAILPOINT("txn.end.after-complete");
	}
	entry_free(snap);
	return err;
}

/*
 * End e's open transaction with a decision, at epoch `epoch` (the current
 * one, or the new one of an init or a timeout). Under write_lock.
 */
static mk_err end_locked(mk_txns *t, tx_entry *e, bool commit, int16_t epoch,
			 mk_strbuf *why)
{
	drain_writes(t, e);
	pthread_mutex_lock(&t->lock);
	mk_txn_state st = e->state;
	pthread_mutex_unlock(&t->lock);
	if (is_prepared(st)) {
		if ((st == MK_TXN_PREPARE_COMMIT) != commit && epoch == e->epoch) {
			if (why)
				mk_strbuf_addf(why, "transaction %s is in %s: it can only be finished that way",
					       e->id, state_names[st]);
			return MK_INVALID_TXN_STATE;
		}
		mk_err err = complete(t, e, why);
		if (err || epoch == e->epoch)
			return err;
		st = e->state;
	}
	if (st != MK_TXN_ONGOING) {
		if (epoch == e->epoch)
			return MK_OK;
		pthread_mutex_lock(&t->lock);
		tx_entry *n = entry_copy(e);
		pthread_mutex_unlock(&t->lock);
		n->epoch = epoch;
		return commit_change(t, e, n, why);
	}
	pthread_mutex_lock(&t->lock);
	tx_entry *n = entry_copy(e);
	pthread_mutex_unlock(&t->lock);
	n->epoch = epoch;
	n->state = commit ? MK_TXN_PREPARE_COMMIT : MK_TXN_PREPARE_ABORT;
	if (!commit) {
		/* An abort drops the staged offsets. */
		for (size_t i = 0; i < n->noffs; i++) {
			free(n->offs[i].group);
			free(n->offs[i].topic);
		}
		n->noffs = 0;
	}
	mk_err err = commit_change(t, e, n, why);
	if (err)
		return err;
	MK_FAILPOINT("txn.end.after-prepare");
	return complete(t, e, why);
}

/* ---- open / close / tick -------------------------------------------------------- */

/* Mount recovery: finish every prepared transaction. Under write_lock. */
static void finish_prepared(mk_txns *t)
{
	for (size_t i = 0; i < t->n; i++) {
		tx_entry *e = t->v[i];
		if (!is_prepared(e->state))
			continue;
		mk_strbuf w = MK_STRBUF_INIT;
		mk_err err = complete(t, e, &w);
		if (err)
			mk_errlog_add(&t->c->errlog, mk_wall_ms(), NULL, err,
				      "transaction %s stays %s after recovery: %s", e->id,
				      state_names[e->state], w.buf);
		mk_strbuf_release(&w);
	}
}

/*
 * Read the log once (and again after a failed try), then — once recovery
 * may wait for acknowledgements (mk_txns_recover) — finish every prepared
 * transaction: all its markers (and offsets) and its Complete record. One
 * that cannot be finished now (a partition without a leader) stays
 * prepared, in /errors. Without a leader for the log itself the
 * coordinator waits: every change is LEADER_NOT_AVAILABLE until a later
 * call reads it. Under write_lock.
 */
static mk_err ensure_loaded(mk_txns *t, mk_strbuf *why)
{
	if (t->loaded) {
		if (t->recover_ok && !t->recovered) {
			t->recovered = true;
			finish_prepared(t);
		}
		return MK_OK;
	}
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		entry_free(t->v[i]);
	t->n = 0;
	t->next_pid = MK_TXN_PID_BASE;
	pthread_mutex_unlock(&t->lock);
	mk_err err = load(t);
	if (err) {
		if (why)
			mk_strbuf_addstr(why, "the transaction log " MK_TXN_TOPIC
					 " cannot be read now (no leader)");
		return err;
	}
	t->loaded = true;
	if (t->recover_ok && !t->recovered) {
		t->recovered = true;
		finish_prepared(t);
	}
	return MK_OK;
}

/* Readers: load if nobody is changing anything (never wait). */
static void try_load(mk_txns *t)
{
	if (t->loaded)      /* set once, under write_lock; a stale false only tries */
		return;
	if (pthread_mutex_trylock(&t->write_lock) == 0) {
		ensure_loaded(t, NULL);
		pthread_mutex_unlock(&t->write_lock);
	}
}

/* Take write_lock with the log read; on failure nothing is held. */
static mk_err lock_loaded(mk_txns *t, mk_strbuf *why)
{
	pthread_mutex_lock(&t->write_lock);
	mk_err err = ensure_loaded(t, why);
	if (err)
		pthread_mutex_unlock(&t->write_lock);
	return err;
}

mk_err mk_txns_open(mk_cluster *c, mk_groups *groups, mk_txns **out,
		    mk_strbuf *why)
{
	(void)why;
	mk_txns *t = mk_xcalloc(1, sizeof(*t));
	t->c = c;
	t->groups = groups;
	t->next_pid = MK_TXN_PID_BASE;
	pthread_mutex_init(&t->write_lock, NULL);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->changed, NULL);
	pthread_mutex_lock(&t->write_lock);
	mk_strbuf w = MK_STRBUF_INIT;
	mk_err err = ensure_loaded(t, &w);
	if (err)
		mk_errlog_add(&c->errlog, mk_wall_ms(), NULL, err,
			      "transaction coordinator: %s; transactions wait for it", w.buf);
	mk_strbuf_release(&w);
	pthread_mutex_unlock(&t->write_lock);
	*out = t;
	return MK_OK;
}

void mk_txns_recover(mk_txns *t)
{
	pthread_mutex_lock(&t->write_lock);
	t->recover_ok = true;
	mk_strbuf w = MK_STRBUF_INIT;
	if (ensure_loaded(t, &w))
		mk_errlog_add(&t->c->errlog, mk_wall_ms(), NULL, MK_LEADER_NOT_AVAILABLE,
			      "transaction coordinator: %s; recovery waits for it", w.buf);
	mk_strbuf_release(&w);
	pthread_mutex_unlock(&t->write_lock);
}

static void *recoverer_main(void *arg)
{
	mk_txns_recover(arg);
	return NULL;
}

static void *ticker_main(void *arg)
{
	mk_txns *t = arg;
	pthread_mutex_lock(&t->lock);
	while (!t->stop && !t->c->shutting_down) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t ns = ts.tv_nsec + 100 * 1000000LL;
		ts.tv_sec += ns / 1000000000LL;
		ts.tv_nsec = ns % 1000000000LL;
		pthread_cond_timedwait(&t->changed, &t->lock, &ts);
		if (t->stop || t->c->shutting_down)
			break;
		pthread_mutex_unlock(&t->lock);
		mk_strbuf why = MK_STRBUF_INIT;
		mk_txns_expire(t, NULL, &why);
		mk_strbuf_release(&why);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

void mk_txns_start(mk_txns *t)
{
	if (!t->recoverer_started &&
	    pthread_create(&t->recoverer, NULL, recoverer_main, t) == 0)
		t->recoverer_started = true;
	if (!t->c->cfg.auto_replication || t->ticker_started)
		return;
	if (pthread_create(&t->ticker, NULL, ticker_main, t) == 0)
		t->ticker_started = true;
}

void mk_txns_close(mk_txns *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_broadcast(&t->changed);
	pthread_mutex_unlock(&t->lock);
	if (t->ticker_started)
		pthread_join(t->ticker, NULL);
	if (t->recoverer_started)
		pthread_join(t->recoverer, NULL);
	for (size_t i = 0; i < t->n; i++)
		entry_free(t->v[i]);
	free(t->v);
	pthread_cond_destroy(&t->changed);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->write_lock);
	free(t);
}

/* ---- ids ------------------------------------------------------------------------- */

static mk_err no_such(const char *id, mk_strbuf *why)
{
	if (why)
		mk_strbuf_addf(why, "no transactional id %s (mkdir /transactions/%s first)",
			       id, id);
	return MK_TRANSACTIONAL_ID_NOT_FOUND;
}

mk_err mk_txn_create(mk_txns *t, const char *id, mk_strbuf *why)
{
	if (!mk_topic_name_valid(id)) {
		if (why)
			mk_strbuf_addf(why, "bad transactional id '%s': 1 to 249 of [A-Za-z0-9._-]", id);
		return MK_INVALID_REQUEST;
	}
	mk_err lerr = lock_loaded(t, why);
	if (lerr)
		return lerr;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find(t, id, NULL);
	mk_err err = MK_OK;
	tx_entry *n = NULL;
	if (e && e->state != MK_TXN_DEAD) {
		if (why)
			mk_strbuf_addf(why, "transactional id %s already exists", id);
		err = MK_TRANSACTION_ALREADY_EXISTS;
	} else if (e && e->epoch == INT16_MAX) {
		if (why)
			mk_strbuf_addf(why, "transactional id %s has used every epoch", id);
		err = MK_INVALID_REQUEST;
	} else {
		n = mk_xcalloc(1, sizeof(*n));
		n->id = mk_xstrdup(id);
		/* A removed id continues its producer id at the next epoch. */
		n->pid = e ? e->pid : t->next_pid;
		n->epoch = e ? (int16_t)(e->epoch + 1) : 0;
		n->state = MK_TXN_EMPTY;
		n->start_ms = -1;
	}
	pthread_mutex_unlock(&t->lock);
	if (!err) {
		err = persist(t, n, why);
		if (!err) {
			pthread_mutex_lock(&t->lock);
			if (e) {
				entry_take(e, n);
			} else {
				insert(t, n);
			}
			pthread_mutex_unlock(&t->lock);
		} else {
			entry_free(n);
		}
	}
	pthread_mutex_unlock(&t->write_lock);
	return err;
}

mk_err mk_txn_delete(mk_txns *t, const char *id, mk_strbuf *why)
{
	mk_err lerr = lock_loaded(t, why);
	if (lerr)
		return lerr;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, id);
	mk_err err = MK_OK;
	tx_entry *n = NULL;
	if (!e) {
		err = no_such(id, why);
	} else if (e->state == MK_TXN_ONGOING || is_prepared(e->state) || e->inflight) {
		if (why)
			mk_strbuf_addf(why, "transactional id %s has a transaction %s (commit or abort it first)",
				       id, state_names[e->state]);
		err = MK_CONCURRENT_TRANSACTIONS;
	} else {
		n = entry_copy(e);
		entry_clear_txn(n);
		n->state = MK_TXN_DEAD;
	}
	pthread_mutex_unlock(&t->lock);
	if (!err)
		err = commit_change(t, e, n, why);
	pthread_mutex_unlock(&t->write_lock);
	return err;
}

bool mk_txn_exists(mk_txns *t, const char *id)
{
	try_load(t);
	pthread_mutex_lock(&t->lock);
	bool ok = find_live(t, id) != NULL;
	pthread_mutex_unlock(&t->lock);
	return ok;
}

size_t mk_txn_names(mk_txns *t, char ***names)
{
	try_load(t);
	pthread_mutex_lock(&t->lock);
	*names = mk_xcalloc(t->n ? t->n : 1, sizeof(**names));
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i]->state != MK_TXN_DEAD)
			(*names)[k++] = mk_xstrdup(t->v[i]->id);
	pthread_mutex_unlock(&t->lock);
	return k;
}

/* ---- init, end, offsets, expiry ------------------------------------------------- */

mk_err mk_txn_init(mk_txns *t, const char *id, mk_strbuf *why)
{
	mk_err lerr = lock_loaded(t, why);
	if (lerr)
		return lerr;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, id);
	pthread_mutex_unlock(&t->lock);
	mk_err err;
	if (!e) {
		err = no_such(id, why);
	} else if (e->epoch == INT16_MAX) {
		if (why)
			mk_strbuf_addf(why, "transactional id %s has used every epoch", id);
		err = MK_INVALID_REQUEST;
	} else {
		err = end_locked(t, e, false, (int16_t)(e->epoch + 1), why);
	}
	pthread_mutex_unlock(&t->write_lock);
	return err;
}

mk_err mk_txn_end(mk_txns *t, const char *id, bool commit, mk_strbuf *why)
{
	mk_err lerr = lock_loaded(t, why);
	if (lerr)
		return lerr;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, id);
	pthread_mutex_unlock(&t->lock);
	mk_err err = e ? end_locked(t, e, commit, e->epoch, why) : no_such(id, why);
	pthread_mutex_unlock(&t->write_lock);
	return err;
}

/* Refuse a new write or offset of e while an end is unfinished. */
static mk_err not_prepared(const tx_entry *e, mk_strbuf *why)
{
	if (!is_prepared(e->state))
		return MK_OK;
	if (why)
		mk_strbuf_addf(why, "transaction %s is %s and not finished (write to commit or abort again to finish it)",
			       e->id, state_names[e->state]);
	return MK_CONCURRENT_TRANSACTIONS;
}

/* A copy of e with a transaction begun (if none is open). Under lock. */
static tx_entry *begun(mk_txns *t, const tx_entry *e)
{
	tx_entry *n = entry_copy(e);
	if (n->state != MK_TXN_ONGOING) {
		entry_clear_txn(n);
		n->state = MK_TXN_ONGOING;
		n->start_ms = now_ms(t);
	}
	return n;
}

mk_err mk_txn_stage_offsets(mk_txns *t, const char *id,
			    const mk_txn_offset *o, size_t n, mk_strbuf *why)
{
	for (size_t i = 0; i < n; i++) {
		if (!t->groups || !mk_group_exists(t->groups, o[i].group)) {
			if (why)
				mk_strbuf_addf(why, "no group %s", o[i].group);
			return MK_GROUP_ID_NOT_FOUND;
		}
		mk_topic *tp = mk_cluster_topic(t->c, o[i].topic);
		bool ok = tp && mk_topic_partition(tp, o[i].partition);
		mk_topic_put(tp);
		if (!ok) {
			if (why)
				mk_strbuf_addf(why, "no partition %s/%d", o[i].topic, o[i].partition);
			return MK_UNKNOWN_TOPIC_OR_PARTITION;
		}
		if (o[i].offset < 0) {
			if (why)
				mk_strbuf_addf(why, "offset %lld is negative", (long long)o[i].offset);
			return MK_OFFSET_OUT_OF_RANGE;
		}
	}
	mk_err lerr = lock_loaded(t, why);
	if (lerr)
		return lerr;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, id);
	mk_err err = e ? not_prepared(e, why) : no_such(id, why);
	tx_entry *nn = NULL;
	if (!err) {
		nn = begun(t, e);
		for (size_t i = 0; i < n; i++)
			add_off(nn, o[i].group, o[i].topic, o[i].partition, o[i].offset);
	}
	pthread_mutex_unlock(&t->lock);
	if (!err)
		err = commit_change(t, e, nn, why);
	pthread_mutex_unlock(&t->write_lock);
	return err;
}

mk_err mk_txns_expire(mk_txns *t, int *aborted, mk_strbuf *why)
{
	int count = 0;
	mk_err first = MK_OK;
	if (aborted)
		*aborted = 0;
	mk_err lerr = lock_loaded(t, why);
	if (lerr)
		return lerr;
	int64_t now = now_ms(t), timeout = t->c->cfg.transaction_timeout_ms;
	for (size_t i = 0; i < t->n; i++) {
		pthread_mutex_lock(&t->lock);
		tx_entry *e = t->v[i];
		bool due = e->state == MK_TXN_ONGOING &&
			   mk_deadline(e->start_ms, timeout) <= now &&
			   e->epoch < INT16_MAX;
		pthread_mutex_unlock(&t->lock);
		if (!due)
			continue;
		mk_strbuf w = MK_STRBUF_INIT;
		mk_err err = end_locked(t, e, false, (int16_t)(e->epoch + 1), &w);
		if (err) {
			mk_errlog_add(&t->c->errlog, now, NULL, err,
				      "transaction %s timed out, its abort failed: %s",
				      e->id, w.buf);
			if (!first) {
				first = err;
				if (why)
					mk_strbuf_add(why, w.buf, w.len);
			}
		} else {
			count++;
		}
		mk_strbuf_release(&w);
	}
	pthread_mutex_unlock(&t->write_lock);
	if (aborted)
		*aborted = count;
	return first;
}

mk_err mk_txn_describe(mk_txns *t, const char *id, mk_txn_info *out,
		       mk_strbuf *why)
{
	memset(out, 0, sizeof(*out));
	try_load(t);
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, id);
	if (!e) {
		pthread_mutex_unlock(&t->lock);
		return no_such(id, why);
	}
	out->pid = e->pid;
	out->epoch = e->epoch;
	out->state = e->state;
	out->start_ms = e->start_ms;
	out->nparts = e->nparts;
	out->parts = mk_xcalloc(e->nparts ? e->nparts : 1, sizeof(*out->parts));
	for (size_t i = 0; i < e->nparts; i++) {
		out->parts[i].topic = mk_xstrdup(e->parts[i].topic);
		out->parts[i].partition = e->parts[i].partition;
	}
	out->noffsets = e->noffs;
	out->offsets = mk_xcalloc(e->noffs ? e->noffs : 1, sizeof(*out->offsets));
	for (size_t i = 0; i < e->noffs; i++) {
		out->offsets[i].group = mk_xstrdup(e->offs[i].group);
		out->offsets[i].topic = mk_xstrdup(e->offs[i].topic);
		out->offsets[i].partition = e->offs[i].partition;
		out->offsets[i].offset = e->offs[i].offset;
	}
	pthread_mutex_unlock(&t->lock);
	return MK_OK;
}

void mk_txn_info_free(mk_txn_info *info)
{
	for (size_t i = 0; i < info->nparts; i++)
		free(info->parts[i].topic);
	for (size_t i = 0; i < info->noffsets; i++) {
		free(info->offsets[i].group);
		free(info->offsets[i].topic);
	}
	free(info->parts);
	free(info->offsets);
	memset(info, 0, sizeof(*info));
}

/* ---- the producer's side ------------------------------------------------------------ */

mk_err mk_txn_producer(mk_txns *t, const char *id, int64_t *pid,
		       int16_t *epoch, mk_strbuf *why)
{
	try_load(t);
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, id);
	if (e) {
		*pid = e->pid;
		*epoch = e->epoch;
	}
	pthread_mutex_unlock(&t->lock);
	return e ? MK_OK : no_such(id, why);
}

/* Under lock. */
static mk_err check_locked(tx_entry *e, const char *id, int64_t pid,
			   int16_t epoch, mk_strbuf *why)
{
	if (!e || e->pid != pid) {
		if (why)
			mk_strbuf_addf(why, "transactional id %s no longer exists", id);
		return MK_TRANSACTIONAL_ID_NOT_FOUND;
	}
	if (e->epoch != epoch) {
		if (why)
			mk_strbuf_addf(why, "transactional id %s is at epoch %d, this descriptor has epoch %d: fenced",
				       id, e->epoch, epoch);
		return MK_PRODUCER_FENCED;
	}
	return MK_OK;
}

mk_err mk_txn_check(mk_txns *t, const char *id, int64_t pid, int16_t epoch,
		    mk_strbuf *why)
{
	pthread_mutex_lock(&t->lock);
	mk_err err = check_locked(find_live(t, id), id, pid, epoch, why);
	pthread_mutex_unlock(&t->lock);
	return err;
}

mk_err mk_txn_begin_write(mk_txns *t, const char *id, int64_t pid,
			  int16_t epoch, const char *topic, int part,
			  mk_strbuf *why)
{
	mk_err lerr = lock_loaded(t, why);
	if (lerr)
		return lerr;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, id);
	mk_err err = check_locked(e, id, pid, epoch, why);
	if (!err)
		err = not_prepared(e, why);
	tx_entry *n = NULL;
	size_t pos;
	if (!err && (e->state != MK_TXN_ONGOING || !has_part(e, topic, part, &pos))) {
		n = begun(t, e);
		add_part(n, topic, part);
	}
	pthread_mutex_unlock(&t->lock);
	if (n)
		err = commit_change(t, e, n, why);
	if (!err) {
		pthread_mutex_lock(&t->lock);
		e->inflight++;
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&t->write_lock);
	return err;
}

void mk_txn_end_write(mk_txns *t, const char *id)
{
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find(t, id, NULL);
	if (e && e->inflight > 0)
		e->inflight--;
	pthread_cond_broadcast(&t->changed);
	pthread_mutex_unlock(&t->lock);
}
