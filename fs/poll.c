/*
 * poll.c — a member's poll file: one core poll per read with nothing
 * buffered, positions moved by what the reader really got.
 */
#include "poll.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "group.h"

typedef struct {
	char *topic;
	int partition;
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
	mk_strbuf scratch;
	mk_poll_cache *cache;    /* fetched frames not yet returned */
	mk_topic *watched;       /* a parked wait's partition's topic (held) */
	size_t last_part;        /* the part of the last record */
};

mk_err mk_poll_open(mkfs *fs, mk_handle *h, mk_strbuf *why)
{
	(void)fs;
	struct mk_poll_cursor *pc = mk_xcalloc(1, sizeof(*pc));
	mk_strbuf_init(&pc->scratch, 0);
	pc->cache = mk_poll_cache_new();
	h->poll = pc;
	return mk_name_parse_poll(h->ref.name, &pc->rp, why);
}

void mk_poll_free(struct mk_poll_cursor *pc)
{
	if (!pc)
		return;
	for (size_t i = 0; i < pc->nparts; i++)
		free(pc->parts[i].topic);
	free(pc->parts);
	free(pc->recs);
	mk_strbuf_release(&pc->scratch);
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
	pc->parts[pc->nparts] = (pc_part){ mk_xstrdup(pp->topic), pp->partition,
					   pp->from, false, pc->npolls, pp->from, false };
	return pc->nparts++;
}

typedef struct {
	mk_handle *h;
	struct mk_poll_cursor *pc;
} poll_ctx;

static void on_record(void *arg, const mk_poll_partition *pp,
		      const mk_record_view *rec)
{
	poll_ctx *ctx = arg;
	struct mk_poll_cursor *pc = ctx->pc;
	mk_strbuf *out = &ctx->h->text;
	size_t before = out->len;
	switch (pc->rp.format) {
	case MK_FORMAT_TSV:
		mk_strbuf_addf(out, "%s\t%d\t", pp->topic, pp->partition);
		mk_format_record(MK_FORMAT_TSV, rec, out);
		break;
	case MK_FORMAT_JSON:
		mk_strbuf_reset(&pc->scratch);
		mk_format_record(MK_FORMAT_JSON, rec, &pc->scratch);
		/* Topic names need no JSON escaping ([A-Za-z0-9._-]). */
		mk_strbuf_addf(out, "{\"topic\":\"%s\",\"partition\":%d,", pp->topic,
			       pp->partition);
		mk_strbuf_add(out, pc->scratch.buf + 1, pc->scratch.len - 1);
		break;
	default:
		mk_format_record(MK_FORMAT_PLAIN, rec, out);
		break;
	}
	pc->formatted += out->len - before;
	if (pc->nrecs == pc->alloc) {
		pc->alloc = pc->alloc ? pc->alloc * 2 : 64;
		pc->recs = mk_xrealloc(pc->recs, pc->alloc * sizeof(*pc->recs));
	}
	size_t pi = part_index(pc, pp);
	pc->last_part = pi;
	pc->recs[pc->nrecs++] = (pc_rec){ pc->formatted, pi, rec->offset + 1 };
	pc->returned++;
}

static bool max_reached(const struct mk_poll_cursor *pc)
{
	return pc->rp.max > 0 && pc->returned >= pc->rp.max;
}

/* How many polls a :follow read gathers at once. */
#define FOLLOW_POLLS 8

mk_err mk_poll_fill(mkfs *fs, mk_handle *h, const mk_waiter *w, mk_wait *wait,
		    mk_strbuf *why)
{
	struct mk_poll_cursor *pc = h->poll;
	if (!fs->groups) {
		mk_strbuf_addstr(why, "the group coordinator is not running");
		return MK_GROUP_ID_NOT_FOUND;
	}
	/*
	 * Poll only when everything formatted was handed out: positions move
	 * as bytes are handed out, so a poll before that would return the
	 * same records again. Without :follow one poll, then EOF; with it, up
	 * to FOLLOW_POLLS polls' worth at a time, waiting while nothing comes.
	 */
	while (h->text.len == h->text_pos && !pc->eof) {
		if (max_reached(pc) || (pc->polled && !pc->rp.follow)) {
			pc->eof = true;
			break;
		}
		pc->nrecs = pc->head = 0;
		poll_ctx ctx = { h, pc };
		pc->npolls++;
		int64_t count;
		mk_err err = mk_group_poll(fs->groups, h->ref.group, h->ref.member,
					   pc->rp.max > 0 ? pc->rp.max - pc->returned : 0,
					   pc->rp.follow ? FOLLOW_POLLS : 1,
					   pc->rp.committed, pc->cache, on_record, &ctx,
					   &count, why);
		if (err)
			return err;
		if (count) {
			pc->polled = true;
			break;
		}
		if (!pc->rp.follow) {
			pc->eof = true;
			break;
		}
		if (wait) {
			/* The topic stays held until the next fill or the
			 * close, which come after the parked read ends. */
			mk_topic_put(pc->watched);
			mk_partition *p;
			mk_group_poll_target(fs->groups, h->ref.group,
					     h->ref.member, &pc->watched, &p);
			*wait = (mk_wait){ .kind = MK_WAIT_DATA, .p = p,
					   .seen = p ? mk_partition_seq(p) : 0,
					   .deadline_ms = INT64_MAX,
					   .recheck_ms = MK_POLL_RECHECK_MS };
			break;
		}
		if (w && w->interrupted && w->interrupted(w->arg)) {
			mk_strbuf_addstr(why, "interrupted while following");
			return MK_INTERRUPTED;
		}
		mk_group_wait(fs->groups, h->ref.group, h->ref.member, MK_POLL_RECHECK_MS);
	}
	return MK_OK;
}

void mk_poll_consumed(mkfs *fs, mk_handle *h, size_t n)
{
	struct mk_poll_cursor *pc = h->poll;
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
