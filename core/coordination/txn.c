/*
 * txn.c — the transaction coordinator (txn.h).
 */
#include "txn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coordinator.h"
#include "failpoint.h"
#include "parse.h"
#include "search.h"
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
	mk_coord *rt;            /* the runtime: its turn serialises changes */
	pthread_mutex_t lock;
	tx_entry **v;            /* sorted by id; Dead ones too */
	size_t n;
	int64_t next_pid;
	_Atomic bool loaded;     /* the log was read */
	int32_t coord_epoch;     /* the leader epoch of __transaction_state
				  * it was read at: the markers' coordinator
				  * epoch, as Kafka's; under the turn */
	bool recover_due;        /* recovery waits for the log (under the turn) */
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

typedef struct {
	mk_txns *t;
	const char *id;
} id_key;

static int cmp_id(const void *ctx, size_t i)
{
	const id_key *k = ctx;
	return strcmp(k->t->v[i]->id, k->id);
}

static tx_entry *find(mk_txns *t, const char *id, size_t *pos)
{
	id_key k = { t, id };
	size_t at;
	bool found = mk_search_sorted(t->n, cmp_id, &k, &at);
	if (pos)
		*pos = at;
	return found ? t->v[at] : NULL;
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

/* Read the transaction log to its HW. Under the turn. */
static mk_err load(mk_txns *t)
{
	int32_t epoch = 0;
	mk_err err = mk_coord_replay(t->rt, 0, replay_one, t, &epoch);
	if (!err)
		t->coord_epoch = epoch;
	/* No log yet: nothing to read. */
	return err == MK_UNKNOWN_TOPIC_OR_PARTITION ? MK_OK : err;
}

/* ---- loading, under the runtime's turn ----------------------------------------- */

/* Read the log once (and again after a failed try). Without a leader for
 * it the coordinator waits: every change is LEADER_NOT_AVAILABLE until a
 * later call reads it. */
static mk_err ensure_loaded(mk_txns *t, mk_strbuf *why)
{
	if (t->loaded)
		return MK_OK;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		entry_free(t->v[i]);
	t->n = 0;
	t->next_pid = MK_TXN_PID_BASE;
	pthread_mutex_unlock(&t->lock);
	mk_err err = load(t);
	if (err)
		return mk_error(why, err, "the transaction log " MK_TXN_TOPIC
				" cannot be read now (no leader)");
	t->loaded = true;
	return MK_OK;
}

/* Readers: load if nobody is changing anything (never wait). */
static void try_load(mk_txns *t)
{
	if (t->loaded)      /* set once, under the turn; a stale false only tries */
		return;
	if (mk_coord_trylock(t->rt)) {
		ensure_loaded(t, NULL);
		mk_coord_unlock(t->rt);
	}
}

/* ---- operations (coordinator.h) ------------------------------------------------- */

/* The steps of an end (txn.h): decide (record Prepare, or only a new
 * epoch), the markers, the offsets (one group a round), Complete, and the
 * new epoch of an init or a timeout that found the transaction prepared. */
typedef enum { END_DECIDE, END_MARKERS, END_OFFSETS, END_COMPLETE, END_EPOCH,
	       END_DONE } end_step;

typedef enum { SWEEP_NONE, SWEEP_EXPIRE, SWEEP_RECOVER } sweep_kind;

typedef struct {
	mk_coord_op base;        /* first */
	mk_txns *t;
	char *id;
	tx_entry *n;             /* the state this round records and installs */
	/* an end of id */
	bool ending, commit;
	int16_t epoch;
	end_step step, did;      /* the next step; the one this round took */
	size_t goff;             /* END_OFFSETS: the first offset of the group */
	tx_entry *snap;          /* the prepared state the end finishes */
	/* a sweep over ids, one end at a time (id: the last one picked) */
	sweep_kind sweep;
	int64_t now;
	mk_err first;
	mk_strbuf first_why;
	/* begin_write, stage_offsets */
	int64_t pid;
	int16_t pepoch;
	char *topic;
	int part;
	mk_txn_offset *offs;
	size_t noffs;
} tx_op;

static void tx_release(mk_coord_op *base)
{
	tx_op *op = (tx_op *)base;
	free(op->id);
	entry_free(op->n);
	entry_free(op->snap);
	free(op->topic);
	for (size_t i = 0; i < op->noffs; i++) {
		free((char *)op->offs[i].group);
		free((char *)op->offs[i].topic);
	}
	free(op->offs);
	mk_strbuf_release(&op->first_why);
	free(op);
}

static tx_op *tx_new(mk_txns *t, const char *id)
{
	tx_op *op = mk_xcalloc(1, sizeof(*op));
	op->t = t;
	op->id = id ? mk_xstrdup(id) : NULL;
	return op;
}

static mk_err tx_submit(tx_op *op, const mk_coord_op_kind *kind,
			mk_coord_call *call, mk_strbuf *why)
{
	op->base.kind = kind;
	return mk_coord_submit(op->t->rt, &op->base, call, why);
}

/* Record n as the id's state (installed by tx_install once acknowledged). */
static void tx_record(tx_op *op, tx_entry *n)
{
	entry_free(op->n);
	op->n = n;
	mk_strbuf v = MK_STRBUF_INIT;
	format_value(n, &v);
	mk_coord_op_record(&op->base, 0, n->id, v.buf);
	mk_strbuf_release(&v);
}

/* Install the recorded state: the id's entry takes it, or it is new. */
static void tx_install(tx_op *op)
{
	mk_txns *t = op->t;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find(t, op->n->id, NULL);
	if (e)
		entry_take(e, op->n);
	else
		insert(t, op->n);
	op->n = NULL;
	pthread_mutex_unlock(&t->lock);
}

/* A copy of id's live entry, or NULL. */
static tx_entry *live_copy(mk_txns *t, const char *id)
{
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, id);
	tx_entry *c = e ? entry_copy(e) : NULL;
	if (c)
		c->inflight = e->inflight;
	pthread_mutex_unlock(&t->lock);
	return c;
}

static mk_err no_such(const char *id, mk_strbuf *why)
{
	return mk_error(why, MK_TRANSACTIONAL_ID_NOT_FOUND,
			"no transactional id %s (mkdir /transactions/%s first)", id, id);
}

static const mk_coord_op_kind recover_kind, expire_kind;

/* A sweep over the ids (txn.h): timeouts, or mount recovery. */
static tx_op *sweep_new(mk_txns *t, sweep_kind sweep)
{
	tx_op *op = tx_new(t, NULL);
	op->sweep = sweep;
	op->now = now_ms(t);
	op->base.kind = sweep == SWEEP_RECOVER ? &recover_kind : &expire_kind;
	return op;
}

/* Every operation's first step: the log read, and mount recovery ahead
 * of the first change once it is due (mk_txns_recover). */
static mk_err tx_ready(tx_op *op, mk_strbuf *why)
{
	mk_txns *t = op->t;
	mk_err err = ensure_loaded(t, why);
	if (err || !t->recover_due || op->base.kind == &recover_kind)
		return err;
	t->recover_due = false;
	mk_coord_push_front(t->rt, &sweep_new(t, SWEEP_RECOVER)->base);
	mk_coord_op_retry(&op->base);
	return MK_OK;
}

/* ---- ending a transaction --------------------------------------------------------- */

static mk_err write_marker(tx_op *op, const tx_part *tp, mk_strbuf *why)
{
	mk_txns *t = op->t;
	mk_topic *topic = mk_cluster_topic(t->c, tp->topic);
	if (!topic || !mk_topic_partition(topic, tp->partition)) {
		/* The topic was deleted: there is nothing left to mark. */
		mk_topic_put(topic);
		return MK_OK;
	}
	mk_batch_meta meta = {
		.flags = op->commit ? MK_BATCH_COMMIT_MARKER : MK_BATCH_ABORT_MARKER,
		.base_offset = 0, .leader_epoch = 0, .producer_id = op->snap->pid,
		.producer_epoch = op->snap->epoch, .base_sequence = -1,
		.coordinator_epoch = t->coord_epoch,
	};
	mk_strbuf frame = MK_STRBUF_INIT;
	mk_frame_marker(&frame, &meta, now_ms(t));
	mk_err err = mk_coord_op_append(&op->base, topic, tp->partition,
					(uint8_t *)frame.buf, frame.len, why);
	mk_strbuf_release(&frame);
	if (err)
		mk_strbuf_addf(why, " (the %s marker of transaction %s on %s/%d)",
			       op->commit ? "COMMIT" : "ABORT", op->id, tp->topic,
			       tp->partition);
	return err;
}

/* END_OFFSETS: commit the staged offsets of the group at goff. */
static mk_err commit_group(tx_op *op, mk_strbuf *why)
{
	const tx_entry *s = op->snap;
	size_t i = op->goff, j = i;
	while (j < s->noffs && !strcmp(s->offs[j].group, s->offs[i].group))
		j++;
	mk_commit_entry *ce = mk_xcalloc(j - i, sizeof(*ce));
	for (size_t k = i; k < j; k++)
		ce[k - i] = (mk_commit_entry){ s->offs[k].topic, s->offs[k].partition,
					       s->offs[k].offset };
	/* Its result, now or when the call completes, is apply's. */
	mk_strbuf *gwhy = &op->base.sub_why;
	mk_strbuf_reset(gwhy);
	op->base.sub_result = op->t->groups
		? mk_group_commit_offsets(op->t->groups, s->offs[i].group, ce, j - i,
					  mk_coord_op_sub(&op->base), gwhy)
		: mk_error(gwhy, MK_GROUP_ID_NOT_FOUND, "no group coordinator");
	free(ce);
	(void)why;
	return MK_OK;
}

/* One round of the end of op->id (see end_step). */
static mk_err end_prepare(tx_op *op, mk_strbuf *why)
{
	mk_txns *t = op->t;
	tx_entry *e = live_copy(t, op->id);
	mk_err err = MK_OK;
	op->did = op->step;
	if (!e)
		return no_such(op->id, why);
	if (op->step == END_DECIDE && op->epoch < 0)
		op->epoch = e->epoch;    /* an end: the epoch its turn finds */
	if (op->step == END_DECIDE) {
		if (e->inflight) {
			/* A write of it is being appended: after it lands. */
			mk_coord_op_retry(&op->base);
		} else if (is_prepared(e->state)) {
			if ((e->state == MK_TXN_PREPARE_COMMIT) != op->commit &&
			    op->epoch == e->epoch) {
				err = mk_error(why, MK_INVALID_TXN_STATE,
					       "transaction %s is in %s: it can only be finished that way",
					       e->id, state_names[e->state]);
			} else {
				op->commit = e->state == MK_TXN_PREPARE_COMMIT;
				op->snap = e;
				e = NULL;
				op->step = op->did = END_MARKERS;
			}
		} else if (e->state != MK_TXN_ONGOING) {
			if (op->epoch != e->epoch) {
				e->epoch = op->epoch;
				tx_record(op, e);
				e = NULL;
				op->did = END_EPOCH;
			} else {
				op->did = END_DONE;
			}
		} else {
			e->epoch = op->epoch;
			e->state = op->commit ? MK_TXN_PREPARE_COMMIT : MK_TXN_PREPARE_ABORT;
			if (!op->commit) {
				/* An abort drops the staged offsets. */
				for (size_t i = 0; i < e->noffs; i++) {
					free(e->offs[i].group);
					free(e->offs[i].topic);
				}
				e->noffs = 0;
			}
			op->snap = entry_copy(e);
			tx_record(op, e);
			e = NULL;
		}
	}
	if (!err && op->did == END_MARKERS) {
		for (size_t i = 0; i < op->snap->nparts && !err; i++) {
			err = write_marker(op, &op->snap->parts[i], why);
			if (!err)
				MK_FAILPOINT("txn.end.after-marker");
		}
	} else if (!err && op->did == END_OFFSETS) {
		err = commit_group(op, why);
	} else if (!err && op->did == END_COMPLETE) {
		tx_entry *n = entry_copy(op->snap);
		entry_clear_txn(n);
		n->state = op->commit ? MK_TXN_COMPLETE_COMMIT : MK_TXN_COMPLETE_ABORT;
		tx_record(op, n);
	} else if (!err && op->did == END_EPOCH && op->step == END_EPOCH) {
		e->epoch = op->epoch;
		tx_record(op, e);
		e = NULL;
	}
	entry_free(e);
	return err;
}

/* The end's round was acknowledged (or failed: err): the next step. */
static mk_err end_apply(tx_op *op, mk_err err, mk_strbuf *why)
{
	mk_txns *t = op->t;
	if (err || op->base.retry)
		return err;
	switch (op->did) {
	case END_DECIDE:       /* Prepare recorded */
		tx_install(op);
		MK_FAILPOINT("txn.end.after-prepare");
		op->step = END_MARKERS;
		break;
	case END_MARKERS:
		op->step = op->commit && op->snap->noffs ? END_OFFSETS : END_COMPLETE;
		break;
	case END_OFFSETS: {
		err = op->base.sub_result;
		const char *g = op->snap->offs[op->goff].group;
		if (err == MK_GROUP_ID_NOT_FOUND || err == MK_UNKNOWN_TOPIC_OR_PARTITION) {
			/* Gone since they were staged: the transaction
			 * commits without them, and /errors says so. */
			mk_errlog_add(&t->c->errlog, now_ms(t), NULL, err,
				      "transaction %s: offsets of group %s not committed: %s",
				      op->id, g, op->base.sub_why.buf);
			err = MK_OK;
		}
		if (err)
			return mk_error(why, err, "committing the offsets of group %s: %s", g,
					op->base.sub_why.buf);
		while (op->goff < op->snap->noffs && !strcmp(op->snap->offs[op->goff].group, g))
			op->goff++;
		if (op->goff == op->snap->noffs) {
			MK_FAILPOINT("txn.end.after-offsets");
			op->step = END_COMPLETE;
		}
		break;
	}
	case END_COMPLETE: {
		tx_install(op);
		MK_FAILPOINT("txn.end.after-complete");
		pthread_mutex_lock(&t->lock);
		tx_entry *e = find_live(t, op->id);
		bool bump = e && e->epoch != op->epoch;
		pthread_mutex_unlock(&t->lock);
		op->step = bump ? END_EPOCH : END_DONE;
		break;
	}
	case END_EPOCH:
		tx_install(op);
		op->step = END_DONE;
		break;
	default:
		op->step = END_DONE;
	}
	return MK_OK;
}

/* Start an end of id: decision commit, at epoch (the current one, or the
 * new one of an init or a timeout). */
static void end_begin(tx_op *op, const char *id, bool commit, int16_t epoch)
{
	if (id != op->id) {
		free(op->id);
		op->id = mk_xstrdup(id);
	}
	op->ending = true;
	op->commit = commit;
	op->epoch = epoch;
	op->step = END_DECIDE;
	op->goff = 0;
	entry_free(op->snap);
	op->snap = NULL;
}

/* init, end: the end's rounds after a check of the id. */
static mk_err end_kind_prepare(mk_coord_op *base, mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	mk_err err = tx_ready(op, why);
	if (err || base->retry)
		return err;
	if (!op->ending) {
		/* init: the check, and the end at the next epoch */
		tx_entry *e = live_copy(op->t, op->id);
		if (!e)
			return no_such(op->id, why);
		int16_t ep = e->epoch;
		entry_free(e);
		if (ep == INT16_MAX)
			return mk_error(why, MK_INVALID_REQUEST,
					"transactional id %s has used every epoch", op->id);
		end_begin(op, op->id, false, (int16_t)(ep + 1));
	}
	return end_prepare(op, why);
}

static mk_err end_kind_apply(mk_coord_op *base, mk_err err, bool *more,
			     mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	err = end_apply(op, err, why);
	*more = !err && op->step != END_DONE;
	return err;
}

static const mk_coord_op_kind end_kind = { "transaction end", end_kind_prepare,
					   end_kind_apply, tx_release };

mk_err mk_txn_init(mk_txns *t, const char *id, mk_coord_call *call, mk_strbuf *why)
{
	return tx_submit(tx_new(t, id), &end_kind, call, why);
}

mk_err mk_txn_end(mk_txns *t, const char *id, bool commit, mk_coord_call *call,
		  mk_strbuf *why)
{
	tx_op *op = tx_new(t, id);
	/* The current epoch is the one when its turn comes. */
	op->ending = true;
	op->commit = commit;
	op->epoch = -1;
	op->step = END_DECIDE;
	return tx_submit(op, &end_kind, call, why);
}

/* ---- sweeps: timeouts and mount recovery ------------------------------------------ */

/* The next id after op->id (the last one picked) the sweep ends, with
 * its end begun; false when none is left. */
static bool sweep_next(tx_op *op)
{
	mk_txns *t = op->t;
	int64_t timeout = t->c->cfg.transaction_timeout_ms;
	pthread_mutex_lock(&t->lock);
	size_t i = 0;
	if (op->id && find(t, op->id, &i))
		i++;
	tx_entry *pick = NULL;
	for (; i < t->n && !pick; i++) {
		tx_entry *e = t->v[i];
		if (op->sweep == SWEEP_RECOVER ? is_prepared(e->state)
		    : e->state == MK_TXN_ONGOING && e->epoch < INT16_MAX &&
		      mk_deadline(e->start_ms, timeout) <= op->now)
			pick = e;
	}
	if (pick) {
		if (op->sweep == SWEEP_RECOVER)
			end_begin(op, pick->id, pick->state == MK_TXN_PREPARE_COMMIT, pick->epoch);
		else
			end_begin(op, pick->id, false, (int16_t)(pick->epoch + 1));
	}
	pthread_mutex_unlock(&t->lock);
	return pick != NULL;
}

static mk_err sweep_prepare(mk_coord_op *base, mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	mk_err err = tx_ready(op, why);
	if (err || base->retry)
		return err;
	if (!op->ending && !sweep_next(op))
		return MK_OK;    /* nothing (more) to end: done */
	return end_prepare(op, why);
}

static mk_err sweep_apply(mk_coord_op *base, mk_err err, bool *more, mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	mk_txns *t = op->t;
	*more = false;
	if (!op->ending) {
		/* This round found nothing (more) to end, or the log unread. */
		if (err && op->sweep == SWEEP_RECOVER) {
			mk_errlog_add(&t->c->errlog, mk_wall_ms(), NULL, err,
				      "transaction coordinator: %s; recovery waits for it", why->buf);
			t->recover_due = true;   /* the first change that reads it */
			return MK_OK;
		}
		if (err || !op->first)
			return err;
		mk_strbuf_reset(why);
		mk_strbuf_add(why, op->first_why.buf, op->first_why.len);
		return op->first;
	}
	err = end_apply(op, err, why);
	if (!err && op->step != END_DONE) {
		*more = true;
		return MK_OK;
	}
	if (err && op->sweep == SWEEP_RECOVER)
		mk_errlog_add(&t->c->errlog, mk_wall_ms(), NULL, err,
			      "transaction %s stays prepared after recovery: %s", op->id, why->buf);
	else if (err)
		mk_errlog_add(&t->c->errlog, op->now, NULL, err,
			      "transaction %s timed out, its abort failed: %s", op->id, why->buf);
	if (err && !op->first) {
		op->first = err;
		mk_strbuf_add(&op->first_why, why->buf, why->len);
	} else if (!err) {
		op->base.counted++;
	}
	/* On to the next id. */
	op->ending = false;
	*more = true;
	return MK_OK;
}

static const mk_coord_op_kind expire_kind = { "transaction timeout", sweep_prepare,
					      sweep_apply, tx_release };
static const mk_coord_op_kind recover_kind = { "transaction recovery", sweep_prepare,
					       sweep_apply, tx_release };

mk_err mk_txns_expire(mk_txns *t, int *aborted, mk_coord_call *call, mk_strbuf *why)
{
	if (aborted)
		*aborted = 0;
	tx_op *op = sweep_new(t, SWEEP_EXPIRE);
	op->base.count_to = aborted;
	return mk_coord_submit(t->rt, &op->base, call, why);
}

/* The periodic task (auto mode): one timeout sweep at a time. */
static mk_coord_op *tick(void *arg)
{
	return &sweep_new(arg, SWEEP_EXPIRE)->base;
}

void mk_txns_recover(mk_txns *t)
{
	mk_coord_submit(t->rt, &sweep_new(t, SWEEP_RECOVER)->base, NULL, NULL);
}
/* ---- ids, staged offsets, registered partitions: one record each --------------------- */

/* The kinds whose round records op->n (from prepare) and installs it. */
static mk_err install_apply(mk_coord_op *base, mk_err err, bool *more, mk_strbuf *why)
{
	(void)why;
	tx_op *op = (tx_op *)base;
	*more = false;
	if (!err && op->n)
		tx_install(op);
	return err;
}

static mk_err create_prepare(mk_coord_op *base, mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	mk_txns *t = op->t;
	mk_err err = tx_ready(op, why);
	if (err || base->retry)
		return err;
	if ((err = mk_coord_ensure_topic(t->rt, NULL, why)))
		return err;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find(t, op->id, NULL);
	if (e && e->state != MK_TXN_DEAD) {
		err = mk_error(why, MK_TRANSACTION_ALREADY_EXISTS,
			       "transactional id %s already exists", op->id);
	} else if (e && e->epoch == INT16_MAX) {
		err = mk_error(why, MK_INVALID_REQUEST,
			       "transactional id %s has used every epoch", op->id);
	} else {
		tx_entry *n = mk_xcalloc(1, sizeof(*n));
		n->id = mk_xstrdup(op->id);
		/* A removed id continues its producer id at the next epoch. */
		n->pid = e ? e->pid : t->next_pid;
		n->epoch = e ? (int16_t)(e->epoch + 1) : 0;
		n->state = MK_TXN_EMPTY;
		n->start_ms = -1;
		pthread_mutex_unlock(&t->lock);
		tx_record(op, n);
		return MK_OK;
	}
	pthread_mutex_unlock(&t->lock);
	return err;
}

static const mk_coord_op_kind create_kind = { "transactional id create", create_prepare,
					      install_apply, tx_release };

mk_err mk_txn_create(mk_txns *t, const char *id, mk_coord_call *call, mk_strbuf *why)
{
	if (!mk_topic_name_valid(id))
		return mk_error(why, MK_INVALID_REQUEST,
				"bad transactional id '%s': 1 to 249 of [A-Za-z0-9._-]", id);
	return tx_submit(tx_new(t, id), &create_kind, call, why);
}

static mk_err delete_prepare(mk_coord_op *base, mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	mk_err err = tx_ready(op, why);
	if (err || base->retry)
		return err;
	tx_entry *e = live_copy(op->t, op->id);
	if (!e)
		return no_such(op->id, why);
	if (e->state == MK_TXN_ONGOING || is_prepared(e->state) || e->inflight) {
		err = mk_error(why, MK_CONCURRENT_TRANSACTIONS,
			       "transactional id %s has a transaction %s (commit or abort it first)",
			       op->id, state_names[e->state]);
		entry_free(e);
		return err;
	}
	entry_clear_txn(e);
	e->state = MK_TXN_DEAD;
	tx_record(op, e);
	return MK_OK;
}

static const mk_coord_op_kind delete_kind = { "transactional id delete", delete_prepare,
					      install_apply, tx_release };

mk_err mk_txn_delete(mk_txns *t, const char *id, mk_coord_call *call, mk_strbuf *why)
{
	return tx_submit(tx_new(t, id), &delete_kind, call, why);
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

/* Refuse a new write or offset of e while an end is unfinished. */
static mk_err not_prepared(const tx_entry *e, mk_strbuf *why)
{
	if (!is_prepared(e->state))
		return MK_OK;
	return mk_error(why, MK_CONCURRENT_TRANSACTIONS,
			"transaction %s is %s and not finished (write to commit or abort again to finish it)",
			e->id, state_names[e->state]);
}

/* e (a copy) with a transaction begun, if none is open. */
static void begin(mk_txns *t, tx_entry *e)
{
	if (e->state != MK_TXN_ONGOING) {
		entry_clear_txn(e);
		e->state = MK_TXN_ONGOING;
		e->start_ms = now_ms(t);
	}
}

static mk_err stage_prepare(mk_coord_op *base, mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	mk_err err = tx_ready(op, why);
	if (err || base->retry)
		return err;
	tx_entry *e = live_copy(op->t, op->id);
	err = e ? not_prepared(e, why) : no_such(op->id, why);
	if (err) {
		entry_free(e);
		return err;
	}
	begin(op->t, e);
	for (size_t i = 0; i < op->noffs; i++)
		add_off(e, op->offs[i].group, op->offs[i].topic, op->offs[i].partition,
			op->offs[i].offset);
	tx_record(op, e);
	return MK_OK;
}

static const mk_coord_op_kind stage_kind = { "transactional offsets", stage_prepare,
					     install_apply, tx_release };

mk_err mk_txn_stage_offsets(mk_txns *t, const char *id, const mk_txn_offset *o,
			    size_t n, mk_coord_call *call, mk_strbuf *why)
{
	for (size_t i = 0; i < n; i++) {
		if (!t->groups || !mk_group_exists(t->groups, o[i].group))
			return mk_error(why, MK_GROUP_ID_NOT_FOUND, "no group %s", o[i].group);
		mk_topic *tp = mk_cluster_topic(t->c, o[i].topic);
		bool ok = tp && mk_topic_partition(tp, o[i].partition);
		mk_topic_put(tp);
		if (!ok)
			return mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "no partition %s/%d",
					o[i].topic, o[i].partition);
		if (o[i].offset < 0)
			return mk_error(why, MK_OFFSET_OUT_OF_RANGE, "offset %lld is negative",
					(long long)o[i].offset);
	}
	tx_op *op = tx_new(t, id);
	op->offs = mk_xcalloc(n ? n : 1, sizeof(*op->offs));
	for (size_t i = 0; i < n; i++)
		op->offs[i] = (mk_txn_offset){ mk_xstrdup(o[i].group), mk_xstrdup(o[i].topic),
					       o[i].partition, o[i].offset };
	op->noffs = n;
	return tx_submit(op, &stage_kind, call, why);
}
/* ---- open / close ---------------------------------------------------------------- */

static mk_coord_op *tick(void *arg);

mk_err mk_txns_open(mk_cluster *c, mk_groups *groups, mk_txns **out,
		    mk_strbuf *why)
{
	(void)why;
	mk_txns *t = mk_xcalloc(1, sizeof(*t));
	t->c = c;
	t->groups = groups;
	t->next_pid = MK_TXN_PID_BASE;
	pthread_mutex_init(&t->lock, NULL);
	mk_coord_def def = {
		.topic = MK_TXN_TOPIC,
		.partitions = 1,
		.replication = (int)c->cfg.offsets_topic_replication_factor,
		.tick = tick, .arg = t,
	};
	t->rt = mk_coord_new(c, &def);
	mk_coord_lock(t->rt);
	mk_strbuf w = MK_STRBUF_INIT;
	mk_err err = ensure_loaded(t, &w);
	if (err)
		mk_errlog_add(&c->errlog, mk_wall_ms(), NULL, err,
			      "transaction coordinator: %s; transactions wait for it", w.buf);
	mk_strbuf_release(&w);
	mk_coord_unlock(t->rt);
	*out = t;
	return MK_OK;
}

void mk_txns_start(mk_txns *t)
{
	mk_coord_start(t->rt);
	mk_txns_recover(t);
}

void mk_txns_close(mk_txns *t)
{
	if (!t)
		return;
	mk_coord_free(t->rt);
	for (size_t i = 0; i < t->n; i++)
		entry_free(t->v[i]);
	free(t->v);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

mk_coord *mk_txns_runtime(mk_txns *t)
{
	return t->rt;
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
	if (!e || e->pid != pid)
		return mk_error(why, MK_TRANSACTIONAL_ID_NOT_FOUND,
				"transactional id %s no longer exists", id);
	if (e->epoch != epoch)
		return mk_error(why, MK_PRODUCER_FENCED,
				"transactional id %s is at epoch %d, this descriptor has epoch %d: fenced",
				id, e->epoch, epoch);
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

static mk_err register_prepare(mk_coord_op *base, mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	mk_err err = tx_ready(op, why);
	if (err || base->retry)
		return err;
	mk_txns *t = op->t;
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find_live(t, op->id);
	err = check_locked(e, op->id, op->pid, op->pepoch, why);
	if (!err)
		err = not_prepared(e, why);
	size_t pos;
	tx_entry *n = NULL;
	if (!err && (e->state != MK_TXN_ONGOING || !has_part(e, op->topic, op->part, &pos))) {
		n = entry_copy(e);
		begin(t, n);
		add_part(n, op->topic, op->part);
	}
	pthread_mutex_unlock(&t->lock);
	if (n)
		tx_record(op, n);
	return err;
}

/* Registered (or already): the write is in flight until end_write. */
static mk_err register_apply(mk_coord_op *base, mk_err err, bool *more, mk_strbuf *why)
{
	tx_op *op = (tx_op *)base;
	err = install_apply(base, err, more, why);
	if (err)
		return err;
	pthread_mutex_lock(&op->t->lock);
	tx_entry *e = find_live(op->t, op->id);
	if (e)
		e->inflight++;
	pthread_mutex_unlock(&op->t->lock);
	return MK_OK;
}

static const mk_coord_op_kind register_kind = { "transactional write", register_prepare,
						register_apply, tx_release };

mk_err mk_txn_begin_write(mk_txns *t, const char *id, int64_t pid,
			  int16_t epoch, const char *topic, int part,
			  mk_coord_call *call, mk_strbuf *why)
{
	tx_op *op = tx_new(t, id);
	op->pid = pid;
	op->pepoch = epoch;
	op->topic = mk_xstrdup(topic);
	op->part = part;
	return tx_submit(op, &register_kind, call, why);
}

void mk_txn_end_write(mk_txns *t, const char *id)
{
	pthread_mutex_lock(&t->lock);
	tx_entry *e = find(t, id, NULL);
	if (e && e->inflight > 0)
		e->inflight--;
	pthread_mutex_unlock(&t->lock);
	/* An end put off until the write landed looks again. */
	mk_coord_poke(t->rt);
}
