/*
 * handle_records.c — the records and batches kinds of open files
 * (handles.h): a cursor over a partition's log, formatted as read, and
 * the paged records views (viewmemo.h).
 */
#include "handles.h"
#include "search.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#include "viewmemo.h"

/* A records or batches descriptor's own state (h->kind), guarded by
 * h->lock; pg.pages is read without it (set at open, cleared only by
 * mk_handle_unpage before the descriptor is in use). */
typedef struct {
	mk_read_params rp;
	int64_t next;
	int64_t returned;
	bool eof;
	mk_strbuf fetched;
	mk_aborted_list aborted;  /* :committed: what `fetched` hides */
	bool at_end;             /* reached the visible end once */
	/* records: the view's identity at open (viewmemo.h) */
	bool memo_ok;            /* the view may be memoised or paged */
	uint64_t open_seq;       /* the partition's change count at open */
	int64_t start;           /* the view's first offset */
	int32_t open_epoch;      /* the leader epoch at open */
	/* records, paged: read by offset through the page cache; pg.pages
	 * is the name's pages state (viewmemo.h): its limit bounds reads,
	 * its told is the size; a step grows both. NULL: a stream. */
	mk_handle_paging pg;
	long long tbase;         /* the stream offset of text[0] */
	struct mk_page_mark *marks;   /* restart points, by stream offset */
	size_t nmarks, marks_alloc;
} rec_state;

#define FETCH_BYTES (1u << 20)

/*
 * Turn a POS but a time into an offset against a log's [log_start, leo],
 * `visible` being the end its reader sees; broker >= 0 names whose log
 * in the error.
 */
static mk_err resolve_in(const mk_read_params *rp, int64_t log_start,
			 int64_t leo, int64_t visible, int broker, int64_t *next,
			 mk_strbuf *why)
{
	switch (rp->pos.kind) {
	case MK_POS_EARLIEST:
		*next = log_start;
		return MK_OK;
	case MK_POS_LATEST:
		*next = visible;
		return MK_OK;
	case MK_POS_BACK:
		*next = visible - rp->pos.value;
		if (*next < log_start)
			*next = log_start;
		return MK_OK;
	case MK_POS_OFFSET:
		if (rp->pos.value < log_start || rp->pos.value > leo) {
			mk_strbuf_addf(why, "offset %lld outside [%lld, %lld]",
				       (long long)rp->pos.value, (long long)log_start,
				       (long long)leo);
			if (broker >= 0)
				mk_strbuf_addf(why, " of broker %d's log", broker);
			return MK_OFFSET_OUT_OF_RANGE;
		}
		*next = rp->pos.value;
		return MK_OK;
	case MK_POS_TIME:
		break;    /* the caller's */
	}
	return MK_INVALID_REQUEST;
}

/* Turn a POS into an offset against the partition's current state. */
static mk_err resolve_position(mk_partition *p, const mk_read_params *rp,
			       int64_t *next, mk_strbuf *why)
{
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	if (pi.leader < 0) {
		mk_strbuf_addstr(why, "the partition has no online leader");
		return MK_LEADER_NOT_AVAILABLE;
	}
	if (rp->pos.kind == MK_POS_TIME)
		return mk_partition_offset_for_time(p, rp->pos.value, next);
	int64_t visible = rp->committed ? pi.lso : pi.hw;
	return resolve_in(rp, pi.log_start, pi.leo, visible, -1, next, why);
}

/*
 * The same against one replica's own log (broker -1: the leader's), for
 * /brokers/B/logs/T/P/records and every batches file: the visible end is
 * the log end (with committed, the HW the replica knows).
 */
static mk_err resolve_log_position(mk_partition *p, int broker,
				   const mk_read_params *rp, int64_t *next,
				   mk_strbuf *why)
{
	mk_replica_view rv;
	mk_err err = mk_partition_replica_view(p, broker, &rv, why);
	if (err)
		return err;
	if (rv.leo < 0) {
		mk_strbuf_addf(why, "broker %d is %s, so its replica cannot be read",
			       rv.broker, rv.failed ? "failed (storage error)" : "offline");
		return MK_BROKER_NOT_AVAILABLE;
	}
	if (rp->pos.kind == MK_POS_TIME)
		return mk_partition_replica_offset_for_time(p, broker, rp->pos.value,
							    next, why);
	int64_t visible = rp->committed && rv.hw_view < rv.leo ? rv.hw_view : rv.leo;
	return resolve_in(rp, rv.log_start, rv.leo, visible, rv.broker, next, why);
}

/* ---- records ---------------------------------------------------------- */

static bool max_reached(const mk_handle *h)
{
	rec_state *r = h->kind;
	return r->rp.max >= 0 && r->returned >= r->rp.max;
}

/* Format the records of fetched frames at or after r->next, below end
 * (format.h's mk_format_fetched: a batch at a time, no per-record work
 * here). Markers are never shown; :committed hides aborted data. */
static void format_frames(mk_handle *h, int64_t end)
{
	rec_state *r = h->kind;
	mk_fetched f = {
		r->fetched.buf, r->fetched.len, end,
		r->rp.committed && h->ref.broker < 0 ? &r->aborted : NULL,
	};
	size_t left = r->rp.max >= 0 ? (size_t)(r->rp.max - r->returned)
				     : SIZE_MAX;
	r->returned += (int64_t)mk_format_fetched(r->rp.format, &f, left,
						  &r->next, &h->text);
}

/* A :follow read at the visible end parks: the next change wakes it. */
static void wait_data(mk_wait *wait, mk_partition *p, uint64_t seen)
{
	*wait = (mk_wait){ .kind = MK_WAIT_DATA, .p = p, .seen = seen,
			   .deadline_ms = INT64_MAX };
}

/* One step of a stream's fill: appends to h->text what it found past
 * r->next (*got: anything; false: the visible end). */
typedef mk_err (*step_fn)(mk_handle *h, mk_partition *p, size_t want,
			  bool *got, mk_strbuf *why);

/* Records: fetch frames from r->next and format them. */
static mk_err records_step(mk_handle *h, mk_partition *p, size_t want,
			   bool *got, mk_strbuf *why)
{
	rec_state *r = h->kind;
	mk_strbuf_reset(&r->fetched);
	int64_t visible;
	size_t budget = want > FETCH_BYTES ? want : FETCH_BYTES;
	mk_err err = h->ref.broker >= 0
		? mk_partition_replica_fetch(p, h->ref.broker, r->next,
					     r->rp.committed, budget,
					     &r->fetched, &visible, why)
		: mk_partition_fetch_isolated(p, r->next, budget,
					      r->rp.committed ? &r->aborted : NULL,
					      &r->fetched, &visible, why);
	*got = !err && r->fetched.len;
	if (*got)
		format_frames(h, visible);
	return err;
}

/* Batches: the headers of the batches from r->next on, one line each. */
static mk_err batches_step(mk_handle *h, mk_partition *p, size_t want,
			   bool *got, mk_strbuf *why)
{
	(void)want;
	rec_state *r = h->kind;
	mk_batch_info *bi;
	size_t n;
	mk_err err = mk_partition_replica_batches(p, h->ref.broker, r->next,
						  256, &bi, &n, why);
	*got = false;
	if (err)
		return err;
	for (size_t i = 0; i < n && !max_reached(h); i++) {
		mk_format_batch(r->rp.format, &bi[i], &h->text);
		r->returned++;
		r->next = bi[i].last_offset + 1;
	}
	free(bi);
	*got = n > 0;
	return MK_OK;
}

/* Steps from r->next on until want bytes are buffered or the visible end,
 * where :follow fills wait (NULL: a look that follows nothing, a peek or
 * a paged read; the visible end ends it). */
static mk_err stream_steps(mk_handle *h, step_fn step, size_t want,
			   mk_wait *wait, mk_strbuf *why)
{
	rec_state *r = h->kind;
	mk_partition *p = mk_handle_partition(h);
	while (h->text.len - h->text_pos < want && !r->eof) {
		if (max_reached(h)) {
			r->eof = true;
			break;
		}
		/* Taken before the step: a change after it wakes the park. */
		uint64_t seq = wait ? mk_partition_seq(p) : 0;
		bool got;
		mk_err err = step(h, p, want, &got, why);
		if (err)
			return err;
		if (got)
			continue;
		r->at_end = true;
		if (!r->rp.follow || !wait) {
			r->eof = true;
			break;
		}
		/* Give the reader what it has first; else park. */
		if (h->text.len == h->text_pos)
			wait_data(wait, p, seq);
		break;
	}
	return MK_OK;
}

/* ---- paged records (viewmemo.h) ---------------------------------------- */

/* A point the text can be made again from: the stream offset of a record
 * boundary, the record there, and the records before it. */
struct mk_page_mark {
	long long pos;
	int64_t next;
	int64_t returned;
};

#define PAGE_MARK_EVERY (1 << 20)
/* Text kept before a paged read's offset, for reads the kernel's
 * readahead sends out of order. */
#define PAGED_KEEP (1u << 20)

/*
 * At open (leader's view, the position resolved): may this view be
 * memoised, and is it paged? Views with :follow, :committed or :max,
 * and compacted topics are streams only. (Compaction, like any change,
 * moves the partition's change count, so a memo never outlives it.)
 */
static void records_open_paged(mkfs *fs, mk_handle *h)
{
	rec_state *r = h->kind;
	mk_partition *p = mk_handle_partition(h);
	r->start = r->next;
	if (!fs->views || r->rp.follow || r->rp.committed || r->rp.max >= 0)
		return;
	mk_topic_config tc;
	mk_cluster_topic_config(fs->cluster, h->ref.topic, &tc);
	if (tc.cleanup_policy & MK_CLEANUP_COMPACT)
		return;
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	if (mk_partition_seq(p) != r->open_seq)
		return;    /* changed while we looked: a stream this time */
	r->open_epoch = pi.leader_epoch;
	r->memo_ok = true;
	mk_view_id id = { h->ref.topic, h->ref.partition, r->open_seq, r->start };
	int64_t end;
	bool fresh;
	r->pg.pages = mk_viewmemo_open(fs->views, h->path, &id, r->open_epoch, &end,
				    &fresh);
	if (!r->pg.pages)
		return;
	r->pg.fresh = fresh;
	r->pg.keep_cache = !fresh;
	r->tbase = 0;
	r->marks = mk_xmalloc(sizeof(*r->marks) * 16);
	r->marks_alloc = 16;
	r->marks[0] = (struct mk_page_mark){ 0, r->start, 0 };
	r->nmarks = 1;
}

void mk_handle_unpage(mk_handle *h)
{
	if (!mk_handle_paged(h))
		return;
	rec_state *r = h->kind;
	mk_viewmemo_close(h->fs->views, r->pg.pages, r->pg.fresh);
	r->pg.pages = NULL;
	r->pg.fresh = false;
	r->pg.keep_cache = false;
	free(r->marks);
	r->marks = NULL;
	r->nmarks = r->marks_alloc = 0;
}

/* A stream read its view to the end: remember the view's length while
 * the partition has not changed since the open. */
static void records_learn(mk_handle *h)
{
	rec_state *r = h->kind;
	if (!r->memo_ok || r->pg.pages || !r->eof)
		return;
	r->memo_ok = false;    /* once */
	mk_partition *p = mk_handle_partition(h);
	if (mk_partition_seq(p) != r->open_seq)
		return;
	mk_topic *ref = mk_cluster_topic(h->fs->cluster, h->ref.topic->name);
	if (ref != h->ref.topic) {
		mk_topic_put(ref);
		return;
	}
	mk_view_id id = { h->ref.topic, h->ref.partition, r->open_seq, r->start };
	mk_viewmemo_learn(h->fs->views, h->path, &id, r->next,
			  (long long)atomic_load(&h->streamed) +
				  (long long)(h->text.len - h->text_pos),
			  ref);
}

/* Is partition p of topic t rewritten since its paged views were opened
 * at leader epoch `epoch` (a new leader epoch may have truncated it;
 * compaction removes records)? */
static bool view_rewritten(mkfs *fs, mk_topic *t, mk_partition *p,
			   int32_t epoch)
{
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	if (pi.leader_epoch != epoch)
		return true;
	mk_topic_config tc;
	mk_cluster_topic_config(fs->cluster, t, &tc);
	return tc.cleanup_policy & MK_CLEANUP_COMPACT;
}

/* Was the view rewritten under a paged descriptor? */
static bool paged_altered(mk_handle *h)
{
	rec_state *r = h->kind;
	mk_partition *p = mk_handle_partition(h);
	return mk_partition_seq(p) != r->open_seq &&
	       view_rewritten(h->fs, h->ref.topic, p, r->open_epoch);
}

/*
 * The view grew: count the text of [*end, visible end) onto *size (and
 * its last byte). Reads only the partition: no handle lock.
 */
static mk_err paged_count(mk_partition *p, mk_format format, int64_t *end,
			  long long *size, char *last, mk_strbuf *why)
{
	mk_strbuf frames = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_err err = MK_OK;
	for (;;) {
		int64_t visible;
		mk_strbuf_reset(&frames);
		err = mk_partition_fetch_isolated(p, *end, FETCH_BYTES, NULL,
						  &frames, &visible, why);
		if (err || !frames.len)
			break;
		int64_t next = *end;
		mk_fetched f = { frames.buf, frames.len, visible, NULL };
		mk_format_fetched(format, &f, SIZE_MAX, &next, &text);
		if (text.len) {
			*size += (long long)text.len;
			*last = text.buf[text.len - 1];
		}
		mk_strbuf_reset(&text);
		if (next <= *end)
			break;
		*end = next;
	}
	mk_strbuf_release(&frames);
	mk_strbuf_release(&text);
	return err;
}

long long mk_records_paged_size(mkfs *fs, mk_view_pages *pg,
				const node_ref *ref, mk_format format)
{
	if (!mk_viewmemo_is(pg, ref->topic, ref->partition))
		return mk_viewmemo_told(pg);    /* another topic's pages */
	mk_partition *p = mk_topic_partition(ref->topic, ref->partition);
	/* Taken before the count: a change after it is looked at again. */
	uint64_t seq = mk_partition_seq(p);
	int64_t end;
	long long size;
	if (!mk_viewmemo_step_begin(fs->views, pg, seq, &end, &size))
		return mk_viewmemo_told(pg);
	/* Rewritten (a new leader epoch, compaction): no step; its paged
	 * descriptors fail their reads. */
	bool ok = false;
	char last = '\n';
	if (!view_rewritten(fs, ref->topic, p, mk_viewmemo_epoch(pg))) {
		mk_strbuf why = MK_STRBUF_INIT;
		ok = !paged_count(p, format, &end, &size, &last, &why);
		mk_strbuf_release(&why);
	}
	mk_viewmemo_step_end(fs->views, pg, seq, ok, end, size, last);
	return mk_viewmemo_told(pg);
}

static void paged_mark(mk_handle *h)
{
	rec_state *r = h->kind;
	long long pos = r->tbase + (long long)(h->text.len - h->text_pos);
	if (pos < r->marks[r->nmarks - 1].pos + PAGE_MARK_EVERY)
		return;
	if (r->nmarks == r->marks_alloc) {
		r->marks_alloc *= 2;
		r->marks = mk_xrealloc(r->marks, r->marks_alloc * sizeof(*r->marks));
	}
	r->marks[r->nmarks++] = (struct mk_page_mark){ pos, r->next, r->returned };
}

typedef struct {
	const struct mk_page_mark *marks;
	long long off;
} mark_key;

static bool mark_at_or_before(const void *ctx, size_t i)
{
	const mark_key *k = ctx;
	return k->marks[i].pos <= k->off;
}

/* Make the text again from the last mark at or before off. */
static void paged_restart(mk_handle *h, long long off)
{
	rec_state *r = h->kind;
	/* The last mark at or before off; the first (at 0) at least. */
	mark_key k = { r->marks, off };
	size_t lo = mk_lower_bound(r->nmarks, mark_at_or_before, &k);
	lo = lo ? lo - 1 : 0;
	mk_strbuf_reset(&h->text);
	h->text_pos = 0;
	r->tbase = r->marks[lo].pos;
	r->next = r->marks[lo].next;
	r->returned = r->marks[lo].returned;
	r->eof = false;
}

/* Forget the text before off but PAGED_KEEP: text_pos moves (the buffer
 * is compacted only once most of it is behind, so this copies little). */
static void paged_forget(mk_handle *h, long long off)
{
	rec_state *r = h->kind;
	if (off - r->tbase <= (long long)PAGED_KEEP)
		return;
	size_t d = (size_t)(off - r->tbase) - PAGED_KEEP;
	if (d > h->text.len - h->text_pos)
		d = h->text.len - h->text_pos;
	h->text_pos += d;
	r->tbase += (long long)d;
	if (h->text_pos > PAGED_KEEP && h->text_pos * 2 > h->text.len) {
		mk_strbuf_consume(&h->text, h->text_pos);
		h->text_pos = 0;
	}
}

/* A paged read: the view's bytes [off, off + size), made from the log
 * (the kernel asks only for what its page cache lacks). h->text from
 * text_pos on holds the view's bytes from stream offset tbase. */
static mk_err paged_read(mk_handle *h, size_t size, long long off,
			 mk_read_reply_fn reply, void *arg, mk_strbuf *why)
{
	rec_state *r = h->kind;
	if (paged_altered(h)) {
		mk_strbuf_addstr(why, "the partition was rewritten (a new leader epoch, or compaction) while this descriptor read it; open it again");
		return MK_FENCED_LEADER_EPOCH;
	}
	if (off < 0)
		off = 0;
	/* Below limit only: the kernel was told no more (viewmemo.h). */
	long long limit = mk_viewmemo_limit(r->pg.pages);
	long long want = off + (long long)size < limit ? off + (long long)size : limit;
	if (off >= want) {
		reply(arg, NULL, 0);
		return MK_OK;
	}
	if (off < r->tbase)
		paged_restart(h, off);
	while (r->tbase + (long long)(h->text.len - h->text_pos) < want && !r->eof) {
		paged_forget(h, off);    /* skipping ahead */
		paged_mark(h);
		size_t before = h->text.len - h->text_pos;
		mk_err err = stream_steps(h, records_step, before + 1, NULL, why);
		if (err)
			return err;
		if (h->text.len - h->text_pos == before)
			break;
	}
	long long have = r->tbase + (long long)(h->text.len - h->text_pos);
	if (have > want)
		have = want;
	if (off >= have) {
		reply(arg, NULL, 0);
		return MK_OK;
	}
	reply(arg, h->text.buf + h->text_pos + (off - r->tbase), (size_t)(have - off));
	paged_forget(h, off);
	return MK_OK;
}

static mk_err stream_fill(mk_handle *h, step_fn step, size_t want,
			  mk_wait *wait, mk_strbuf *why)
{
	rec_state *r = h->kind;
	/* A stream at its end looks again at every read, as a growing file
	 * does: only max=N ends it for good. */
	if (!max_reached(h))
		r->eof = false;
	return stream_steps(h, step, want, wait, why);
}

/* ---- the kinds' operations --------------------------------------------- */

static rec_state *rec_new(mk_handle *h)
{
	rec_state *r = mk_xcalloc(1, sizeof(*r));
	mk_strbuf_init(&r->fetched, 0);
	h->kind = r;
	return r;
}

static mk_err records_open(mkfs *fs, mk_handle *h, int flags, mk_strbuf *why)
{
	(void)flags;
	rec_state *r = rec_new(h);
	mk_err err = mk_name_parse_records(h->ref.name, &r->rp, why);
	if (!err && h->ref.broker >= 0) {
		err = resolve_log_position(mk_handle_partition(h), h->ref.broker,
					   &r->rp, &r->next, why);
	} else if (!err) {
		/* Taken before the position: a change after it shows. */
		r->open_seq = mk_partition_seq(mk_handle_partition(h));
		err = resolve_position(mk_handle_partition(h), &r->rp, &r->next, why);
		if (!err)
			records_open_paged(fs, h);
	}
	return err;
}

static mk_err batches_open(mkfs *fs, mk_handle *h, int flags, mk_strbuf *why)
{
	(void)fs;
	(void)flags;
	rec_state *r = rec_new(h);
	mk_err err = mk_name_parse_batches(h->ref.name, &r->rp, why);
	if (!err)
		err = resolve_log_position(mk_handle_partition(h), h->ref.broker,
					   &r->rp, &r->next, why);
	return err;
}

static mk_err records_read(mkfs *fs, mk_handle *h, mk_read_req *rq,
			   mk_strbuf *why)
{
	(void)fs;
	rec_state *r = h->kind;
	if (r->pg.pages) {
		rq->answered = true;
		return paged_read(h, rq->size, rq->off, rq->reply, rq->arg, why);
	}
	mk_err err = stream_fill(h, records_step, rq->size, rq->wait, why);
	if (r->memo_ok && r->eof)
		records_learn(h);
	return err;
}

static mk_err batches_read(mkfs *fs, mk_handle *h, mk_read_req *rq,
			   mk_strbuf *why)
{
	(void)fs;
	return stream_fill(h, batches_step, rq->size, rq->wait, why);
}

/* A paged descriptor's size takes no handle lock (a step may wait). */
static bool records_size(mk_handle *h, long long *size)
{
	rec_state *r = h->kind;
	if (!r->pg.pages)
		return false;
	*size = mk_records_paged_size(h->fs, r->pg.pages, &h->ref, r->rp.format);
	return true;
}

/* Under h->lock: a stream at its end looks at what is visible now. */
static void stream_peek(mk_handle *h, step_fn step)
{
	rec_state *r = h->kind;
	if (r->at_end && h->text.len == h->text_pos) {
		mk_strbuf why = MK_STRBUF_INIT;
		stream_fill(h, step, 1, NULL, &why);    /* no wait: follows nothing */
		mk_strbuf_release(&why);
	}
}

static void records_peek(mk_handle *h)
{
	stream_peek(h, records_step);
}

static void batches_peek(mk_handle *h)
{
	stream_peek(h, batches_step);
}

static void rec_release(mk_handle *h)
{
	rec_state *r = h->kind;
	if (!r)
		return;
	if (r->pg.pages)
		mk_viewmemo_close(h->fs->views, r->pg.pages, r->pg.fresh);
	free(r->marks);
	mk_strbuf_release(&r->fetched);
	mk_aborted_free(&r->aborted);
	free(r);
}

mk_handle_paging *mk_handle_paged(mk_handle *h)
{
	if (h->ops != &mk_records_handle_ops)
		return NULL;
	rec_state *r = h->kind;
	return r->pg.pages ? &r->pg : NULL;
}

const mk_handle_ops mk_records_handle_ops = {
	.open = records_open,
	.read = records_read,
	.release = rec_release,
	.size = records_size,
	.peek = records_peek,
};

const mk_handle_ops mk_batches_handle_ops = {
	.open = batches_open,
	.read = batches_read,
	.release = rec_release,
	.peek = batches_peek,
};
