/*
 * poll.c — a member's poll file: one core poll per read with nothing
 * buffered, formatted a batch at a time, positions moved by what the
 * reader really got.
 */
#include "poll.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetcher.h"
#include "format.h"
#include "group.h"
#include "topic_name.h"

typedef struct {
	char *topic;
	int partition;
	char lead[MK_TOPIC_NAME_MAX + 48];   /* the topic and partition
					 * columns or members of a line */
	size_t lead_len;
	mk_format lead_format;   /* of lead; MK_FORMAT_PLAIN: not made yet */
	int64_t position;        /* where the member stands, as we moved it */
	bool lost;               /* a seek or rebalance moved it: stop */
	uint64_t poll;           /* the poll that last returned records of it */
	int64_t pending;         /* where a read just moved it */
	bool dirty;
} pc_part;

typedef struct {
	uint64_t end;            /* stream byte just after the record */
	size_t part;
	int64_t next;            /* the position after the record */
} pc_rec;

struct mk_poll_cursor {
	mk_read_params rp;
	pc_part *parts;
	size_t nparts;
	pc_rec *recs;            /* formatted, not yet wholly handed out */
	size_t nrecs, head, alloc;
	uint64_t formatted;      /* stream bytes formatted so far */
	uint64_t handed;         /* stream bytes handed to the reader */
	int64_t returned;        /* records formatted */
	bool polled;             /* a poll returned records */
	uint64_t npolls;
	bool eof;
	mk_format_mark *marks;   /* one batch's records, as formatted */
	size_t marks_alloc;
	mk_poll_cache *cache;    /* fetched frames not yet returned */
	mk_topic *watched;       /* a parked wait's partition's topic (held) */
	size_t last_part;        /* the part of the last record */
};

static mk_err poll_open(mkfs *fs, mk_handle *h, int flags, mk_strbuf *why)
{
	(void)fs;
	(void)flags;
	struct mk_poll_cursor *pc = mk_xcalloc(1, sizeof(*pc));
	pc->cache = mk_poll_cache_new();
	h->kind = pc;
	return mk_name_parse_poll(h->ref.name, &pc->rp, why);
}

static void poll_release(mk_handle *h)
{
	struct mk_poll_cursor *pc = h->kind;
	if (!pc)
		return;
	for (size_t i = 0; i < pc->nparts; i++)
		free(pc->parts[i].topic);
	free(pc->parts);
	free(pc->recs);
	free(pc->marks);
	mk_poll_cache_free(pc->cache);
	mk_topic_put(pc->watched);
	free(pc);
}

static size_t part_index(struct mk_poll_cursor *pc, const mk_poll_partition *pp)
{
	/* Records come partition by partition: the last one usually matches. */
	if (pc->last_part < pc->nparts && pc->parts[pc->last_part].poll == pc->npolls &&
	    pc->parts[pc->last_part].partition == pp->partition &&
	    !strcmp(pc->parts[pc->last_part].topic, pp->topic))
		return pc->last_part;
	for (size_t i = 0; i < pc->nparts; i++)
		if (pc->parts[i].partition == pp->partition &&
		    !strcmp(pc->parts[i].topic, pp->topic)) {
			/* A new poll: the core's position is the truth now. */
			if (pc->parts[i].poll != pc->npolls) {
				pc->parts[i].position = pp->from;
				pc->parts[i].lost = false;
				pc->parts[i].poll = pc->npolls;
			}
			return i;
		}
	pc->parts = mk_xrealloc(pc->parts, (pc->nparts + 1) * sizeof(*pc->parts));
	pc_part *np = &pc->parts[pc->nparts];
	memset(np, 0, sizeof(*np));
	np->topic = mk_xstrdup(pp->topic);
	np->partition = pp->partition;
	np->position = np->pending = pp->from;
	np->poll = pc->npolls;
	return pc->nparts++;
}

typedef struct {
	mk_handle *h;
	struct mk_poll_cursor *pc;
} poll_ctx;

/* What every line of a part starts with: TSV its topic and partition
 * columns, JSON its topic and partition members (topic names need no
 * JSON escaping: [A-Za-z0-9._-]); plain text none. */
static void make_lead(pc_part *p, mk_format format)
{
	if (p->lead_format == format && p->lead_len)
		return;
	int n = format == MK_FORMAT_TSV
		? snprintf(p->lead, sizeof(p->lead), "%s\t%d\t", p->topic, p->partition)
		: snprintf(p->lead, sizeof(p->lead), "\"topic\":\"%s\",\"partition\":%d,",
			   p->topic, p->partition);
	p->lead_len = n > 0 && (size_t)n < sizeof(p->lead) ? (size_t)n : 0;
	p->lead_format = format;
}

/* One batch's records, formatted in one call (format.h); each record's
 * end in the stream and next position are kept for poll_consumed. */
static size_t on_batch(void *arg, const mk_poll_partition *pp,
		       const mk_batch_view *b, int64_t from, int64_t end,
		       size_t max, int64_t *next)
{
	poll_ctx *ctx = arg;
	struct mk_poll_cursor *pc = ctx->pc;
	mk_strbuf *out = &ctx->h->text;
	size_t room = b->record_count > 0 ? (size_t)b->record_count : 0;
	if (room > max)
		room = max;
	if (!room)
		return 0;
	if (pc->marks_alloc < room) {
		pc->marks_alloc = room;
		pc->marks = mk_xrealloc(pc->marks, room * sizeof(*pc->marks));
	}
	size_t pi = part_index(pc, pp);
	pc->last_part = pi;
	pc_part *part = &pc->parts[pi];
	mk_format_lines o = { .format = pc->rp.format, .marks = pc->marks };
	if (o.format == MK_FORMAT_TSV || o.format == MK_FORMAT_JSON) {
		make_lead(part, o.format);
		o.lead = part->lead;
		o.lead_len = part->lead_len;
	}
	size_t before = out->len;
	size_t n = mk_format_records_lines(&o, b, from, end, max, out, next);
	if (pc->nrecs + n > pc->alloc) {
		pc->alloc = pc->nrecs + n > pc->alloc * 2 ? pc->nrecs + n : pc->alloc * 2;
		pc->recs = mk_xrealloc(pc->recs, pc->alloc * sizeof(*pc->recs));
	}
	for (size_t i = 0; i < n; i++)
		pc->recs[pc->nrecs++] = (pc_rec){
			pc->formatted + (pc->marks[i].end - before), pi,
			pc->marks[i].offset + 1 };
	pc->formatted += out->len - before;
	pc->returned += (int64_t)n;
	return n;
}

static bool max_reached(const struct mk_poll_cursor *pc)
{
	return pc->rp.max > 0 && pc->returned >= pc->rp.max;
}

/* How many polls a :follow read gathers at once. */
#define FOLLOW_POLLS 8

/* Once h->text is all handed out: the next poll's records (or EOF). */
static mk_err poll_read(mkfs *fs, mk_handle *h, mk_read_req *rq,
			mk_strbuf *why)
{
	mk_wait *wait = rq->wait;
	struct mk_poll_cursor *pc = h->kind;
	if (!fs->groups) {
		mk_strbuf_addstr(why, "the group coordinator is not running");
		return MK_GROUP_ID_NOT_FOUND;
	}
	/*
	 * Poll only when everything formatted was handed out: positions move
	 * as bytes are handed out, so a poll before that would return the
	 * same records again. Without :follow one poll, then EOF; with it, up
	 * to FOLLOW_POLLS polls' worth at a time, parked while nothing comes.
	 */
	if (h->text.len != h->text_pos || pc->eof)
		return MK_OK;
	if (max_reached(pc) || (pc->polled && !pc->rp.follow)) {
		pc->eof = true;
		return MK_OK;
	}
	pc->nrecs = pc->head = 0;
	poll_ctx ctx = { h, pc };
	pc->npolls++;
	int64_t count;
	mk_err err = mk_fetcher_poll_batches(
		fs->groups, h->ref.group, h->ref.member,
		pc->rp.max > 0 ? pc->rp.max - pc->returned : 0,
		pc->rp.follow ? FOLLOW_POLLS : 1, pc->rp.committed,
		pc->cache, on_batch, &ctx, &count, why);
	if (err)
		return err;
	if (count) {
		pc->polled = true;
		return MK_OK;
	}
	if (!pc->rp.follow) {
		pc->eof = true;
		return MK_OK;
	}
	/* Park. The topic stays held until the next fill or the close,
	 * which come after the parked read ends. */
	mk_topic_put(pc->watched);
	mk_partition *p;
	mk_group_poll_target(fs->groups, h->ref.group, h->ref.member,
			     &pc->watched, &p);
	*wait = (mk_wait){ .kind = MK_WAIT_DATA, .p = p,
			   .seen = p ? mk_partition_seq(p) : 0,
			   .deadline_ms = INT64_MAX,
			   .recheck_ms = MK_POLL_RECHECK_MS };
	return MK_OK;
}

/* n more bytes of h->text were handed to the reader. */
static void poll_consumed(mkfs *fs, mk_handle *h, size_t n)
{
	struct mk_poll_cursor *pc = h->kind;
	pc->handed += n;
	/* Every record now wholly handed out moves its partition's position;
	 * one compare-and-set per partition and read, not one per record. */
	size_t first = pc->head;
	while (pc->head < pc->nrecs && pc->recs[pc->head].end <= pc->handed)
		pc->head++;
	for (size_t i = first; i < pc->head; i++) {
		pc_part *p = &pc->parts[pc->recs[i].part];
		if (p->lost || !fs->groups)
			continue;
		p->pending = pc->recs[i].next;
		p->dirty = true;
	}
	for (size_t k = 0; k < pc->nparts; k++) {
		pc_part *p = &pc->parts[k];
		if (!p->dirty)
			continue;
		p->dirty = false;
		if (mk_group_advance(fs->groups, h->ref.group, h->ref.member,
				     p->topic, p->partition, p->position, p->pending))
			p->position = p->pending;
		else
			p->lost = true;
	}
}

const mk_handle_ops mk_poll_handle_ops = {
	.open = poll_open,
	.read = poll_read,
	.consumed = poll_consumed,
	.release = poll_release,
	.nonseekable = true,
};
