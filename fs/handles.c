/*
 * handles.c — open files: value snapshots, record streams, appends.
 */
#include "handles.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "poll.h"
#include "topic_name.h"
#include "viewmemo.h"

#define FETCH_BYTES (1u << 20)

static mk_partition *handle_partition(mk_handle *h)
{
	return mk_topic_partition(h->ref.topic, h->ref.partition);
}

/* ---- open ------------------------------------------------------------- */

static mk_err open_append(mkfs *fs, mk_handle *h, bool readable, mk_strbuf *why);
static void records_open_paged(mkfs *fs, mk_handle *h);
static void append_release(mk_handle *h);
static void take_receipts(mk_handle *h);

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
	int64_t visible = rp->committed ? pi.lso : pi.hw;
	switch (rp->pos.kind) {
	case MK_POS_EARLIEST:
		*next = pi.log_start;
		return MK_OK;
	case MK_POS_LATEST:
		*next = visible;
		return MK_OK;
	case MK_POS_BACK:
		*next = visible - rp->pos.value;
		if (*next < pi.log_start)
			*next = pi.log_start;
		return MK_OK;
	case MK_POS_OFFSET:
		if (rp->pos.value < pi.log_start || rp->pos.value > pi.leo) {
			mk_strbuf_addf(why, "offset %lld outside [%lld, %lld]",
				       (long long)rp->pos.value, (long long)pi.log_start,
				       (long long)pi.leo);
			return MK_OFFSET_OUT_OF_RANGE;
		}
		*next = rp->pos.value;
		return MK_OK;
	case MK_POS_TIME:
		return mk_partition_offset_for_time(p, rp->pos.value, next);
	}
	return MK_INVALID_REQUEST;
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
	int64_t visible = rp->committed && rv.hw_view < rv.leo ? rv.hw_view : rv.leo;
	switch (rp->pos.kind) {
	case MK_POS_EARLIEST:
		*next = rv.log_start;
		return MK_OK;
	case MK_POS_LATEST:
		*next = visible;
		return MK_OK;
	case MK_POS_BACK:
		*next = visible - rp->pos.value;
		if (*next < rv.log_start)
			*next = rv.log_start;
		return MK_OK;
	case MK_POS_OFFSET:
		if (rp->pos.value < rv.log_start || rp->pos.value > rv.leo) {
			mk_strbuf_addf(why, "offset %lld outside [%lld, %lld] of broker %d's log",
				       (long long)rp->pos.value, (long long)rv.log_start,
				       (long long)rv.leo, rv.broker);
			return MK_OFFSET_OUT_OF_RANGE;
		}
		*next = rp->pos.value;
		return MK_OK;
	case MK_POS_TIME:
		return mk_partition_replica_offset_for_time(p, broker, rp->pos.value,
							    next, why);
	}
	return MK_INVALID_REQUEST;
}

mk_err mk_handle_open(mkfs *fs, node_ref *ref, const char *path, int flags,
		      mk_handle **out, mk_strbuf *why)
{
	int acc = flags & O_ACCMODE;
	const node_def *d = ref->def;
	bool wants_write = acc != O_RDONLY, wants_read = acc != O_WRONLY;
	mk_err err = MK_OK;
	if ((wants_write && !(d->mode & 0222)) ||
	    (wants_read && !(d->mode & 0444) && d->type != NODE_APPEND) ||
	    d->type == NODE_DIR) {
		mk_strbuf_addf(why, "%s cannot be opened %s", path,
			       acc == O_RDONLY ? "for reading" : acc == O_WRONLY ? "for writing" : "read-write");
		return MK_INVALID_REQUEST;
	}
	mk_handle *h = mk_xcalloc(1, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
	h->ref = *ref;
	memset(ref, 0, sizeof(*ref));    /* the handle owns the topic reference */
	h->path = mk_xstrdup(path);
	h->fs = fs;
	h->fd = -1;
	mk_strbuf_init(&h->text, 0);
	mk_strbuf_init(&h->fetched, 0);
	mk_strbuf_init(&h->pending, 0);
	mk_strbuf_init(&h->first, 0);
	mk_strbuf_init(&h->held_why, 0);

	switch (d->type) {
	case NODE_VALUE:
	case NODE_CONTROL:
		if (wants_read && d->read)
			err = d->read(fs, &h->ref, &h->text, why);
		break;
	case NODE_RECORDS:
		err = mk_name_parse_records(h->ref.name, &h->rp, why);
		if (!err && h->ref.broker >= 0) {
			err = resolve_log_position(handle_partition(h), h->ref.broker,
						   &h->rp, &h->next, why);
		} else if (!err) {
			/* Taken before the position: a change after it shows. */
			h->open_seq = mk_partition_seq(handle_partition(h));
			err = resolve_position(handle_partition(h), &h->rp, &h->next, why);
			if (!err)
				records_open_paged(fs, h);
		}
		break;
	case NODE_BATCHES:
		err = mk_name_parse_batches(h->ref.name, &h->rp, why);
		if (!err)
			err = resolve_log_position(handle_partition(h), h->ref.broker,
						   &h->rp, &h->next, why);
		break;
	case NODE_APPEND:
		if (acc == O_RDONLY) {
			mk_strbuf_addstr(why, "append files are opened for writing (O_RDWR to read receipts)");
			err = MK_INVALID_REQUEST;
			break;
		}
		err = mk_name_parse_append(h->ref.name, &h->ap, why);
		if (!err)
			err = open_append(fs, h, acc == O_RDWR, why);
		break;
	case NODE_RAW: {
		mk_strbuf real = MK_STRBUF_INIT;
		err = mk_node_raw_path(fs, &h->ref, &real, NULL);
		if (!err) {
			h->fd = open(real.buf, O_RDONLY | O_CLOEXEC);
			if (h->fd < 0) {
				mk_strbuf_addf(why, "cannot open %s", real.buf);
				err = MK_KAFKA_STORAGE_ERROR;
			}
		}
		mk_strbuf_release(&real);
		break;
	}
	case NODE_POLL:
		err = mk_poll_open(fs, h, why);
		break;
	case NODE_DIR:
		break;
	}
	if (err) {
		mk_handle_close(h);
		return err;
	}
	*out = h;
	return MK_OK;
}

void mk_handle_close(mk_handle *h)
{
	if (!h)
		return;
	/*
	 * A read is answered from this handle's text under its lock, and
	 * the kernel may send the release (to another thread) before that
	 * reply's writev has returned: wait for the reply to let go.
	 * Nothing else can take the lock after the release.
	 */
	pthread_mutex_lock(&h->lock);
	pthread_mutex_unlock(&h->lock);
	if (h->pages)
		mk_viewmemo_close(h->fs->views, h->pages, h->pages_fresh);
	free(h->marks);
	if (h->fd >= 0)
		close(h->fd);
	if (h->prod)
		append_release(h);
	mk_poll_free(h->poll);
	mk_node_ref_release(&h->ref);
	mk_parsed_release(&h->parsed);
	mk_strbuf_release(&h->first);
	mk_strbuf_release(&h->held_why);
	mk_strbuf_release(&h->text);
	mk_strbuf_release(&h->fetched);
	mk_aborted_free(&h->aborted);
	mk_strbuf_release(&h->pending);
	pthread_mutex_destroy(&h->lock);
	free(h->path);
	free(h);
}

/* ---- records ---------------------------------------------------------- */

static bool max_reached(const mk_handle *h)
{
	return h->rp.max >= 0 && h->returned >= h->rp.max;
}

/* Format the records of fetched frames at or after h->next, below end:
 * every batch in one call (format.h), no per-record work here. */
static void format_frames(mk_handle *h, int64_t end)
{
	size_t pos = 0;
	while (pos < h->fetched.len && !max_reached(h)) {
		/* The log validated the frame (CRC, records) as it read it. */
		mk_batch_view b;
		if (mk_frame_decode_header((const uint8_t *)h->fetched.buf + pos,
					   h->fetched.len - pos, 0, false, &b,
					   NULL))
			break;    /* cannot happen */
		pos += b.frame_len;
		if (b.meta.base_offset >= end)
			break;
		/* Markers are never shown; :committed hides aborted data. */
		if (!mk_batch_is_control(&b) &&
		    !(h->rp.committed && h->ref.broker < 0 &&
		      mk_aborted_hides(&h->aborted, &b))) {
			size_t left = h->rp.max >= 0
				? (size_t)(h->rp.max - h->returned) : SIZE_MAX;
			h->returned += (int64_t)mk_format_records(
				h->rp.format, &b, h->next, end, left, &h->text,
				&h->next);
		}
		if (max_reached(h))
			break;
		int64_t after = mk_batch_next_offset(&b);
		if (after > h->next)
			h->next = after < end ? after : end;
	}
}

/* A follow at the visible end with a wait: park instead of waiting. */
static void wait_data(mk_wait *wait, mk_partition *p, uint64_t seen)
{
	*wait = (mk_wait){ .kind = MK_WAIT_DATA, .p = p, .seen = seen,
			   .deadline_ms = INT64_MAX };
}

static mk_err records_fill(mk_handle *h, size_t want, const mk_waiter *w,
			   mk_wait *wait, mk_strbuf *why)
{
	mk_partition *p = handle_partition(h);
	while (h->text.len - h->text_pos < want && !h->eof) {
		if (max_reached(h)) {
			h->eof = true;
			break;
		}
		mk_strbuf_reset(&h->fetched);
		/* Taken before the fetch: a change after it wakes the park. */
		uint64_t seq = wait ? mk_partition_seq(p) : 0;
		int64_t visible;
		size_t budget = want > FETCH_BYTES ? want : FETCH_BYTES;
		mk_err err = h->ref.broker >= 0
			? mk_partition_replica_fetch(p, h->ref.broker, h->next,
						     h->rp.committed, budget,
						     &h->fetched, &visible, why)
			: mk_partition_fetch_isolated(p, h->next, budget,
						      h->rp.committed ? &h->aborted : NULL,
						      &h->fetched, &visible, why);
		if (err)
			return err;
		if (h->fetched.len) {
			format_frames(h, visible);
			continue;
		}
		h->at_end = true;
		if (!h->rp.follow || (!w && !wait)) {
			h->eof = true;
			break;
		}
		if (h->text.len > h->text_pos)
			break;    /* give the reader what it has first */
		if (wait) {
			wait_data(wait, p, seq);
			break;
		}
		if (w && w->interrupted && w->interrupted(w->arg)) {
			mk_strbuf_addstr(why, "interrupted while following");
			return MK_INTERRUPTED;
		}
		mk_partition_wait_change(p, &h->seen, 200);
	}
	return MK_OK;
}

/* Batch headers from h->next on, formatted, until want bytes are buffered
 * or the log end (where :follow waits). */
static mk_err batches_fill(mk_handle *h, size_t want, const mk_waiter *w,
			   mk_wait *wait, mk_strbuf *why)
{
	mk_partition *p = handle_partition(h);
	while (h->text.len - h->text_pos < want && !h->eof) {
		if (max_reached(h)) {
			h->eof = true;
			break;
		}
		uint64_t seq = wait ? mk_partition_seq(p) : 0;
		mk_batch_info *bi;
		size_t n;
		mk_err err = mk_partition_replica_batches(p, h->ref.broker, h->next,
							  256, &bi, &n, why);
		if (err)
			return err;
		for (size_t i = 0; i < n && !max_reached(h); i++) {
			mk_format_batch(h->rp.format, &bi[i], &h->text);
			h->returned++;
			h->next = bi[i].last_offset + 1;
		}
		free(bi);
		if (n)
			continue;
		h->at_end = true;
		if (!h->rp.follow || (!w && !wait)) {
			h->eof = true;
			break;
		}
		if (h->text.len > h->text_pos)
			break;
		if (wait) {
			wait_data(wait, p, seq);
			break;
		}
		if (w && w->interrupted && w->interrupted(w->arg)) {
			mk_strbuf_addstr(why, "interrupted while following");
			return MK_INTERRUPTED;
		}
		mk_partition_wait_change(p, &h->seen, 200);
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
	mk_partition *p = handle_partition(h);
	h->start = h->next;
	if (!fs->views || h->rp.follow || h->rp.committed || h->rp.max >= 0)
		return;
	mk_topic_config tc;
	mk_cluster_topic_config(fs->cluster, h->ref.topic, &tc);
	if (tc.cleanup_policy & MK_CLEANUP_COMPACT)
		return;
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	if (mk_partition_seq(p) != h->open_seq)
		return;    /* changed while we looked: a stream this time */
	h->open_epoch = pi.leader_epoch;
	h->memo_ok = true;
	mk_view_id id = { h->ref.topic, h->ref.partition, h->open_seq, h->start };
	int64_t end;
	bool fresh;
	h->pages = mk_viewmemo_open(fs->views, h->path, &id, h->open_epoch, &end,
				    &fresh);
	if (!h->pages)
		return;
	h->paged = true;
	h->pages_fresh = fresh;
	h->keep_cache = !fresh;
	h->tbase = 0;
	h->marks = mk_xmalloc(sizeof(*h->marks) * 16);
	h->marks_alloc = 16;
	h->marks[0] = (struct mk_page_mark){ 0, h->start, 0 };
	h->nmarks = 1;
}

void mk_handle_unpage(mk_handle *h)
{
	if (!h->pages)
		return;
	mk_viewmemo_close(h->fs->views, h->pages, h->pages_fresh);
	h->pages = NULL;
	h->pages_fresh = false;
	h->paged = false;
	h->keep_cache = false;
	free(h->marks);
	h->marks = NULL;
	h->nmarks = h->marks_alloc = 0;
}

/* A stream read its view to the end: remember the view's length while
 * the partition has not changed since the open. */
static void records_learn(mk_handle *h)
{
	if (!h->memo_ok || h->paged || !h->eof)
		return;
	h->memo_ok = false;    /* once */
	mk_partition *p = handle_partition(h);
	if (mk_partition_seq(p) != h->open_seq)
		return;
	mk_topic *ref = mk_cluster_topic(h->fs->cluster, h->ref.topic->name);
	if (ref != h->ref.topic) {
		mk_topic_put(ref);
		return;
	}
	mk_view_id id = { h->ref.topic, h->ref.partition, h->open_seq, h->start };
	mk_viewmemo_learn(h->fs->views, h->path, &id, h->next,
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
	mk_partition *p = handle_partition(h);
	return mk_partition_seq(p) != h->open_seq &&
	       view_rewritten(h->fs, h->ref.topic, p, h->open_epoch);
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
		size_t pos = 0;
		int64_t next = *end;
		while (pos < frames.len) {
			mk_batch_view b;
			if (mk_frame_decode_header((const uint8_t *)frames.buf + pos,
						   frames.len - pos, 0, false, &b,
						   NULL))
				break;
			pos += b.frame_len;
			if (b.meta.base_offset >= visible)
				break;
			if (!mk_batch_is_control(&b))
				mk_format_records(format, &b, next, visible,
						  SIZE_MAX, &text, &next);
			int64_t after = mk_batch_next_offset(&b);
			if (after > next)
				next = after < visible ? after : visible;
		}
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
	long long pos = h->tbase + (long long)(h->text.len - h->text_pos);
	if (pos < h->marks[h->nmarks - 1].pos + PAGE_MARK_EVERY)
		return;
	if (h->nmarks == h->marks_alloc) {
		h->marks_alloc *= 2;
		h->marks = mk_xrealloc(h->marks, h->marks_alloc * sizeof(*h->marks));
	}
	h->marks[h->nmarks++] = (struct mk_page_mark){ pos, h->next, h->returned };
}

/* Make the text again from the last mark at or before off. */
static void paged_restart(mk_handle *h, long long off)
{
	size_t lo = 0, hi = h->nmarks;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (h->marks[mid].pos <= off)
			lo = mid;
		else
			hi = mid;
	}
	mk_strbuf_reset(&h->text);
	h->text_pos = 0;
	h->tbase = h->marks[lo].pos;
	h->next = h->marks[lo].next;
	h->returned = h->marks[lo].returned;
	h->eof = false;
}

/* Forget the text before off but PAGED_KEEP: text_pos moves (the buffer
 * is compacted only once most of it is behind, so this copies little). */
static void paged_forget(mk_handle *h, long long off)
{
	if (off - h->tbase <= (long long)PAGED_KEEP)
		return;
	size_t d = (size_t)(off - h->tbase) - PAGED_KEEP;
	if (d > h->text.len - h->text_pos)
		d = h->text.len - h->text_pos;
	h->text_pos += d;
	h->tbase += (long long)d;
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
	if (paged_altered(h)) {
		mk_strbuf_addstr(why, "the partition was rewritten (a new leader epoch, or compaction) while this descriptor read it; open it again");
		return MK_FENCED_LEADER_EPOCH;
	}
	if (off < 0)
		off = 0;
	/* Below limit only: the kernel was told no more (viewmemo.h). */
	long long limit = mk_viewmemo_limit(h->pages);
	long long want = off + (long long)size < limit ? off + (long long)size : limit;
	if (off >= want) {
		reply(arg, NULL, 0);
		return MK_OK;
	}
	if (off < h->tbase)
		paged_restart(h, off);
	while (h->tbase + (long long)(h->text.len - h->text_pos) < want && !h->eof) {
		paged_forget(h, off);    /* skipping ahead */
		paged_mark(h);
		size_t before = h->text.len - h->text_pos;
		mk_err err = records_fill(h, before + 1, NULL, NULL, why);
		if (err)
			return err;
		if (h->text.len - h->text_pos == before)
			break;
	}
	long long have = h->tbase + (long long)(h->text.len - h->text_pos);
	if (have > want)
		have = want;
	if (off >= have) {
		reply(arg, NULL, 0);
		return MK_OK;
	}
	reply(arg, h->text.buf + h->text_pos + (off - h->tbase), (size_t)(have - off));
	paged_forget(h, off);
	return MK_OK;
}

static mk_err stream_fill(mk_handle *h, size_t want, const mk_waiter *w,
			  mk_wait *wait, mk_strbuf *why)
{
	/* A stream at its end looks again at every read, as a growing file
	 * does: only max=N ends it for good. */
	if (!max_reached(h))
		h->eof = false;
	return h->ref.def->type == NODE_BATCHES ? batches_fill(h, want, w, wait, why)
						: records_fill(h, want, w, wait, why);
}

long long mk_handle_stream_size(mk_handle *h)
{
	if (h->paged)    /* takes no handle lock */
		return mk_records_paged_size(h->fs, h->pages, &h->ref, h->rp.format);
	if (pthread_mutex_trylock(&h->lock) != 0)
		return (long long)atomic_load(&h->streamed);
	if (h->at_end && h->text.len == h->text_pos) {
		mk_strbuf why = MK_STRBUF_INIT;
		stream_fill(h, 1, NULL, NULL, &why);    /* no waiter: never blocks */
		mk_strbuf_release(&why);
	}
	long long size = (long long)atomic_load(&h->streamed) +
			 (long long)(h->text.len - h->text_pos);
	pthread_mutex_unlock(&h->lock);
	return size;
}

/* mk_handle_read's reply: a copy into the caller's buffer. */
typedef struct {
	char *buf;
	size_t *n;
} copy_reply;

static void copy_out(void *arg, const char *data, size_t n)
{
	copy_reply *c = arg;
	if (n)
		memcpy(c->buf, data, n);
	*c->n = n;
}

mk_err mk_handle_read(mkfs *fs, mk_handle *h, char *buf, size_t size,
		      long long off, const mk_waiter *w, mk_wait *wait,
		      size_t *n, mk_strbuf *why)
{
	*n = 0;
	copy_reply c = { buf, n };
	return mk_handle_read_reply(fs, h, size, off, w, wait, copy_out, &c, why);
}

mk_err mk_handle_read_reply(mkfs *fs, mk_handle *h, size_t size,
			    long long off, const mk_waiter *w, mk_wait *wait,
			    mk_read_reply_fn reply, void *arg, mk_strbuf *why)
{
	mk_err err = MK_OK;
	size_t n;
	if (wait)
		wait->kind = MK_WAIT_NONE;
	pthread_mutex_lock(&h->lock);
	switch (h->ref.def->type) {
	case NODE_RAW: {
		int64_t limit = mk_node_raw_limit(fs, &h->ref);
		if (limit >= 0)
			size = off >= limit ? 0
			       : (uint64_t)(limit - off) < size ? (size_t)(limit - off)
			       : size;
		char *buf = mk_xmalloc(size ? size : 1);
		ssize_t r = pread(h->fd, buf, size, (off_t)off);
		if (r < 0) {
			mk_strbuf_addstr(why, "read failed");
			err = MK_KAFKA_STORAGE_ERROR;
		} else {
			reply(arg, buf, (size_t)r);
		}
		free(buf);
		goto out;
	}
	case NODE_VALUE:
	case NODE_CONTROL:
		/* Snapshots honour the offset, so re-reads and seeks work. */
		if (off < 0 || (size_t)off >= h->text.len) {
			reply(arg, NULL, 0);
			goto out;
		}
		n = h->text.len - (size_t)off < size ? h->text.len - (size_t)off : size;
		reply(arg, h->text.buf + off, n);
		goto out;
	case NODE_RECORDS:
		if (h->paged) {
			err = paged_read(h, size, off, reply, arg, why);
			goto out;
		}
		/* fall through */
	case NODE_BATCHES:
		err = stream_fill(h, size, w, wait, why);
		if (h->memo_ok && h->eof)
			records_learn(h);
		if (err && h->text.len == h->text_pos)
			goto out;
		err = MK_OK;
		break;
	case NODE_POLL:
		err = mk_poll_fill(fs, h, w, wait, why);
		if (err && h->text.len == h->text_pos)
			goto out;
		err = MK_OK;
		break;
	case NODE_APPEND:
		take_receipts(h);
		break;
	case NODE_DIR:
		reply(arg, NULL, 0);
		goto out;
	}
	if (mk_wait_pending(wait))
		goto out;
	/* Streams: hand out what is buffered, ignoring the offset, straight
	 * from the handle's text (no copy here: the reply is written from
	 * it while the lock is held). */
	n = h->text.len - h->text_pos < size ? h->text.len - h->text_pos : size;
	reply(arg, h->text.buf + h->text_pos, n);
	h->text_pos += n;
	if (h->poll)
		mk_poll_consumed(fs, h, n);
	atomic_fetch_add(&h->streamed, n);
	if (h->text_pos == h->text.len) {
		mk_strbuf_reset(&h->text);
		h->text_pos = 0;
	} else if (h->text_pos > (1u << 20)) {
		mk_strbuf_consume(&h->text, h->text_pos);
		h->text_pos = 0;
	}
out:
	pthread_mutex_unlock(&h->lock);
	return err;
}

/* ---- append ----------------------------------------------------------- */

static mk_err open_append(mkfs *fs, mk_handle *h, bool readable, mk_strbuf *why)
{
	h->readable = readable;
	if (mk_topic_name_internal(h->ref.topic->name)) {
		mk_strbuf_addf(why, "%s is an internal topic: only the group coordinator writes it",
			       h->ref.topic->name);
		return MK_TOPIC_AUTHORIZATION_FAILED;
	}
	mk_producer_opts o = {
		.acks = h->ap.acks == MK_ACKS_DEFAULT ? MK_PRODUCER_ACKS_DEFAULT
						       : h->ap.acks,
		.producer = h->ap.producer,
		.seq = h->ap.seq,
		.txn = h->ap.txn,
		.txns = fs->txns,
		.keep_receipts = readable,
	};
	return mk_producer_open(fs->producers, h->ref.topic,
				h->ref.partition < 0 ? MK_PARTITION_ANY : h->ref.partition,
				&o, &h->prod, why);
}

/* Receipts as text: "TOPIC PARTITION BASE COUNT", BASE "-" for acks=0. */
static void take_receipts(mk_handle *h)
{
	mk_receipt r[64];
	size_t n;
	while ((n = mk_producer_take_receipts(h->prod, r, 64)) > 0)
		for (size_t i = 0; i < n; i++) {
			mk_strbuf_addf(&h->text, "%s %d ", h->ref.topic->name, r[i].partition);
			if (r[i].acks == 0)
				mk_strbuf_addstr(&h->text, "-");
			else
				mk_strbuf_addf(&h->text, "%lld", (long long)r[i].base);
			mk_strbuf_addf(&h->text, " %d\n", r[i].count);
		}
}

static mk_err line_too_long(int64_t max, mk_strbuf *why)
{
	mk_strbuf_addf(why, "line longer than message.max.bytes=%lld", (long long)max);
	return MK_MESSAGE_TOO_LARGE;
}

/* A one-record batch's size for a value of len bytes (and the write's
 * key=, if any): what a line of len bytes needs at least. */
static size_t batch_of_one(const mk_parse_opts *opts, size_t len)
{
	return mk_frame_size_of_one(opts->has_key ? opts->key : MK_BYTES_NULL,
				    (mk_bytes){ NULL, (int32_t)len }, NULL, 0);
}

/*
 * Step 1: the carried line completes with this write's first line (or, at
 * the last close, on its own) and is parsed into h->parsed; *used gets the
 * bytes of buf it took. Its record must fit a batch of its own.
 */
static mk_err parse_carried(mk_handle *h, const mk_parse_opts *opts,
			    const char *buf, size_t len, bool final,
			    size_t *used, mk_strbuf *why)
{
	*used = 0;
	if (!h->pending.len)
		return MK_OK;
	const char *nl = memchr(buf, '\n', len);
	size_t head = nl ? (size_t)(nl - buf) + 1 : len;
	if (!nl && !final)
		return h->pending.len + len > opts->max_line
			? line_too_long((int64_t)opts->max_line, why) : MK_OK;
	mk_strbuf_reset(&h->first);
	mk_strbuf_add(&h->first, h->pending.buf, h->pending.len);
	mk_strbuf_add(&h->first, buf, head);
	size_t consumed;
	*used = head;
	mk_err err = mk_parse_records(opts, h->first.buf, h->first.len, true,
				      &h->parsed, &consumed, why);
	if (err || !h->parsed.n)
		return err;
	const mk_record_in *r = &h->parsed.recs[0];
	size_t need = mk_frame_size_of_one(r->key, r->value, r->headers,
					   r->nheaders);
	if (need > opts->max_line) {
		mk_strbuf_addf(why, "a line of %zu bytes needs a %zu-byte batch, over message.max.bytes=%zu",
			       h->first.len - (nl ? 1 : 0), need, opts->max_line);
		return MK_MESSAGE_TOO_LARGE;
	}
	return MK_OK;
}

/*
 * The unterminated line a write leaves, carried bytes of it so far: it
 * can never be sent once it is longer than max_line or, plain, once its
 * one-record batch is over max_line. And when the write is a full piece
 * (`full`: the kernel may be splitting a larger write(2), and the next
 * piece would complete the line), a line whose one-record batch comes
 * within a page of max_line is refused here, at this piece: a later
 * piece's refusal would only shorten the write's count (handles.h).
 */
static mk_err check_carried(const mk_parse_opts *opts, size_t carried,
			    bool full, mk_strbuf *why)
{
	if (carried > opts->max_line)
		return line_too_long((int64_t)opts->max_line, why);
	size_t need = batch_of_one(opts, carried);
	if (opts->format == MK_FORMAT_PLAIN && need > opts->max_line) {
		mk_strbuf_addf(why, "an unterminated line of %zu bytes needs a %zu-byte batch, over message.max.bytes=%zu",
			       carried, need, opts->max_line);
		return MK_MESSAGE_TOO_LARGE;
	}
	if (full && need + (size_t)sysconf(_SC_PAGESIZE) > opts->max_line) {
		mk_strbuf_addf(why, "a write the kernel splits leaves an unterminated line of %zu bytes (a %zu-byte batch) within a page of message.max.bytes=%zu at the end of a full piece: refused there, not by the piece that would complete it",
			       carried, need, opts->max_line);
		return MK_MESSAGE_TOO_LARGE;
	}
	return MK_OK;
}

/* Step 2: the complete lines of the rest; *tail gets the unterminated end. */
static mk_err parse_rest(mk_handle *h, const mk_parse_opts *opts,
			 const char *buf, size_t len, size_t used, bool final,
			 bool full, size_t *tail, mk_strbuf *why)
{
	size_t consumed = 0;
	mk_err err = MK_OK;
	if (used < len)
		err = mk_parse_records(opts, buf + used, len - used, final,
				       &h->parsed, &consumed, why);
	*tail = len - used - consumed;
	size_t carried = (used ? 0 : h->pending.len) + *tail;
	if (!err && !final && carried)
		err = check_carried(opts, carried, full, why);
	return err;
}

/* Step 4: what is carried to the next write once this one was taken. */
static void keep_tail(mk_handle *h, const char *buf, size_t len, size_t used,
		      size_t tail, bool final)
{
	if (used || !h->pending.len || final)
		mk_strbuf_reset(&h->pending);
	if (!final)
		mk_strbuf_add(&h->pending, buf + len - tail, tail);
}

/*
 * The carried line itself was refused as too large: its start was taken
 * by an earlier write, or an earlier piece of this write(2) whose count
 * the kernel tells the writer. It is dropped, never sent, and as the rest
 * of it cannot be told from new data, every later write is refused.
 */
static void drop_carried(mk_handle *h, mk_strbuf *why)
{
	mk_strbuf_addf(why, "; its first %zu bytes, taken by an earlier write or an earlier piece of this one, are dropped, and this descriptor refuses every later write: open the file again",
		       h->pending.len);
	mk_strbuf_reset(&h->pending);
	h->line_refused = true;
}

/* A write after drop_carried. */
static mk_err refused_after_drop(const mk_parse_opts *opts, mk_strbuf *why)
{
	mk_strbuf_addf(why, "this descriptor refused a line over message.max.bytes=%zu part-way through, and what follows cannot be told from the rest of that line: nothing more is taken; open the file again",
		       opts->max_line);
	return MK_MESSAGE_TOO_LARGE;
}

/* A write of len bytes may be a full piece of a larger write(2): more
 * than the session's max_write less a page (the kernel's first piece is
 * max_write less the buffer's offset in its page). */
static bool full_piece(const mkfs *fs, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return fs->max_write > page && len > fs->max_write - page;
}

/*
 * Acknowledgements the producer still owes, looked at once without
 * waiting (see mk_producer_check): pending fills wait with `kind`; the
 * first error is returned once none are owed. Under h->lock.
 */
static mk_err check_acks(mk_handle *h, bool all, mk_wait_kind kind,
			 mk_wait *wait, mk_strbuf *why)
{
	bool pending;
	mk_ack_watch aw;
	mk_err err = mk_producer_check(h->prod, all, &pending, &aw, why);
	if (pending) {
		*wait = (mk_wait){ .kind = kind, .p = aw.p, .seen = aw.seen,
				   .has_ticket = true, .ticket = aw.ticket,
				   .deadline_ms = aw.deadline_ms };
		return MK_OK;
	}
	wait->kind = MK_WAIT_NONE;
	return err;
}

/* An error found before a parked request's acknowledgements came: told
 * when it ends, before theirs. Under h->lock. */
static void hold_error(mk_handle *h, mk_err err, const mk_strbuf *why)
{
	if (!err || h->held)
		return;
	h->held = err;
	mk_strbuf_reset(&h->held_why);
	mk_strbuf_add(&h->held_why, why->buf, why->len);
}

static mk_err take_held(mk_handle *h, mk_err err, mk_strbuf *why)
{
	if (!h->held)
		return err;
	mk_err held = h->held;
	h->held = MK_OK;
	mk_strbuf_reset(why);
	mk_strbuf_add(why, h->held_why.buf, h->held_why.len);
	return held;
}

/*
 * Parse buf (after any carried line) and hand its records to the
 * producer (step 3); a write the producer took moves the carried line on,
 * a refused one changes nothing.
 */
static mk_err append_bytes(mkfs *fs, mk_handle *h, const char *buf, size_t len,
			   bool final, const mk_waiter *w, mk_wait *wait,
			   mk_strbuf *why)
{
	mk_topic_config tc;
	mk_cluster_topic_config(fs->cluster, h->ref.topic, &tc);
	mk_parse_opts opts = {
		.format = h->ap.format,
		.has_key = h->ap.has_key,
		.key = mk_bytes_of(h->ap.key, (size_t)h->ap.key_len),
		.max_line = (size_t)tc.message_max_bytes,
	};
	if (h->line_refused && !final)
		return refused_after_drop(&opts, why);
	mk_parsed_reset(&h->parsed);
	mk_parsed_reserve(&h->parsed, h->pending.len + len);
	size_t used, tail = 0, taken = 0;
	mk_err err = parse_carried(h, &opts, buf, len, final, &used, why);
	/* An error of parse_carried, or of the rest while it took nothing
	 * (no newline), is the carried line's. */
	bool carried_line = h->pending.len && (err || !used);
	if (!err)
		err = parse_rest(h, &opts, buf, len, used, final,
				 !final && full_piece(fs, len), &tail, why);
	if (err == MK_MESSAGE_TOO_LARGE && carried_line)
		drop_carried(h, why);
	if (err)
		return err;
	if (h->parsed.n && wait) {
		/* Append now; the acknowledgements are looked at by the caller
		 * (the write's own, or fsync's and the last close's all). */
		err = mk_producer_append(h->prod, h->parsed.recs, h->parsed.n,
					 &taken, why);
		if (!taken)
			return err;
	} else if (h->parsed.n) {
		err = mk_producer_send(h->prod, h->parsed.recs, h->parsed.n, w,
				       &taken, why);
		if (!taken)
			return err;
	}
	keep_tail(h, buf, len, used, tail, final);
	return err;
}

mk_err mk_handle_write(mkfs *fs, mk_handle *h, const char *buf, size_t size,
		       const mk_waiter *w, mk_wait *wait, mk_strbuf *why)
{
	mk_err err;
	if (wait)
		wait->kind = MK_WAIT_NONE;
	pthread_mutex_lock(&h->lock);
	if (h->ref.def->type == NODE_APPEND && wait) {
		/* A write refused before anything was appended owes nothing:
		 * the look finds nothing pending and its error stands. */
		err = append_bytes(fs, h, buf, size, false, w, wait, why);
		mk_strbuf first = MK_STRBUF_INIT;
		mk_strbuf_add(&first, why->buf, why->len);
		mk_strbuf_reset(why);
		mk_err acked = check_acks(h, false, MK_WAIT_ACKS, wait, why);
		if (mk_wait_pending(wait)) {
			hold_error(h, err, &first);
			err = MK_OK;
		} else if (err) {
			mk_strbuf_reset(why);
			mk_strbuf_add(why, first.buf, first.len);
		} else {
			err = acked;
		}
		mk_strbuf_release(&first);
	} else if (h->ref.def->type == NODE_APPEND)
		err = append_bytes(fs, h, buf, size, false, w, NULL, why);
	else
		err = mk_node_control(fs, &h->ref, buf, size, why);
	pthread_mutex_unlock(&h->lock);
	return err;
}

/*
 * A close of one copy of the descriptor sends nothing: the carried line
 * and the lingering batches wait for the last close, fsync or linger.ms.
 * It reports the error of a batch sent in the background, if any.
 */
mk_err mk_handle_flush(mkfs *fs, mk_handle *h, const mk_waiter *w,
		       mk_strbuf *why)
{
	(void)fs;
	(void)w;
	mk_err err = MK_OK;
	pthread_mutex_lock(&h->lock);
	if (h->prod)
		err = mk_producer_poll(h->prod, why);
	pthread_mutex_unlock(&h->lock);
	return err;
}

/*
 * The carried line as a record, then every lingering batch, awaited; with
 * a wait, sent only: what is owed is looked at once and, while some is,
 * the wait is filled with `kind` (the error so far held for the end).
 * Under h->lock.
 */
static mk_err append_drain(mkfs *fs, mk_handle *h, const mk_waiter *w,
			   mk_wait *wait, mk_wait_kind kind, mk_strbuf *why)
{
	mk_err err = MK_OK;
	if (h->pending.len)
		err = append_bytes(fs, h, "", 0, true, w, wait, why);
	if (!wait) {
		mk_err ferr = mk_producer_flush(h->prod, w, why);
		return err ? err : ferr;
	}
	mk_err ferr = mk_producer_flush_begin(h->prod, why);
	if (!err)
		err = ferr;
	hold_error(h, err, why);
	mk_strbuf_reset(why);
	mk_err acked = check_acks(h, true, kind, wait, why);
	if (mk_wait_pending(wait))
		return MK_OK;
	return take_held(h, acked, why);
}

/* fsync's second step: make the partition's (or topic's) logs durable. */
static mk_err fsync_logs(mk_handle *h)
{
	if (h->ref.partition >= 0)
		return mk_partition_flush(handle_partition(h));
	mk_err err = MK_OK;
	for (int i = 0; i < h->ref.topic->npartitions && !err; i++)
		err = mk_partition_flush(mk_topic_partition(h->ref.topic, i));
	return err;
}

mk_err mk_handle_fsync(mkfs *fs, mk_handle *h, const mk_waiter *w,
		       mk_wait *wait, mk_strbuf *why)
{
	if (wait)
		wait->kind = MK_WAIT_NONE;
	if (h->ref.def->type != NODE_APPEND)
		return MK_OK;
	pthread_mutex_lock(&h->lock);
	mk_err err = append_drain(fs, h, w, wait, MK_WAIT_FSYNC_ACKS, why);
	pthread_mutex_unlock(&h->lock);
	if (err || mk_wait_pending(wait))
		return err;
	return fsync_logs(h);
}

mk_err mk_handle_resume(mkfs *fs, mk_handle *h, mk_wait *wait, mk_strbuf *why)
{
	(void)fs;
	mk_wait_kind kind = wait->kind;
	if (kind != MK_WAIT_ACKS && kind != MK_WAIT_FSYNC_ACKS &&
	    kind != MK_WAIT_CLOSE_ACKS)
		return MK_OK;
	pthread_mutex_lock(&h->lock);
	mk_err err = check_acks(h, kind != MK_WAIT_ACKS, kind, wait, why);
	if (!mk_wait_pending(wait))
		err = take_held(h, err, why);
	pthread_mutex_unlock(&h->lock);
	if (!err && !mk_wait_pending(wait) && kind == MK_WAIT_FSYNC_ACKS)
		err = fsync_logs(h);
	return err;
}

/* The last close of an append descriptor: what it still holds is sent;
 * errors can only go to /errors now. */
static void append_release(mk_handle *h)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = append_drain(h->fs, h, NULL, NULL, MK_WAIT_NONE, &why);
	mk_err held = take_held(h, MK_OK, &why);
	if (!err)
		err = held;
	mk_producer_close(h->prod, NULL, &why);
	h->prod = NULL;
	if (err)
		mk_errlog_add(&h->fs->cluster->errlog,
			      mk_clock_now(&h->fs->cluster->clock), h->path, err,
			      "at the last close: %s", why.len ? why.buf : mk_err_name(err));
	mk_strbuf_release(&why);
}

bool mk_handle_close_begin(mk_handle *h, mk_wait *wait)
{
	wait->kind = MK_WAIT_NONE;
	if (!h->prod)
		return true;
	mk_strbuf why = MK_STRBUF_INIT;
	pthread_mutex_lock(&h->lock);
	mk_err err = append_drain(h->fs, h, NULL, wait, MK_WAIT_CLOSE_ACKS, &why);
	/* Settled with an error: held for mk_handle_close's /errors line. */
	hold_error(h, err, &why);
	pthread_mutex_unlock(&h->lock);
	mk_strbuf_release(&why);
	return !mk_wait_pending(wait);
}
