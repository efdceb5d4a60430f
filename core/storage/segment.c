/*
 * segment.c — one .log file with its two indexes (segment.h; index.h the
 * offset index, timeindex.h the time index).
 *
 * Organisation:
 *   - the frame reader: a window of file bytes in a strbuf, refilled by
 *     pread in chunks, decoded in place with mk_frame_decode();
 *   - scan(): the one loop that walks a segment from byte 0 checking every
 *     frame and the order of offsets. Recovery of the active segment, index
 *     rebuilds and the boundary check of a truncation are all scans;
 *   - index_batch(): the one place deciding when a batch gets index
 *     entries (an offset entry, and a time entry alongside when the max
 *     timestamp grew), shared by appends (kept pending, written a page at
 *     a time, entryfile.h) and rebuilds (in memory, then written whole);
 *     the two index files are handled alike (index_file()) wherever
 *     only their entry files matter: open, write, sync, crash, close;
 *   - lifecycle: create, open closed/active, append, truncate, seal, flush,
 *     crash, close, remove. Sealing (at roll) does no I/O beyond the final
 *     index entry and the pending entries; the flush that makes a sealed
 *     segment durable is the log's to schedule (log_flush.c runs it on its
 *     flusher thread).
 */
#include "segment.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "failpoint.h"
#include "fileio.h"
#include "xalloc.h"

#define FIRST_CHUNK (16u * 1024)
#define SCAN_CHUNK (1024u * 1024)

/* ---- messages ------------------------------------------------------------ */

static void say_at(mk_strbuf *why, const char *path, uint64_t pos,
		   const char *reason)
{
	mk_why(why, "%s at byte %llu: %s", path,
	       (unsigned long long)pos, reason);
}

/* ---- the frame reader ---------------------------------------------------- */

/* ---- the two index files ------------------------------------------------ */

#define NINDEXES 2

/* Index file k: 0 the offset index (.index), 1 the time index. */
static mk_entry_file *index_file(mk_segment *s, int k)
{
	return k == 0 ? &s->index.f : &s->timeindex.f;
}

static const char *index_path(const mk_segment *s, int k)
{
	return k == 0 ? s->index_path : s->timeindex_path;
}

/* Drop both indexes' entries, in memory only (a rebuild's start). */
static void clear_indexes(mk_segment *s)
{
	for (int k = 0; k < NINDEXES; k++)
		mk_entries_clear(index_file(s, k));
}

/* ---- descriptors, through the cache --------------------------------------- */

typedef struct {
	bool indexes;           /* the index files too */
	mk_err err;
	mk_strbuf *why;
} open_req;

#define SEG_OF(n) ((mk_segment *)((char *)(n) - offsetof(mk_segment, node)))

/* Under the cache lock: open what the use needs. */
static int seg_open_cb(mk_fdcache_node *n, void *arg)
{
	mk_segment *s = SEG_OF(n);
	open_req *req = arg;
	int opened = 0;
	if (s->fd < 0) {
		s->fd = open(s->log_path, O_RDWR | O_CLOEXEC);
		if (s->fd < 0) {
			req->err = mk_io_error(req->why, s->log_path, "cannot open");
			return opened;
		}
		opened++;
	}
	if (!req->indexes)
		return opened;
	for (int k = 0; k < NINDEXES; k++) {
		mk_entry_file *f = index_file(s, k);
		if (mk_entries_attached(f))
			continue;
		if (mk_entries_open(f, index_path(s, k))) {
			req->err = mk_io_error(req->why, index_path(s, k),
					       "cannot open");
			return opened;
		}
		opened++;
	}
	return opened;
}

/* Under the cache lock, the segment unpinned: close every descriptor.
 * What was written stays in the page cache; a later fsync through a new
 * descriptor still makes it durable (Linux syncs the inode). */
static int seg_evict_cb(mk_fdcache_node *n)
{
	mk_segment *s = SEG_OF(n);
	int closed = 0;
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
		closed++;
	}
	for (int k = 0; k < NINDEXES; k++) {
		if (mk_entries_attached(index_file(s, k))) {
			mk_entries_evict(index_file(s, k));
			closed++;
		}
	}
	return closed;
}

/* Pin the segment with its .log (and index files) open. */
static mk_err seg_use(mk_segment *s, bool indexes, mk_strbuf *why)
{
	open_req req = { indexes, MK_OK, why };
	mk_fdcache_use(s->cache, &s->node, &req);
	if (req.err)
		mk_fdcache_done(s->cache, &s->node);
	return req.err;
}

static void seg_done(mk_segment *s)
{
	mk_fdcache_done(s->cache, &s->node);
}

void mk_segment_reader_init(mk_segment_reader *r, const mk_segment *s,
			    uint64_t pos, uint64_t limit, mk_strbuf *buf,
			    size_t max_chunk)
{
	assert(pos <= limit);
	r->seg = s;
	r->buf = buf;
	r->tail = buf->len;
	r->wpos = pos;
	r->cur = 0;
	r->frame_len = 0;
	r->keeping = false;
	r->limit = limit;
	r->max_chunk = max_chunk ? max_chunk : SCAN_CHUNK;
	r->chunk = r->max_chunk < FIRST_CHUNK ? r->max_chunk : FIRST_CHUNK;
	r->reason = NULL;
}

static size_t window_len(const mk_segment_reader *r)
{
	return r->buf->len - r->tail;
}

static uint8_t *window(const mk_segment_reader *r)
{
	return (uint8_t *)r->buf->buf + r->tail;
}

/* Drop the window bytes before the cursor (nothing kept yet). */
static void compact(mk_segment_reader *r)
{
	assert(!r->keeping);
	if (!r->cur)
		return;
	size_t rest = window_len(r) - r->cur;
	memmove(window(r), window(r) + r->cur, rest);
	r->wpos += r->cur;
	r->cur = 0;
	mk_strbuf_setlen(r->buf, r->tail + rest);
}

/* Make [cur, cur + n) of the window hold file bytes; n fits the limit. */
static mk_err fill(mk_segment_reader *r, size_t n)
{
	size_t have = window_len(r) - r->cur;
	if (have >= n)
		return MK_OK;
	if (!r->keeping)
		compact(r);
	uint64_t at = r->wpos + window_len(r);
	assert(at <= r->limit && r->limit - at >= n - have);
	size_t want = n - have;
	if (want < r->chunk)
		want = r->chunk;
	if (want > r->limit - at)
		want = (size_t)(r->limit - at);
	mk_strbuf_grow(r->buf, want);
	mk_segment *s = (mk_segment *)r->seg;   /* the cache's fields only */
	if (seg_use(s, false, NULL)) {
		r->reason = "cannot open";
		return MK_KAFKA_STORAGE_ERROR;
	}
	mk_err err = mk_pread_all(s->fd, r->buf->buf + r->buf->len, want,
				  (long long)at);
	seg_done(s);
	if (err == MK_CORRUPT_MESSAGE) {
		r->reason = "file shorter than expected";
		return MK_CORRUPT_MESSAGE;
	}
	if (err) {
		r->reason = "read failed";
		return MK_KAFKA_STORAGE_ERROR;
	}
	mk_strbuf_setlen(r->buf, r->buf->len + want);
	/* Small first reads; larger ones as the walk goes on. */
	if (r->chunk < r->max_chunk)
		r->chunk = r->chunk * 2 < r->max_chunk ? r->chunk * 2
						       : r->max_chunk;
	return MK_OK;
}

/* The bytes at the cursor are known bad: let the decoder say why. */
static mk_err reject(mk_segment_reader *r, size_t n)
{
	mk_batch_view b;
	const char *why = NULL;
	if (mk_frame_decode(window(r) + r->cur, n, 0, &b, &why) == MK_OK ||
	    !why)
		why = "bad frame";
	r->reason = why;
	return MK_CORRUPT_MESSAGE;
}

mk_err mk_segment_reader_next(mk_segment_reader *r, mk_batch_view *b,
			      bool *done)
{
	*done = false;
	uint64_t pos = mk_segment_reader_pos(r);
	if (pos >= r->limit) {
		*done = true;
		return MK_OK;
	}
	uint64_t left = r->limit - pos;
	size_t hdr = left < MK_FRAME_HEADER ? (size_t)left : MK_FRAME_HEADER;
	mk_err err = fill(r, hdr);
	if (err)
		return err;
	if (hdr < MK_FRAME_HEADER)
		return reject(r, hdr);
	const uint8_t *p = window(r) + r->cur;
	int32_t blen = (int32_t)mk_load_be32(p + MK_FRAME_OFF_LENGTH);
	if (p[MK_FRAME_OFF_MAGIC] != MK_BATCH_MAGIC ||
	    blen < MK_FRAME_HEADER - MK_FRAME_LOG_OVERHEAD ||
	    (uint32_t)blen > MK_FRAME_MAX_PAYLOAD)
		return reject(r, hdr);
	size_t need = MK_FRAME_LOG_OVERHEAD + (size_t)blen;
	size_t take = need <= left ? need : (size_t)left;
	err = fill(r, take);
	if (err)
		return err;
	const char *why = NULL;
	if (mk_frame_decode(window(r) + r->cur, take, 0, b, &why)) {
		r->reason = why ? why : "bad frame";
		return MK_CORRUPT_MESSAGE;
	}
	assert(b->frame_len == need);
	r->frame_len = need;
	return MK_OK;
}

void mk_segment_reader_skip(mk_segment_reader *r)
{
	assert(!r->keeping && r->frame_len);
	r->cur += r->frame_len;
	r->frame_len = 0;
}

void mk_segment_reader_keep(mk_segment_reader *r)
{
	assert(r->frame_len);
	if (!r->keeping) {
		compact(r);
		r->keeping = true;
	}
	r->cur += r->frame_len;
	r->frame_len = 0;
}

void mk_segment_read_ahead(mk_segment *s, uint64_t pos, uint64_t len)
{
	if (seg_use(s, false, NULL))
		return;
	(void)posix_fadvise(s->fd, (off_t)pos, (off_t)len, POSIX_FADV_WILLNEED);
	seg_done(s);
}

uint64_t mk_segment_reader_pos(const mk_segment_reader *r)
{
	return r->wpos + r->cur;
}

size_t mk_segment_reader_finish(mk_segment_reader *r)
{
	size_t kept = r->keeping ? r->cur : 0;
	mk_strbuf_setlen(r->buf, r->tail + kept);
	return kept;
}

/* ---- indexing ------------------------------------------------------------ */

/*
 * The time entry for the max timestamp so far, max_ts, first reached by
 * the batch based at max_base (-1: no batch yet), when it grew since the
 * last time entry (Kafka's maybeAppend): made alongside each offset entry
 * and at the seal (Kafka's onBecomeInactiveSegment), so that a closed
 * segment's last time entry carries its max timestamp.
 */
static mk_err time_entry(mk_segment *s, int64_t max_ts, int64_t max_base,
			 bool write, mk_strbuf *why)
{
	if (max_base < 0)
		return MK_OK;
	assert(max_base >= s->base && max_base - s->base <= UINT32_MAX);
	if (mk_time_index_maybe_add(&s->timeindex, max_ts,
				    (uint32_t)(max_base - s->base), write))
		return mk_io_error(why, s->timeindex_path, "write failed");
	return MK_OK;
}

/*
 * Index entries for the batch at pos: an offset entry for the first batch
 * and then whenever interval bytes have passed since the last one (the
 * interval counted from the last entry's position: Kafka counts the bytes
 * appended since it, alike but for the first batch, which Kafka leaves
 * out); with it, the time entry for the max timestamp so far (max_ts,
 * this batch included, first reached by the batch at max_base).
 */
static mk_err index_batch(mk_segment *s, const mk_batch_view *b, uint64_t pos,
			  int64_t max_ts, int64_t max_base, int64_t interval,
			  bool write, mk_strbuf *why)
{
	assert(b->meta.base_offset >= s->base &&
	       b->meta.base_offset - s->base <= UINT32_MAX && pos <= UINT32_MAX);
	uint32_t rel = (uint32_t)(b->meta.base_offset - s->base);
	mk_offset_entry last;
	if (mk_offset_index_last(&s->index, &last) &&
	    (int64_t)(pos - last.pos) < interval)
		return MK_OK;
	if (mk_offset_index_add(&s->index, rel, (uint32_t)pos, write))
		return mk_io_error(why, s->index_path, "write failed");
	return time_entry(s, max_ts, max_base, write, why);
}

/* ---- the scan ------------------------------------------------------------ */

void mk_batch_place_init(mk_batch_place *pl, int64_t base, int64_t limit,
			 int32_t max_epoch)
{
	*pl = (mk_batch_place){ base, limit, base, -1, max_epoch };
}

const char *mk_batch_misplaced(mk_batch_place *pl, const mk_batch_view *b)
{
	if (b->meta.base_offset < pl->base)
		return "offset below the segment base";
	if (b->meta.base_offset < pl->next)
		return "offsets out of order";
	if (mk_batch_last_offset(b) >= pl->limit)
		return "offset at or past the next segment's base";
	int32_t e = b->meta.leader_epoch;
	bool cache = pl->max_epoch != MK_PLACE_NO_CACHE;
	if (e >= 0 && (e < pl->epoch || e > pl->max_epoch))
		return cache ? "leader epoch out of order"
			     : "leader epoch went down";
	pl->next = mk_batch_next_offset(b);
	if (e >= 0)
		pl->epoch = e;
	return NULL;
}

typedef struct {
	uint64_t valid;         /* end of the last accepted batch */
	const char *reason;     /* set when a bad frame or order stopped it */
	uint64_t bad_pos;
	bool stopped;           /* stopped before a batch with base >= stop */
	int64_t stopped_base;
	int64_t next_offset;
	int64_t max_ts;
	int64_t max_base;       /* the first batch reaching max_ts, or -1 */
	int64_t last_base;
	uint64_t last_pos;      /* last_base's position */
	int32_t last_epoch;     /* the last epoch >= 0 seen, or -1 */
} scan_result;

/*
 * Walk [0, limit) frame by frame. Each batch must decode, sit where
 * mk_batch_misplaced says it may (after the previous one, below end_limit,
 * its epoch not going down; no epoch cache here) and fit the u32 index
 * fields; the first that does not ends the scan with a reason. The scan
 * also ends before a batch whose base is >= stop. With build, both
 * indexes are rebuilt in memory. Only I/O failure is an error.
 */
static mk_err scan(mk_segment *s, uint64_t limit, int64_t end_limit,
		   int64_t stop, int64_t interval, bool build,
		   mk_segment_batch_fn fn, void *arg, scan_result *res,
		   mk_strbuf *why)
{
	memset(res, 0, sizeof(*res));
	res->next_offset = s->base;
	res->max_ts = INT64_MIN;
	res->max_base = -1;
	res->last_base = -1;
	res->last_epoch = -1;
	if (build)
		clear_indexes(s);
	mk_strbuf buf = MK_STRBUF_INIT;
	mk_segment_reader r;
	mk_segment_reader_init(&r, s, 0, limit, &buf, SCAN_CHUNK);
	mk_batch_place place;
	mk_batch_place_init(&place, s->base, end_limit, MK_PLACE_NO_CACHE);
	mk_err err = MK_OK;
	for (;;) {
		mk_batch_view b;
		bool done;
		uint64_t pos = mk_segment_reader_pos(&r);
		err = mk_segment_reader_next(&r, &b, &done);
		if (err == MK_CORRUPT_MESSAGE) {
			res->reason = r.reason;
			res->bad_pos = pos;
			err = MK_OK;
			break;
		}
		if (err) {
			say_at(why, s->log_path, pos, r.reason);
			break;
		}
		if (done)
			break;
		int64_t base = b.meta.base_offset, last = mk_batch_last_offset(&b);
		/* Besides its place, what the u32 index fields can hold. */
		const char *bad = mk_batch_misplaced(&place, &b);
		if (!bad && last - s->base > (int64_t)UINT32_MAX)
			bad = "offset too far from the segment base";
		else if (!bad && pos + b.frame_len > UINT32_MAX)
			bad = "segment larger than 4 GiB";
		if (bad) {
			res->reason = bad;
			res->bad_pos = pos;
			break;
		}
		if (base >= stop) {
			res->stopped = true;
			res->stopped_base = base;
			break;
		}
		if (res->max_base < 0 || b.max_timestamp > res->max_ts) {
			res->max_ts = b.max_timestamp;
			res->max_base = base;
		}
		if (build)
			index_batch(s, &b, pos, res->max_ts, res->max_base,
				    interval, false, NULL);
		if (fn)
			fn(arg, &b, pos);
		res->next_offset = place.next;
		res->last_base = base;
		res->last_pos = pos;
		res->last_epoch = place.epoch;
		res->valid = pos + b.frame_len;
		mk_segment_reader_skip(&r);
	}
	mk_strbuf_release(&buf);
	return err;
}

/* What an active segment knows of its batches, from a scan of all of them. */
static void take_scan(mk_segment *s, const scan_result *res)
{
	s->next_offset = res->next_offset;
	s->max_ts = res->max_ts;
	s->max_ts_base = res->max_base;
	s->last_base = res->last_base;
	s->last_pos = res->last_pos;
}

/* Zeros into [from, to) of fd (to - from at most MK_SEGMENT_ZERO_TAIL_MAX):
 * one pwritev per MK_SEGMENT_RUNWAY-aligned piece. The page cache sizes a
 * new folio by the write that creates it, and a later small write into a
 * folio walks all of its buffer heads (twice: begin and commit), so zeros
 * written in one 1 MiB piece make every small append after them pay for a
 * 1 MiB folio: measured, 16 files' appends of 10 KiB cost 1.3-1.9 times
 * what they cost in 256 KiB folios (one file's 160 KiB appends cost the
 * same in either; bench/README.md, "Folios of the prefill"). Returns
 * where the file's zeros end (from when nothing was written). */
static uint64_t write_zeros(int fd, uint64_t from, uint64_t to)
{
	/* Read-only zeros; the .bss keeps them out of the binary. */
	static uint8_t zeros[64 * 1024];
	struct iovec z[MK_SEGMENT_RUNWAY / sizeof(zeros) + 1];
	assert(to >= from && to - from <= MK_SEGMENT_ZERO_TAIL_MAX);
	uint64_t at = from;
	while (at < to) {
		uint64_t end = (at / MK_SEGMENT_RUNWAY + 1) * MK_SEGMENT_RUNWAY;
		if (end > to)
			end = to;
		int nz = 0;
		for (uint64_t o = at; o < end; nz++) {
			uint64_t l = end - o < sizeof(zeros) ? end - o : sizeof(zeros);
			z[nz].iov_base = zeros;
			z[nz].iov_len = (size_t)l;
			o += l;
		}
		ssize_t w = pwritev(fd, z, nz, (off_t)at);
		if (w <= 0)
			break;
		at += (uint64_t)w;
		if (at < end)
			break;   /* short: the file can take no more */
	}
	return at;
}

/* How long the .log is: its frames, or up to the end of its runway
 * (segment.h's invariant). */
static uint64_t file_len(const mk_segment *s)
{
	return s->runway_end ? s->runway_end : s->size;
}

/* ---- lifecycle ----------------------------------------------------------- */

static char *seg_path(const char *dir, size_t dlen, const char digits[20],
		      const char *ext)
{
	size_t elen = strlen(ext);
	char *p = mk_xmalloc(dlen + 1 + 20 + elen + 1);
	memcpy(p, dir, dlen);
	p[dlen] = '/';
	memcpy(p + dlen + 1, digits, 20);
	memcpy(p + dlen + 21, ext, elen + 1);
	return p;
}

static mk_segment *seg_new(const char *dir, int64_t base, mk_fdcache *cache)
{
	assert(base >= 0);
	mk_segment *s = mk_xcalloc(1, sizeof(*s));
	s->base = base;
	s->cache = cache;
	s->node.open = seg_open_cb;
	s->node.evict = seg_evict_cb;
	/* DIR/%020lld.EXT, formatted by hand: a mount makes three per
	 * closed segment. */
	char digits[20];
	uint64_t v = (uint64_t)base;
	for (int i = 19; i >= 0; i--, v /= 10)
		digits[i] = (char)('0' + v % 10);
	size_t dlen = strlen(dir);
	s->log_path = seg_path(dir, dlen, digits, ".log");
	s->index_path = seg_path(dir, dlen, digits, ".index");
	s->timeindex_path = seg_path(dir, dlen, digits, ".timeindex");
	s->txnindex_path = seg_path(dir, dlen, digits, ".txnindex");
	s->txnindex_size = -1;
	s->fd = -1;
	s->sized = true;
	mk_offset_index_init(&s->index);
	mk_time_index_init(&s->timeindex);
	s->next_offset = -1;
	s->max_ts = INT64_MIN;
	s->max_ts_base = -1;
	s->last_base = -1;
	return s;
}

void mk_segment_close(mk_segment *s)
{
	if (!s)
		return;
	mk_fdcache_forget(s->cache, &s->node);
	/* The runway goes (best effort: left, the next open cuts it). */
	if (s->runway_end > s->size) {
		int r = s->fd >= 0 ? ftruncate(s->fd, (off_t)s->size)
				   : truncate(s->log_path, (off_t)s->size);
		(void)r;
	}
	if (s->fd >= 0)
		close(s->fd);
	for (int k = 0; k < NINDEXES; k++)
		mk_entries_close(index_file(s, k));
	free(s->log_path);
	free(s->index_path);
	free(s->timeindex_path);
	free(s->txnindex_path);
	free(s);
}

/* A closed segment's indexes are only read: their files need no fd.
 * Inside a use. */
static void detach_indexes(mk_segment *s)
{
	if (s->active)
		return;
	int closed = 0;
	for (int k = 0; k < NINDEXES; k++) {
		if (mk_entries_attached(index_file(s, k))) {
			mk_entries_detach(index_file(s, k));
			closed++;
		}
	}
	if (closed)
		mk_fdcache_adjust(s->cache, &s->node, -closed);
}

/* Each index file: make it hold exactly the in-memory entries (write),
 * or fsync what was written since the last sync (write false). */
static mk_err store_indexes(mk_segment *s, bool write, mk_strbuf *why)
{
	for (int k = 0; k < NINDEXES; k++) {
		mk_entry_file *f = index_file(s, k);
		if (write ? mk_entries_write_all(f) : mk_entries_sync(f))
			return mk_io_error(why, index_path(s, k),
					   write ? "write failed" : "fsync failed");
	}
	return MK_OK;
}

static mk_err write_indexes(mk_segment *s, mk_strbuf *why)
{
	return store_indexes(s, true, why);
}

static mk_err sync_indexes(mk_segment *s, mk_strbuf *why)
{
	return store_indexes(s, false, why);
}

/* The end of making a new segment's files: on success s becomes the
 * empty active segment in *out; on err it is closed. */
static mk_err seg_made(mk_segment *s, mk_err err, mk_segment **out)
{
	if (err) {
		mk_segment_close(s);
		return err;
	}
	s->active = true;
	s->indexes_loaded = true;
	s->next_offset = s->base;
	/* A stale .txnindex of an earlier segment at this base goes too
	 * (best effort: open rewrites every one from the producer state). */
	(void)unlink(s->txnindex_path);
	s->txnindex_size = 0;
	*out = s;
	return MK_OK;
}

mk_err mk_segment_create(const char *dir, int64_t base, mk_fdcache *cache,
			 mk_segment **out, mk_strbuf *why)
{
	*out = NULL;
	mk_segment *s = seg_new(dir, base, cache);
	mk_err err = MK_OK;
	int fd = open(s->log_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = mk_io_error(why, s->log_path, "cannot create");
		mk_segment_close(s);
		return err;
	}
	close(fd);
	MK_FAILPOINT("segment.create.after-open");
	if ((err = seg_use(s, true, why))) {
		mk_segment_close(s);
		return err;
	}
	/* Stale index files of an earlier segment at this base go (new,
	 * empty ones are left alone: no write, and so no fsync). */
	err = write_indexes(s, why);
	seg_done(s);
	return seg_made(s, err, out);
}

/* ---- prepared segment files ---------------------------------------------- */

/* The .log first, then the index files in index_file()'s order. */
#define NPREPARED (1 + NINDEXES)

static const char *const prepared_names[NPREPARED] = {
	"prepared.log.tmp", "prepared.index.tmp", "prepared.timeindex.tmp",
};

static char *prepared_path(const char *dir, int i)
{
	mk_strbuf p = MK_STRBUF_INIT;
	mk_strbuf_addf(&p, "%s/%s", dir, prepared_names[i]);
	return mk_strbuf_detach(&p, NULL);
}

bool mk_segment_prepared_name(const char *name)
{
	for (int i = 0; i < NPREPARED; i++)
		if (!strcmp(name, prepared_names[i]))
			return true;
	return false;
}

mk_err mk_segment_prepare(const char *dir, uint64_t prefill, mk_strbuf *why)
{
	if (prefill > MK_SEGMENT_PREFILL_MAX)
		prefill = MK_SEGMENT_PREFILL_MAX;
	for (int i = 0; i < NPREPARED; i++) {
		char *path = prepared_path(dir, i);
		/* A new inode, never one truncated in place: a prepared name
		 * may still be linked to a segment (rename_new's fallback
		 * when its unlink failed). The roll renamed the last ones
		 * away, so the name is free as a rule: create first, and
		 * unlink only what is in the way. */
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno == EEXIST) {
			if (unlink(path) && errno != ENOENT) {
				mk_err err = mk_io_error(why, path, "cannot delete");
				free(path);
				return err;
			}
			fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
				  0644);
		}
		mk_err err = fd < 0 ? mk_io_error(why, path, "cannot create") : MK_OK;
		free(path);
		if (err)
			return err;
		/* The new segment's first runway (best effort: adoption
		 * takes the length the file has). */
		if (i == 0 && prefill)
			write_zeros(fd, 0, prefill);
		close(fd);
		if (i == 0)
			MK_FAILPOINT("segment.prepare.after-log");
	}
	return MK_OK;
}

void mk_segment_discard_prepared(const char *dir)
{
	for (int i = 0; i < NPREPARED; i++) {
		char *path = prepared_path(dir, i);
		unlink(path);   /* best effort: the next open tries again */
		free(path);
	}
}

/* Rename from to to, never replacing an existing to (EEXIST). */
static int rename_new(const char *from, const char *to)
{
	if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* A file system without RENAME_NOREPLACE: link refuses to replace. */
	if (link(from, to))
		return -1;
	unlink(from);
	return 0;
}

/* The prepared index files renamed into place; one not prepared after
 * all becomes an empty file, as create leaves it (stale entries go). */
static mk_err adopt_indexes(mk_segment *s, const char *dir, mk_strbuf *why)
{
	mk_err err = MK_OK;
	for (int k = 0; k < NINDEXES && !err; k++) {
		char *from = prepared_path(dir, 1 + k);
		const char *to = index_path(s, k);
		if (rename(from, to)) {
			int fd = open(to, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
				      0644);
			if (fd < 0)
				err = mk_io_error(why, to, "cannot create");
			else
				close(fd);
		}
		free(from);
	}
	return err;
}

mk_err mk_segment_create_prepared(const char *dir, int64_t base,
				  mk_fdcache *cache, mk_segment **out,
				  mk_strbuf *why)
{
	*out = NULL;
	mk_segment *s = seg_new(dir, base, cache);
	char *from = prepared_path(dir, 0);
	int rc = rename_new(from, s->log_path);
	free(from);
	if (rc) {
		/* The prepared .log cannot be taken (gone, or a file system
		 * with neither RENAME_NOREPLACE nor hard links): the files are
		 * created as without it. An existing segment fails there as
		 * here. */
		mk_segment_close(s);
		return mk_segment_create(dir, base, cache, out, why);
	}
	MK_FAILPOINT("segment.adopt.after-log");
	mk_err err = adopt_indexes(s, dir, why);
	/* The .log holds no frame, maybe a runway of zeros (prepare); the
	 * index files hold exactly what memory does (nothing); nothing needs
	 * an fsync yet. */
	struct stat st;
	if (!err && !stat(s->log_path, &st) && st.st_size > 0)
		s->runway_end = (uint64_t)st.st_size;
	return seg_made(s, err, out);
}

mk_err mk_segment_open_closed(const char *dir, int64_t base,
			      mk_fdcache *cache, mk_segment **out,
			      mk_strbuf *why)
{
	return mk_segment_open_closed_at(AT_FDCWD, dir, base, cache, out, why);
}

mk_err mk_segment_open_unsized(const char *dir, int64_t base,
			       mk_fdcache *cache, mk_segment **out)
{
	*out = seg_new(dir, base, cache);
	(*out)->sized = false;
	return MK_OK;
}

mk_err mk_segment_know_size(mk_segment *s, mk_strbuf *why)
{
	if (s->sized)
		return MK_OK;
	struct stat st;
	if (stat(s->log_path, &st))
		return mk_io_error(why, s->log_path, "cannot open");
	s->size = s->flushed = (uint64_t)st.st_size;
	s->sized = true;
	return MK_OK;
}

mk_err mk_segment_open_closed_at(int dirfd, const char *dir, int64_t base,
				 mk_fdcache *cache, mk_segment **out,
				 mk_strbuf *why)
{
	*out = NULL;
	mk_segment *s = seg_new(dir, base, cache);
	struct stat st;
	/* Relative to dirfd when given: one name to look up, not a path. */
	const char *name = dirfd == AT_FDCWD ? s->log_path
			   : s->log_path + strlen(dir) + 1;
	if (fstatat(dirfd, name, &st, 0)) {
		mk_err err = mk_io_error(why, s->log_path, "cannot open");
		mk_segment_close(s);
		return err;
	}
	s->size = s->flushed = (uint64_t)st.st_size;
	*out = s;
	return MK_OK;
}

/* Does [from, to) of the .log hold only zeros, and no more than a runway
 * can (header)? Inside a use. */
static bool zero_tail(mk_segment *s, uint64_t from, uint64_t to)
{
	uint8_t buf[16 * 1024];
	if (to - from > MK_SEGMENT_ZERO_TAIL_MAX)
		return false;
	while (from < to) {
		size_t want = to - from < sizeof(buf) ? (size_t)(to - from) : sizeof(buf);
		ssize_t r = pread(s->fd, buf, want, (off_t)from);
		if (r <= 0)
			return false;
		for (ssize_t i = 0; i < r; i++)
			if (buf[i])
				return false;
		from += (uint64_t)r;
	}
	return true;
}

mk_err mk_segment_open_active(const char *dir, int64_t base, int64_t end_limit,
			      int64_t durable_to, mk_fdcache *cache,
			      int64_t interval, mk_segment_batch_fn fn,
			      void *arg, mk_segment **out, uint64_t *cut,
			      mk_strbuf *why)
{
	*out = NULL;
	*cut = 0;
	mk_segment *s = seg_new(dir, base, cache);
	mk_err err = MK_OK;
	struct stat st;
	int fd = open(s->log_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		err = mk_io_error(why, s->log_path, "cannot open");
		mk_segment_close(s);
		return err;
	}
	close(fd);
	if ((err = seg_use(s, true, why))) {
		mk_segment_close(s);
		return err;
	}
	uint64_t phys = (uint64_t)st.st_size;
	scan_result res;
	err = scan(s, phys, end_limit, INT64_MAX, interval, true, fn, arg,
		   &res, why);
	if (err)
		goto fail;
	if (res.reason && !strcmp(res.reason, MK_FRAME_MKF2_REASON)) {
		/* Another format's bytes are not damage: never cut them. */
		say_at(why, s->log_path, res.valid,
		       MK_FRAME_MKF2_REASON ", which this version does not read; the file is left as it is");
		err = MK_KAFKA_STORAGE_ERROR;
		goto fail;
	}
	if (res.valid < phys) {
		/* A runway left by a stop that did not cut it is no loss. */
		if (!zero_tail(s, res.valid, phys)) {
			*cut = phys - res.valid;
			say_at(why, s->log_path, res.valid,
			       res.reason ? res.reason : "invalid tail");
		}
		if (ftruncate(s->fd, (off_t)res.valid)) {
			err = mk_io_error(why, s->log_path, "truncate failed");
			goto fail;
		}
	}
	s->size = res.valid;
	s->active = true;
	s->indexes_loaded = true;
	take_scan(s, &res);
	if ((err = write_indexes(s, why)))
		goto fail;
	/* What survived is made durable, so that `flushed` tells the truth;
	 * unless it is known to be (all below durable_to, nothing cut) or
	 * empty: a mount after a clean stop then issues no fsync (each one
	 * a disk cache flush) per log. */
	bool durable = s->size == 0 ||
		       (res.valid == phys && s->next_offset <= durable_to);
	if (!durable && fsync(s->fd)) {
		err = mk_io_error(why, s->log_path, "fsync failed");
		goto fail;
	}
	s->flushed = s->size;
	seg_done(s);
	*out = s;
	return MK_OK;
fail:
	seg_done(s);
	mk_segment_close(s);
	return err;
}

static mk_err rebuild_indexes(mk_segment *s, int64_t end_limit,
			       int64_t interval, mk_strbuf *why);

mk_err mk_segment_rebuild_indexes(mk_segment *s, int64_t end_limit,
				  int64_t interval, mk_strbuf *why)
{
	mk_err err = mk_segment_know_size(s, why);
	if (!err)
		err = seg_use(s, true, why);
	if (err)
		return err;
	err = rebuild_indexes(s, end_limit, interval, why);
	seg_done(s);
	return err;
}

/* Inside a use with the indexes. */
static mk_err rebuild_indexes(mk_segment *s, int64_t end_limit,
			      int64_t interval, mk_strbuf *why)
{
	mk_err err;
	s->indexes_loaded = false;
	scan_result res;
	err = scan(s, s->size, end_limit, INT64_MAX, interval, true, NULL, NULL,
		   &res, why);
	if (!err && res.reason) {
		say_at(why, s->log_path, res.bad_pos, res.reason);
		err = MK_KAFKA_STORAGE_ERROR;
	}
	if (err) {
		clear_indexes(s);
		return err;
	}
	assert(res.valid == s->size);
	if (s->active)
		take_scan(s, &res);
	else
		time_entry(s, res.max_ts, res.max_base, false, NULL);
	if ((err = write_indexes(s, why)) || (err = sync_indexes(s, why)))
		return err;
	s->indexes_loaded = true;
	detach_indexes(s);
	return MK_OK;
}

/*
 * Read both index files and check them: each against the segment
 * (mk_entries_load), then the time index's first entry against the
 * offset index's (both are the first batch's). *ok false, the entries
 * cleared: rebuild. Inside a use with the indexes.
 */
static mk_err read_indexes(mk_segment *s, uint64_t rel_limit, bool *ok,
			   mk_strbuf *why)
{
	*ok = true;
	for (int k = 0; k < NINDEXES && *ok; k++)
		if (mk_entries_load(index_file(s, k), s->size, rel_limit, ok))
			return mk_io_error(why, index_path(s, k), "read failed");
	/* Loaded and valid, both hold entries iff the segment has data. */
	if (*ok && s->size > 0 &&
	    mk_time_index_at(&s->timeindex, 0)->rel !=
		    mk_offset_index_at(&s->index, 0)->rel)
		*ok = false;
	if (!*ok)
		clear_indexes(s);
	return MK_OK;
}

mk_err mk_segment_load_indexes(mk_segment *s, int64_t end_limit,
			       int64_t interval, mk_strbuf *why)
{
	mk_err err = mk_segment_know_size(s, why);
	if (err || s->indexes_loaded)
		return err;
	err = seg_use(s, true, why);
	if (err)
		return err;
	uint64_t rel_limit = end_limit == INT64_MAX
				     ? UINT64_MAX
				     : (uint64_t)(end_limit - s->base);
	bool ok;
	if ((err = read_indexes(s, rel_limit, &ok, why)))
		;
	else if (!ok)
		err = rebuild_indexes(s, end_limit, interval, why);
	else {
		s->indexes_loaded = true;
		detach_indexes(s);
	}
	seg_done(s);
	return err;
}

mk_err mk_segment_scan(mk_segment *s, int64_t end_limit,
		       mk_segment_batch_fn fn, void *arg, mk_strbuf *why)
{
	/* build is false: the indexes are not touched. */
	scan_result res;
	mk_err err = mk_segment_know_size(s, why);
	if (err)
		return err;
	err = scan(s, s->size, end_limit, INT64_MAX, 0, false, fn, arg,
			  &res, why);
	if (!err && res.reason) {
		say_at(why, s->log_path, res.bad_pos, res.reason);
		err = MK_KAFKA_STORAGE_ERROR;
	}
	return err;
}

/* ---- appending and reading positions ------------------------------------- */

bool mk_segment_can_hold(const mk_segment *s, size_t len, int64_t last_offset)
{
	return last_offset >= s->base &&
	       last_offset - s->base <= (int64_t)UINT32_MAX &&
	       s->size + len <= UINT32_MAX;
}

/*
 * Before an append of `len` bytes ending at `end`: when it would pass the
 * runway (or there is none), zero-fill the file from its end to the next
 * multiple of MK_SEGMENT_RUNWAY past `end` (header: "The runway"). Only
 * appends smaller than a runway gain from it, and only a segment that
 * already holds MK_SEGMENT_RUNWAY_FROM bytes (a partition written a little
 * keeps small files). Best effort: a failure leaves runway_end telling
 * what the file holds, and the append writes where it would have. Inside
 * a use.
 */
static void extend_runway(mk_segment *s, uint64_t end, uint64_t len)
{
	if (!s->fill_limit || len >= MK_SEGMENT_RUNWAY ||
	    s->size < MK_SEGMENT_RUNWAY_FROM || end <= s->runway_end)
		return;
	uint64_t from = file_len(s);
	uint64_t to = (end + MK_SEGMENT_RUNWAY - 1) / MK_SEGMENT_RUNWAY *
		      MK_SEGMENT_RUNWAY;
	if (to > s->fill_limit)
		to = s->fill_limit;
	if (to <= end || to > UINT32_MAX)
		return;
	uint64_t w = write_zeros(s->fd, from, to);
	if (w > s->size)
		s->runway_end = w;
}

mk_err mk_segment_append(mk_segment *s, const uint8_t *frame,
			 const mk_batch_view *b, int64_t interval,
			 mk_strbuf *why)
{
	return mk_segment_append_many(s, &frame, b, 1, interval, why);
}

mk_err mk_segment_append_many(mk_segment *s, const uint8_t *const *frames,
			      const mk_batch_view *b, size_t n,
			      int64_t interval, mk_strbuf *why)
{
	assert(s->active && s->indexes_loaded && n > 0);
	uint64_t pos = s->size, total = 0;
	struct iovec iov[MK_SEGMENT_APPEND_MAX];
	assert(n <= MK_SEGMENT_APPEND_MAX);
	for (size_t i = 0; i < n; i++) {
		assert(b[i].meta.base_offset >= (i ? mk_batch_next_offset(&b[i - 1])
						   : s->next_offset));
		iov[i].iov_base = (void *)frames[i];
		iov[i].iov_len = b[i].frame_len;
		total += b[i].frame_len;
	}
	assert(mk_segment_can_hold(s, (size_t)total,
				   mk_batch_last_offset(&b[n - 1])));
	mk_err err = seg_use(s, true, why);
	if (err)
		return err;
	extend_runway(s, pos + total, total);
	/* One system call for every frame; a short write goes on from where
	 * it stopped (a crash in between leaves a torn tail, cut at open). */
	struct iovec *v = iov;
	size_t left = n;
	uint64_t at = pos;
	while (left > 0) {
		ssize_t w = pwritev(s->fd, v, (int)left, (off_t)at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			mk_why(why, "%s at byte %llu: write failed: %s",
			       s->log_path, (unsigned long long)at,
			       strerror(errno));
			/* Past the runway, the file now ends at `at`. */
			if (at >= s->runway_end)
				s->runway_end = 0;
			seg_done(s);
			return MK_KAFKA_STORAGE_ERROR;
		}
		at += (uint64_t)w;
		while (left > 0 && (size_t)w >= v->iov_len) {
			w -= (ssize_t)v->iov_len;
			v++;
			left--;
		}
		if (left > 0) {
			v->iov_base = (uint8_t *)v->iov_base + w;
			v->iov_len -= (size_t)w;
		}
	}
	s->dirty = true;
	if (pos + total >= s->runway_end)
		s->runway_end = 0;
	for (size_t i = 0; i < n && !err; i++) {
		s->size += b[i].frame_len;
		if (s->max_ts_base < 0 || b[i].max_timestamp > s->max_ts) {
			s->max_ts = b[i].max_timestamp;
			s->max_ts_base = b[i].meta.base_offset;
		}
		s->next_offset = mk_batch_next_offset(&b[i]);
		s->last_base = b[i].meta.base_offset;
		s->last_pos = pos;
		err = index_batch(s, &b[i], pos, s->max_ts, s->max_ts_base,
				  interval, true, why);
		pos += b[i].frame_len;
	}
	seg_done(s);
	return err;
}

int64_t mk_segment_max_timestamp(const mk_segment *s)
{
	assert(s->indexes_loaded);
	if (s->active)
		return s->max_ts;
	mk_time_entry t;
	return mk_time_index_last(&s->timeindex, &t) ? t.ts : INT64_MIN;
}

uint64_t mk_segment_lookup(const mk_segment *s, int64_t offset)
{
	assert(s->indexes_loaded);
	if (offset <= s->base)
		return 0;
	int64_t rel = offset - s->base;
	if (rel > (int64_t)UINT32_MAX)
		rel = UINT32_MAX;
	mk_offset_entry e;
	return mk_offset_index_floor(&s->index, (uint32_t)rel, &e) ? e.pos : 0;
}

uint64_t mk_segment_lookup_time(const mk_segment *s, int64_t ts)
{
	assert(s->indexes_loaded);
	mk_time_entry t;
	mk_offset_entry e;
	if (!mk_time_index_lookup(&s->timeindex, ts, &t) ||
	    !mk_offset_index_floor(&s->index, t.rel, &e))
		return 0;
	return e.pos;
}

/* ---- truncation ---------------------------------------------------------- */

mk_err mk_segment_check_cut(mk_segment *s, int64_t offset, mk_segment_cut *c,
			    mk_strbuf *why)
{
	assert(offset >= s->base);
	scan_result res;
	mk_err err = mk_segment_know_size(s, why);
	if (err)
		return err;
	err = scan(s, s->size, INT64_MAX, offset, 0, false, NULL, NULL,
			  &res, why);
	if (err)
		return err;
	if (res.reason) {
		say_at(why, s->log_path, res.bad_pos, res.reason);
		return MK_KAFKA_STORAGE_ERROR;
	}
	if (res.next_offset != offset &&
	    !(res.stopped && res.stopped_base == offset)) {
		return mk_error(why, MK_INVALID_REQUEST, "offset %lld is not a batch boundary "
				"in %s", (long long)offset, s->log_path);
	}
	c->offset = offset;
	c->pos = res.valid;
	c->max_ts = res.max_ts;
	c->max_ts_base = res.max_base;
	c->last_base = res.last_base;
	c->last_pos = res.last_pos;
	return MK_OK;
}

static mk_err cut_at(mk_segment *s, const mk_segment_cut *c,
		     int64_t interval, mk_strbuf *why);

mk_err mk_segment_cut_at(mk_segment *s, const mk_segment_cut *c,
			 int64_t interval, mk_strbuf *why)
{
	assert(c->pos <= s->size && c->offset >= s->base);
	mk_err err = seg_use(s, true, why);
	if (err)
		return err;
	err = cut_at(s, c, interval, why);
	seg_done(s);
	return err;
}

/* Inside a use with the indexes. */
static mk_err cut_at(mk_segment *s, const mk_segment_cut *c,
		     int64_t interval, mk_strbuf *why)
{
	mk_err err;
	if (c->pos < file_len(s) && ftruncate(s->fd, (off_t)c->pos))
		return mk_io_error(why, s->log_path, "truncate failed");
	s->size = c->pos;
	s->runway_end = 0;
	if (s->flushed > s->size)
		s->flushed = s->size;
	s->dirty = true;
	s->active = true;
	if (s->indexes_loaded) {
		/* The time entries of the batches kept (those that first
		 * reached their timestamp below the cut) stay true. */
		int64_t rel = c->offset - s->base;
		if (mk_offset_index_truncate_pos(&s->index, (uint32_t)c->pos))
			return mk_io_error(why, s->index_path, "truncate failed");
		if (rel <= (int64_t)UINT32_MAX &&
		    mk_time_index_truncate_rel(&s->timeindex, (uint32_t)rel))
			return mk_io_error(why, s->timeindex_path,
					   "truncate failed");
		/* The files were detached while closed: make sure they hold
		 * exactly what memory does. */
		if ((err = write_indexes(s, why)))
			return err;
	} else if ((err = rebuild_indexes(s, INT64_MAX, interval, why))) {
		return err;
	}
	s->next_offset = c->offset;
	s->max_ts = c->max_ts;
	s->max_ts_base = c->max_ts_base;
	s->last_base = c->last_base;
	s->last_pos = c->last_pos;
	return mk_segment_flush(s, why);
}

/* ---- flushing, sealing, crashing, removing ------------------------------- */

mk_err mk_segment_flush(mk_segment *s, mk_strbuf *why)
{
	bool idx = s->index.f.dirty || s->timeindex.f.dirty;
	/* Unpinned, the index descriptors may be closed by another thread's
	 * eviction at any moment: ask the cache whether anything is open
	 * (a closed segment with files open gets them detached below). */
	if (!s->dirty && !idx &&
	    (s->active || !mk_fdcache_holds(s->cache, &s->node)))
		return MK_OK;
	mk_err err = seg_use(s, idx, why);
	if (err)
		return err;
	if (s->dirty) {
		if (fsync(s->fd)) {
			seg_done(s);
			return mk_io_error(why, s->log_path, "fsync failed");
		}
		s->flushed = s->size;
		s->dirty = false;
	}
	err = sync_indexes(s, why);
	if (!err)
		detach_indexes(s);
	seg_done(s);
	return err;
}

/* The index files pinned open (seg_use with indexes). */
static mk_err write_index_pending(mk_segment *s, mk_strbuf *why)
{
	for (int k = 0; k < NINDEXES; k++)
		if (mk_entries_write_pending(index_file(s, k)))
			return mk_io_error(why, index_path(s, k), "write failed");
	return MK_OK;
}

mk_err mk_segment_write_index_pending(mk_segment *s, mk_strbuf *why)
{
	/* Pinned first: an eviction (another thread, under the cache lock)
	 * writes pending entries too. */
	mk_err err = seg_use(s, true, why);
	if (err)
		return err;
	err = write_index_pending(s, why);
	seg_done(s);
	return err;
}

mk_err mk_segment_seal(mk_segment *s, mk_strbuf *why)
{
	assert(s->active && s->indexes_loaded);
	mk_err err = seg_use(s, true, why);
	if (err)
		return err;
	/* A closed segment is its frames: the runway is cut. The cut is
	 * made durable by the flush that follows the roll (dirty): a closed
	 * segment below the recovery point is opened unsized, its size
	 * taken from stat and never scanned, so a file length lost in a
	 * power cut would show the zeros as data. */
	if (s->runway_end > s->size) {
		if (ftruncate(s->fd, (off_t)s->size)) {
			err = mk_io_error(why, s->log_path, "truncate failed");
		} else {
			s->runway_end = 0;
			s->dirty = true;
		}
	}
	if (!err)
		err = time_entry(s, s->max_ts, s->max_ts_base, true, why);
	if (!err)
		err = write_index_pending(s, why);
	if (!err)
		s->active = false;
	seg_done(s);
	return err;
}

void mk_segment_crash(mk_segment *s, bool torn)
{
	/* Best effort: without its files nothing can be cut. */
	if (seg_use(s, true, NULL)) {
		mk_segment_close(s);
		return;
	}
	/* Out of the cache while pinned: nobody evicts it from here on. */
	mk_fdcache_forget(s->cache, &s->node);
	if (file_len(s) > s->flushed && ftruncate(s->fd, (off_t)s->flushed)) {
		/* best effort: this only simulates a lost page cache */
	}
	/* What the file holds now (close cuts nothing more). */
	s->size = s->flushed;
	s->runway_end = 0;
	for (int k = 0; k < NINDEXES; k++)
		mk_entries_crash(index_file(s, k));
	if (torn) {
		/* A batch header promising 200 bytes of records, then 3 of
		 * them. */
		uint8_t part[MK_FRAME_HEADER + 3];
		memset(part, 0, sizeof(part));
		mk_store_be32(part + MK_FRAME_OFF_LENGTH,
			      MK_FRAME_HEADER - MK_FRAME_LOG_OVERHEAD + 200);
		part[MK_FRAME_OFF_MAGIC] = MK_BATCH_MAGIC;
		mk_store_be32(part + MK_FRAME_OFF_CRC, 0xdeadbeef);
		memcpy(part + MK_FRAME_HEADER, "\x00\x00\x00", 3);
		if (mk_pwrite_all(s->fd, part, sizeof(part),
				  (long long)s->flushed)) {
		}
	}
	mk_segment_close(s);
}

mk_err mk_segment_remove(mk_segment *s, mk_strbuf *why)
{
	mk_err err = MK_OK;
	s->runway_end = 0;
	/* The .log goes first: without it the segment no longer exists. */
	if (unlink(s->log_path) && errno != ENOENT)
		err = mk_io_error(why, s->log_path, "cannot delete");
	for (int k = 0; k < NINDEXES && !err; k++)
		unlink(index_path(s, k));
	if (!err)
		unlink(s->txnindex_path);
	mk_segment_close(s);
	return err;
}

/* ---- inspection ---------------------------------------------------------- */

uint32_t mk_segment_reader_crc(const mk_segment_reader *r)
{
	assert(r->frame_len >= MK_FRAME_HEADER);
	return mk_load_be32(window(r) + r->cur + MK_FRAME_OFF_CRC);
}

size_t mk_segment_index_count(const mk_segment *s)
{
	assert(s->indexes_loaded);
	return mk_offset_index_count(&s->index) +
	       mk_time_index_count(&s->timeindex);
}

void mk_segment_index_entry(const mk_segment *s, size_t i, int64_t *offset,
			    int64_t *pos, int64_t *ts)
{
	assert(i < mk_segment_index_count(s));
	size_t n = mk_offset_index_count(&s->index);
	if (i < n) {
		const mk_offset_entry *e = mk_offset_index_at(&s->index, i);
		*offset = s->base + e->rel;
		*pos = e->pos;
		*ts = -1;
	} else {
		const mk_time_entry *t = mk_time_index_at(&s->timeindex, i - n);
		*offset = s->base + t->rel;
		*pos = -1;
		*ts = t->ts;
	}
}
