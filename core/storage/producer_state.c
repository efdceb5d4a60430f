#include "producer_state.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "search.h"
#include "xalloc.h"

void mk_pstate_init(mk_producer_state *ps)
{
	memset(ps, 0, sizeof(*ps));
}

void mk_pstate_free(mk_producer_state *ps)
{
	free(ps->v);
	mk_aborted_free(&ps->aborted);
	mk_pstate_init(ps);
}

void mk_pstate_reset(mk_producer_state *ps)
{
	ps->n = 0;
	ps->covered_to = 0;
	mk_aborted_clear(&ps->aborted);
}

typedef struct {
	const mk_producer_state *ps;
	int64_t pid;
} pid_key;

static int cmp_pid(const void *ctx, size_t i)
{
	const pid_key *k = ctx;
	int64_t at = k->ps->v[i].pid;
	return (at > k->pid) - (at < k->pid);
}

/* The entry of pid, or NULL; *pos is where pid is or would go. */
static mk_producer_entry *lookup(const mk_producer_state *ps, int64_t pid,
				 size_t *pos)
{
	pid_key k = { ps, pid };
	size_t at;
	bool found = mk_search_sorted(ps->n, cmp_pid, &k, &at);
	if (pos)
		*pos = at;
	return found ? &ps->v[at] : NULL;
}

const mk_producer_entry *mk_pstate_find(const mk_producer_state *ps, int64_t pid)
{
	return lookup(ps, pid, NULL);
}

mk_err mk_pstate_check(const mk_producer_state *ps, int64_t pid, int16_t epoch,
		       int32_t base_seq, int32_t count,
		       const mk_seq_entry **dup, mk_strbuf *why)
{
	*dup = NULL;
	const mk_producer_entry *e = lookup(ps, pid, NULL);
	/* 64-bit: seq= near INT32_MAX must not overflow. A batch that would
	 * run past INT32_MAX matches nothing and is never the expected one. */
	int64_t last_seq = (int64_t)base_seq + count - 1;
	if (!e || epoch > e->epoch) {
		if (base_seq == 0 && last_seq <= INT32_MAX)
			return MK_OK;
		return mk_error(why, MK_OUT_OF_ORDER_SEQUENCE_NUMBER, "producer %lld epoch %d must start at sequence 0, got %d",
				(long long)pid, epoch, base_seq);
	}
	if (epoch < e->epoch)
		return mk_error(why, MK_PRODUCER_FENCED, "producer %lld epoch %d is fenced by epoch %d",
				(long long)pid, epoch, e->epoch);
	for (int i = 0; i < e->n; i++)
		if (e->recent[i].first_seq == base_seq &&
		    e->recent[i].last_seq == last_seq) {
			*dup = &e->recent[i];
			return MK_OK;
		}
	int64_t expected = e->n ? (int64_t)e->recent[e->n - 1].last_seq + 1 : 0;
	if (base_seq == expected && last_seq <= INT32_MAX)
		return MK_OK;
	return mk_error(why, MK_OUT_OF_ORDER_SEQUENCE_NUMBER, "producer %lld epoch %d: sequence %d, expected %lld%s",
			(long long)pid, epoch, base_seq, (long long)expected,
			base_seq < expected ? " (a retry older than the last 5 batches, or not an exact retry)" : " (a gap)");
}

int32_t mk_pstate_next_seq(const mk_producer_state *ps, int64_t pid,
			   int16_t epoch)
{
	const mk_producer_entry *e = lookup(ps, pid, NULL);
	if (!e || epoch != e->epoch || !e->n)
		return 0;
	return e->recent[e->n - 1].last_seq + 1;
}

static mk_producer_entry *entry_for(mk_producer_state *ps, int64_t pid)
{
	size_t pos;
	mk_producer_entry *e = lookup(ps, pid, &pos);
	if (e)
		return e;
	if (ps->n == ps->alloc) {
		size_t n = ps->alloc ? ps->alloc * 2 : 8;
		mk_producer_entry *v = mk_xrealloc(ps->v, n * sizeof(*v));
		ps->v = v;
		ps->alloc = n;
	}
	memmove(ps->v + pos + 1, ps->v + pos, (ps->n - pos) * sizeof(*ps->v));
	ps->n++;
	e = &ps->v[pos];
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->epoch = -1;
	e->txn_first = -1;
	return e;
}

static void push(mk_producer_entry *e, const mk_seq_entry *s)
{
	if (e->n == MK_PRODUCER_WINDOW) {
		memmove(e->recent, e->recent + 1, (MK_PRODUCER_WINDOW - 1) * sizeof(*e->recent));
		e->n--;
	}
	e->recent[e->n++] = *s;
}

void mk_pstate_apply(mk_producer_state *ps, const mk_batch_view *b)
{
	int64_t next = mk_batch_next_offset(b);
	if (next > ps->covered_to)
		ps->covered_to = next;
	if (b->meta.producer_id < 0)
		return;
	if (mk_batch_is_control(b)) {
		/* A marker ends the producer's transaction here; one of a
		 * newer epoch (init, a timeout) fences the older writers. */
		mk_producer_entry *e = entry_for(ps, b->meta.producer_id);
		if (b->meta.producer_epoch > e->epoch) {
			e->epoch = b->meta.producer_epoch;
			e->n = 0;
		}
		int64_t first = e->txn_first;
		e->txn_first = -1;
		if (first >= 0 && (b->meta.flags & MK_BATCH_ABORT_MARKER)) {
			/* Kafka's entry keeps the LSO once this one ended. */
			int64_t open = mk_pstate_first_open(ps);
			mk_aborted_txn t = {
				.pid = b->meta.producer_id, .first = first,
				.last = b->meta.base_offset,
				.lso = open <= b->meta.base_offset ? open
					: b->meta.base_offset + 1,
			};
			mk_aborted_add(&ps->aborted, &t);
		}
		return;
	}
	if (b->meta.base_sequence < 0)
		return;
	mk_producer_entry *e = entry_for(ps, b->meta.producer_id);
	if (b->meta.producer_epoch != e->epoch) {
		e->epoch = b->meta.producer_epoch;
		e->n = 0;
	}
	if ((b->meta.flags & MK_BATCH_TRANSACTIONAL) && e->txn_first < 0)
		e->txn_first = b->meta.base_offset;
	mk_seq_entry s = {
		.first_seq = b->meta.base_sequence,
		/* (a frame from disk may claim anything: no overflow) */
		.last_seq = (int32_t)((int64_t)b->meta.base_sequence + b->last_offset_delta),
		.base_offset = b->meta.base_offset,
		.last_offset_delta = b->last_offset_delta,
	};
	push(e, &s);
}

int64_t mk_pstate_first_open(const mk_producer_state *ps)
{
	int64_t first = INT64_MAX;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].txn_first >= 0 && ps->v[i].txn_first < first)
			first = ps->v[i].txn_first;
	return first;
}

void mk_pstate_trim(mk_producer_state *ps, int64_t log_start)
{
	mk_aborted_trim(&ps->aborted, log_start);
}

void mk_pstate_format(const mk_producer_state *ps, mk_strbuf *out)
{
	/* Version 2 only when there are transaction lines: a state without
	 * transactions keeps the version 1 text. */
	mk_strbuf_addf(out, "producer-snapshot %d\ncovered_to %lld\n",
		       ps->aborted.n || mk_pstate_first_open(ps) != INT64_MAX ? 2 : 1,
		       (long long)ps->covered_to);
	for (size_t i = 0; i < ps->n; i++) {
		const mk_producer_entry *e = &ps->v[i];
		mk_strbuf_addf(out, "producer %lld %d", (long long)e->pid, e->epoch);
		for (int j = 0; j < e->n; j++)
			mk_strbuf_addf(out, " %d:%d:%lld:%d", e->recent[j].first_seq,
				       e->recent[j].last_seq,
				       (long long)e->recent[j].base_offset,
				       e->recent[j].last_offset_delta);
		mk_strbuf_addch(out, '\n');
	}
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].txn_first >= 0)
			mk_strbuf_addf(out, "open %lld %lld\n", (long long)ps->v[i].pid,
				       (long long)ps->v[i].txn_first);
	for (size_t i = 0; i < ps->aborted.n; i++)
		mk_strbuf_addf(out, "aborted %lld %lld %lld %lld\n",
			       (long long)ps->aborted.v[i].pid,
			       (long long)ps->aborted.v[i].first,
			       (long long)ps->aborted.v[i].last,
			       (long long)ps->aborted.v[i].lso);
}

/*
 * The snapshot's text, line by line ("producer-snapshot 1", "covered_to N",
 * then "producer PID EPOCH [FIRST:LAST:BASE:DELTA]..."), every integer
 * through core/base/parse.h with the range its field can hold, one space
 * between fields, every line ending in '\n', each producer once, at most
 * MK_PRODUCER_WINDOW batches each. Anything else: the snapshot is damaged.
 */

/* Cut the next field of *p at one of `ends` (or the end); NULL when it is
 * empty. */
static char *field(char **p, const char *ends)
{
	char *f = *p;
	size_t n = strcspn(f, ends);
	if (n == 0)
		return NULL;
	*p = f + n;
	if (**p) {
		**p = '\0';
		(*p)++;
	}
	return f;
}

/* No empty field: sep neither first, last, nor doubled. */
static bool fields_ok(const char *s, char sep)
{
	size_t n = strlen(s);
	char two[3] = { sep, sep, '\0' };
	return n > 0 && s[0] != sep && s[n - 1] != sep && !strstr(s, two);
}

static bool parse_batch(char *text, mk_seq_entry *s)
{
	if (!fields_ok(text, ':'))
		return false;
	char *p = text, *f[4];
	for (int i = 0; i < 4; i++)
		if (!(f[i] = field(&p, ":")))
			return false;
	int64_t first, last, base, delta;
	if (*p || !mk_parse_range(f[0], 0, INT32_MAX, &first) ||
	    !mk_parse_range(f[1], INT32_MIN, INT32_MAX, &last) ||
	    !mk_parse_range(f[2], 0, INT64_MAX, &base) ||
	    !mk_parse_range(f[3], 0, INT32_MAX, &delta))
		return false;
	*s = (mk_seq_entry){ (int32_t)first, (int32_t)last, base,
			     (int32_t)delta };
	return true;
}

static bool parse_producer_line(mk_producer_state *ps, char *line)
{
	if (!fields_ok(line, ' '))
		return false;
	char *p = line, *kw = field(&p, " "), *pid_s = field(&p, " ");
	char *epoch_s = field(&p, " ");
	int64_t pid, epoch;
	if (kw && !strcmp(kw, "open")) {
		/* open PID FIRST: the producer's line came before. */
		mk_producer_entry *e;
		if (!pid_s || !epoch_s || *p ||
		    !mk_parse_range(pid_s, 0, INT64_MAX, &pid) ||
		    !mk_parse_range(epoch_s, 0, INT64_MAX, &epoch) ||
		    !(e = lookup(ps, pid, NULL)) || e->txn_first >= 0)
			return false;
		e->txn_first = epoch;
		return true;
	}
	if (kw && !strcmp(kw, "aborted")) {
		/* aborted PID FIRST LAST [LSO], in increasing LAST (a
		 * snapshot of before the .txnindex files has no LSO: 0
		 * stands in, a value that can only be too low, so that a
		 * Kafka reader of the .txnindex, which stops at the first
		 * entry whose LSO reaches what it reads to, reads on) */
		char *last_s = field(&p, " "), *lso_s = field(&p, " ");
		mk_aborted_txn t;
		if (!pid_s || !epoch_s || !last_s || *p ||
		    !mk_parse_range(pid_s, 0, INT64_MAX, &t.pid) ||
		    !mk_parse_range(epoch_s, 0, INT64_MAX, &t.first) ||
		    !mk_parse_range(last_s, t.first, INT64_MAX - 1, &t.last) ||
		    (lso_s && !mk_parse_range(lso_s, 0, t.last + 1, &t.lso)) ||
		    (ps->aborted.n && ps->aborted.v[ps->aborted.n - 1].last > t.last))
			return false;
		if (!lso_s)
			t.lso = 0;
		mk_aborted_add(&ps->aborted, &t);
		return true;
	}
	if (!kw || strcmp(kw, "producer") || !pid_s || !epoch_s ||
	    !mk_parse_range(pid_s, 0, INT64_MAX, &pid) ||
	    !mk_parse_range(epoch_s, INT16_MIN, INT16_MAX, &epoch) ||
	    lookup(ps, pid, NULL))
		return false;
	mk_producer_entry *e = entry_for(ps, pid);
	e->epoch = (int16_t)epoch;
	while (*p) {
		char *b = field(&p, " ");
		mk_seq_entry s;
		if (!b || e->n == MK_PRODUCER_WINDOW || !parse_batch(b, &s))
			return false;
		push(e, &s);
	}
	return true;
}

/* The next line of *p, cut at its '\n'; NULL at the end or when the last
 * line has no newline (*bad then). */
static char *next_line(char **p, bool *bad)
{
	if (!**p)
		return NULL;
	char *nl = strchr(*p, '\n');
	if (!nl) {
		*bad = true;
		return NULL;
	}
	char *line = *p;
	*nl = '\0';
	*p = nl + 1;
	return line;
}

/* Every offset a snapshot names lies below its covered_to: the batches
 * it remembers, open transactions and aborted ones were all applied. */
static bool offsets_covered(const mk_producer_state *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		const mk_producer_entry *e = &ps->v[i];
		if (e->txn_first >= ps->covered_to)
			return false;
		for (int k = 0; k < e->n; k++) {
			const mk_seq_entry *b = &e->recent[k];
			/* base + delta >= covered_to, without overflow */
			if (b->base_offset >= ps->covered_to ||
			    b->last_offset_delta >= ps->covered_to - b->base_offset)
				return false;
		}
	}
	for (size_t i = 0; i < ps->aborted.n; i++)
		if (ps->aborted.v[i].last >= ps->covered_to)
			return false;
	return true;
}

mk_err mk_pstate_parse(mk_producer_state *ps, const char *text)
{
	mk_pstate_reset(ps);
	char *copy = mk_xstrdup(text), *p = copy;
	bool bad = false;
	char *l1 = next_line(&p, &bad), *l2 = next_line(&p, &bad);
	int64_t cov;
	if (!l1 || (strcmp(l1, "producer-snapshot 1") &&
		    strcmp(l1, "producer-snapshot 2")) || !l2 ||
	    strncmp(l2, "covered_to ", 11) ||
	    !mk_parse_range(l2 + 11, 0, INT64_MAX, &cov)) {
		bad = true;
		goto out;
	}
	ps->covered_to = cov;
	for (char *line; !bad && (line = next_line(&p, &bad));)
		if (!parse_producer_line(ps, line))
			bad = true;
	if (!bad && !offsets_covered(ps))
		bad = true;
out:
	free(copy);
	if (bad) {
		mk_pstate_reset(ps);
		return MK_CORRUPT_MESSAGE;
	}
	return MK_OK;
}
