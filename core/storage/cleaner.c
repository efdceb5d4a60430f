/*
 * cleaner.c — retention and compaction of one replica's log (cleaner.h).
 *
 * Compaction is two passes over private handles of the planned closed
 * segments (opened again from their files, so the log object is not
 * touched): the first builds the key map (key -> highest offset in the
 * range), the second filters every batch into staged segments in
 * DIR/cleaned/, grouped. The swap is the log's (mk_log_replace_segments).
 */
#include "cleaner.h"
#include "xalloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codec.h"
#include "failpoint.h"
#include "fileio.h"
#include "parse.h"
#include "segment.h"
#include "segswap.h"

/* ---- the state file ------------------------------------------------------ */

typedef struct {
	int64_t base;
	int64_t cleaned_at;     /* cluster clock, when first cleaned */
	int64_t tombstones;     /* kept in it at its last cleaning */
} seg_stamp;

typedef struct {
	int64_t cleaned_to;
	seg_stamp *v;
	size_t n, cap;
} cstate;

static void stamp_push(cstate *st, seg_stamp s)
{
	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 16;
		st->v = mk_xrealloc(st->v, st->cap * sizeof(*st->v));
	}
	st->v[st->n++] = s;
}

static const seg_stamp *stamp_find(const cstate *st, int64_t base)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].base == base)
			return &st->v[i];
	return NULL;
}

/* Read DIR/cleaner-checkpoint; missing or malformed is a fresh state (it
 * only delays tombstone expiry and shows a higher dirty ratio). raw (may
 * be NULL) gets the file's text as read ("" when missing). */
static void state_load(const char *dir, cstate *st, mk_strbuf *raw)
{
	memset(st, 0, sizeof(*st));
	mk_strbuf path = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/" MK_SEGSWAP_STATE, dir);
	bool missing = true;
	if (mk_file_read(path.buf, &text, &missing) || missing)
		goto out;
	if (raw)
		mk_strbuf_add(raw, text.buf, text.len);
	bool ok = !strncmp(text.buf, "version 1\n", 10);
	for (char *line = text.buf + 10, *nl; ok && *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			break;
		*nl = '\0';
		char *w[4];
		int n = 0;
		for (char *save = NULL, *t = strtok_r(line, " ", &save); t && n < 4;
		     t = strtok_r(NULL, " ", &save))
			w[n++] = t;
		int64_t a, b, c;
		if (n == 2 && !strcmp(w[0], "cleaned_to") &&
		    mk_parse_i64(w[1], &a) && a >= 0)
			st->cleaned_to = a;
		else if (n == 4 && !strcmp(w[0], "segment") &&
			 mk_parse_i64(w[1], &a) && mk_parse_i64(w[2], &b) &&
			 mk_parse_i64(w[3], &c))
			stamp_push(st, (seg_stamp){ a, b, c });
		else
			ok = false;
	}
	if (!ok) {
		free(st->v);
		memset(st, 0, sizeof(*st));
	}
out:
	mk_strbuf_release(&path);
	mk_strbuf_release(&text);
}

static void state_format(const cstate *st, mk_strbuf *out)
{
	mk_strbuf_addf(out, "version 1\ncleaned_to %lld\n",
		       (long long)st->cleaned_to);
	for (size_t i = 0; i < st->n; i++)
		mk_strbuf_addf(out, "segment %lld %lld %lld\n",
			       (long long)st->v[i].base,
			       (long long)st->v[i].cleaned_at,
			       (long long)st->v[i].tombstones);
}

/* Is base the base offset of one of log's segments? */
static bool is_segment_base(mk_log *log, int64_t base)
{
	size_t n = mk_log_segment_count(log);
	for (size_t i = 0; i < n; i++) {
		mk_segment_info si;
		mk_log_segment_info(log, i, &si);
		if (si.base_offset == base)
			return true;
	}
	return false;
}

/*
 * The saved offsets against what the log holds (cleaner.h, "the state
 * checked"): a cleaned_to past the log end, or inside the log but not a
 * segment's base, or a segment line at or past the log's first segment
 * naming none of its segments, is damage: KAFKA_STORAGE_ERROR naming the
 * file and the value. Lines below the first segment are what retention
 * and a follower's reset leave: ignored (the next swap drops them).
 */
static mk_err state_check(mk_log *log, const cstate *st, mk_strbuf *why)
{
	mk_segment_info first;
	mk_log_segment_info(log, 0, &first);
	int64_t end = mk_log_end_offset(log);
	const char *dir = mk_log_dir(log);
	if (st->cleaned_to > end) {
		mk_strbuf_addf(why, "%s/" MK_SEGSWAP_STATE ": cleaned_to %lld is "
			       "past the log end %lld", dir,
			       (long long)st->cleaned_to, (long long)end);
		return MK_KAFKA_STORAGE_ERROR;
	}
	if (st->cleaned_to > first.base_offset &&
	    !is_segment_base(log, st->cleaned_to)) {
		mk_strbuf_addf(why, "%s/" MK_SEGSWAP_STATE ": cleaned_to %lld is "
			       "not the base of a segment", dir,
			       (long long)st->cleaned_to);
		return MK_KAFKA_STORAGE_ERROR;
	}
	for (size_t i = 0; i < st->n; i++) {
		int64_t b = st->v[i].base;
		if (b >= first.base_offset && !is_segment_base(log, b)) {
			mk_strbuf_addf(why, "%s/" MK_SEGSWAP_STATE ": segment %lld "
				       "names no segment of the log", dir,
				       (long long)b);
			return MK_KAFKA_STORAGE_ERROR;
		}
	}
	return MK_OK;
}

mk_err mk_cleaner_truncate(mk_log *log, int64_t offset, mk_strbuf *why)
{
	cstate st;
	state_load(mk_log_dir(log), &st, NULL);
	if (st.cleaned_to <= offset) {
		free(st.v);
		return MK_OK;
	}
	/* The base of the segment the cut falls in: it becomes the active
	 * segment, its stamp and every later one go. */
	int64_t cut = offset;
	size_t n = mk_log_segment_count(log);
	for (size_t i = 0; i < n; i++) {
		mk_segment_info si;
		mk_log_segment_info(log, i, &si);
		if (si.base_offset <= offset)
			cut = si.base_offset;
	}
	st.cleaned_to = cut;
	size_t kept = 0;
	for (size_t i = 0; i < st.n; i++)
		if (st.v[i].base < cut)
			st.v[kept++] = st.v[i];
	st.n = kept;
	mk_strbuf text = MK_STRBUF_INIT, path = MK_STRBUF_INIT;
	state_format(&st, &text);
	mk_strbuf_addf(&path, "%s/" MK_SEGSWAP_STATE, mk_log_dir(log));
	mk_err err = mk_file_replace(path.buf, text.buf, text.len);
	if (err && why)
		mk_strbuf_addf(why, "%s: cannot write", path.buf);
	free(st.v);
	mk_strbuf_release(&text);
	mk_strbuf_release(&path);
	return err ? MK_KAFKA_STORAGE_ERROR : MK_OK;
}

/* ---- retention ----------------------------------------------------------- */

mk_err mk_cleaner_retain(mk_log *log, const mk_clean_params *cp,
			 size_t *deleted)
{
	size_t n = mk_log_segment_count(log), k = 0;
	uint64_t total = mk_log_size_bytes(log);
	int64_t start = mk_log_start_offset(log);
	if (deleted)
		*deleted = 0;
	/* The prefix: stop at the first closed segment that must stay. */
	for (; k + 1 < n; k++) {
		mk_segment_info si, next;
		mk_log_segment_info(log, k, &si);
		mk_log_segment_info(log, k + 1, &next);
		/* Only segments wholly below the point (the HW: what every
		 * ISR replica has), as Kafka deletes. */
		if (next.base_offset > cp->cleaning_point)
			break;
		bool go = next.base_offset <= start;
		if (!go && cp->retention_ms >= 0) {
			int64_t ts;
			mk_err err = mk_log_segment_max_timestamp(log, k, &ts);
			if (err)
				return err;
			go = ts < cp->now_ms - cp->retention_ms;
		}
		if (!go && cp->retention_bytes >= 0)
			go = total - si.size >= (uint64_t)cp->retention_bytes;
		if (!go)
			break;
		total -= si.size;
	}
	if (k == 0)
		return MK_OK;
	mk_segment_info keep;
	mk_log_segment_info(log, k, &keep);
	int64_t to = keep.base_offset > start ? keep.base_offset : start;
	mk_err err = mk_log_advance_start(log, to);
	if (!err && deleted)
		*deleted = n - mk_log_segment_count(log);
	return err;
}

/* ---- the key map --------------------------------------------------------- */

typedef struct {
	uint64_t hash;          /* 0: empty slot */
	size_t key_off;         /* in keys */
	int32_t key_len;
	int64_t offset;         /* highest offset seen for the key */
} slot;

typedef struct {
	slot *v;
	size_t cap, n;          /* cap a power of two */
	mk_strbuf keys;
} keymap;

static uint64_t hash_key(const uint8_t *p, int32_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (int32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	h ^= h >> 29;
	return h ? h : 1;
}

static slot *map_find(keymap *m, const mk_bytes *k, uint64_t h)
{
	size_t i = h & (m->cap - 1);
	for (;;) {
		slot *s = &m->v[i];
		if (s->hash == 0 ||
		    (s->hash == h && s->key_len == k->len &&
		     !memcmp(m->keys.buf + s->key_off, k->ptr, (size_t)k->len)))
			return s;
		i = (i + 1) & (m->cap - 1);
	}
}

static void map_grow(keymap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	slot *old = m->v;
	size_t oldcap = m->cap;
	m->v = mk_xcalloc(cap, sizeof(*m->v));
	m->cap = cap;
	for (size_t i = 0; i < oldcap; i++) {
		if (!old[i].hash)
			continue;
		size_t j = old[i].hash & (cap - 1);
		while (m->v[j].hash)
			j = (j + 1) & (cap - 1);
		m->v[j] = old[i];
	}
	free(old);
}

static void map_put(keymap *m, const mk_bytes *k, int64_t offset)
{
	if ((m->n + 1) * 4 > m->cap * 3)
		map_grow(m);
	uint64_t h = hash_key(k->ptr, k->len);
	slot *s = map_find(m, k, h);
	if (s->hash == 0) {
		s->hash = h;
		s->key_off = m->keys.len;
		s->key_len = k->len;
		mk_strbuf_add(&m->keys, k->ptr, (size_t)k->len);
		s->offset = offset;
		m->n++;
	} else if (offset > s->offset) {
		s->offset = offset;
	}
}

static int64_t map_get(keymap *m, const mk_bytes *k)
{
	slot *s = map_find(m, k, hash_key(k->ptr, k->len));
	return s->hash ? s->offset : -1;
}

static void map_free(keymap *m)
{
	free(m->v);
	mk_strbuf_release(&m->keys);
}

/* ---- planning ------------------------------------------------------------ */

struct mk_clean_plan {
	char *dir;
	struct mk_fdcache *fdcache;  /* the log's: the build's descriptors
				      * count against the same bound */
	mk_strbuf staging;
	mk_clean_params cp;
	size_t n;               /* segments 0..n-1 of the log */
	int64_t *bases;
	uint64_t *sizes;
	bool *mapped;           /* dirty: its keys go into the key map */
	int64_t limit;          /* base of segment n: the range's end */
	cstate state;
	mk_strbuf state_text;   /* the state file as planned from */
	int64_t *news;          /* staged bases, after build */
	uint64_t *news_size;    /* their .log sizes */
	size_t nnew, news_cap;
	mk_strbuf new_state;
	mk_aborted_list aborted;   /* aborted transactions of the range */
};

void mk_cleaner_plan_free(mk_clean_plan *plan)
{
	if (!plan)
		return;
	free(plan->dir);
	mk_strbuf_release(&plan->staging);
	free(plan->bases);
	free(plan->sizes);
	free(plan->mapped);
	free(plan->state.v);
	mk_strbuf_release(&plan->state_text);
	free(plan->news);
	free(plan->news_size);
	mk_strbuf_release(&plan->new_state);
	mk_aborted_free(&plan->aborted);
	free(plan);
}

/* Segments 0..*n-1 lie wholly below the cleaning point (never the active). */
static size_t cleanable(mk_log *log, int64_t point)
{
	size_t n = 0, count = mk_log_segment_count(log);
	while (n + 1 < count) {
		mk_segment_info next;
		mk_log_segment_info(log, n + 1, &next);
		if (next.base_offset > point)
			break;
		n++;
	}
	return n;
}

/* Would segments k and k+1 of the plan fit in one (segment.bytes and the
 * index's 32-bit relative offsets)? */
static bool fits_together(const mk_clean_plan *p, size_t k)
{
	int64_t end = k + 2 < p->n ? p->bases[k + 2] : p->limit;
	uint64_t sum = p->sizes[k] + p->sizes[k + 1];
	return sum <= (uint64_t)p->cp.segment_bytes && sum <= UINT32_MAX &&
	       end - 1 - p->bases[k] <= (int64_t)UINT32_MAX;
}

/*
 * Fill the plan's segments; true when a pass is due: a segment is dirty
 * (never cleaned, or holding tombstones now due), or two neighbours fit
 * in one (small and empty cleaned segments are merged with no new data).
 */
static bool plan_segments(mk_log *log, mk_clean_plan *p)
{
	bool due = false;
	for (size_t i = 0; i < p->n; i++) {
		mk_segment_info si;
		mk_log_segment_info(log, i, &si);
		p->bases[i] = si.base_offset;
		p->sizes[i] = si.size;
		const seg_stamp *st = stamp_find(&p->state, si.base_offset);
		p->mapped[i] = !st || si.base_offset >= p->state.cleaned_to;
		if (p->mapped[i] || (st->tombstones > 0 &&
		     st->cleaned_at <= p->cp.now_ms - p->cp.delete_retention_ms))
			due = true;
	}
	mk_segment_info lim;
	mk_log_segment_info(log, p->n, &lim);
	p->limit = lim.base_offset;
	for (size_t k = 0; k + 1 < p->n && !due; k++)
		due = fits_together(p, k);
	return due;
}

mk_err mk_cleaner_plan(mk_log *log, const mk_clean_params *cp,
		       mk_clean_plan **out, mk_strbuf *why)
{
	*out = NULL;
	/* Every closed segment durable first (the flusher's queue empty). */
	mk_err err = mk_log_wait_flusher(log);
	if (err) {
		mk_strbuf_addstr(why, mk_log_error(log));
		return err;
	}
	size_t n = cleanable(log, cp->cleaning_point);
	mk_clean_plan *p = mk_xcalloc(1, sizeof(*p));
	p->dir = mk_xstrdup(mk_log_dir(log));
	p->fdcache = mk_log_fdcache(log);
	p->cp = *cp;
	p->n = n;
	p->bases = mk_xmalloc((n ? n : 1) * sizeof(*p->bases));
	p->sizes = mk_xmalloc((n ? n : 1) * sizeof(*p->sizes));
	p->mapped = mk_xmalloc((n ? n : 1) * sizeof(*p->mapped));
	mk_strbuf_init(&p->staging, 0);
	mk_strbuf_init(&p->new_state, 0);
	mk_strbuf_init(&p->state_text, 0);
	state_load(p->dir, &p->state, &p->state_text);
	/* The saved offsets are checked at every run, before any use. */
	if ((err = state_check(log, &p->state, why)) || n == 0 ||
	    !plan_segments(log, p)) {
		mk_cleaner_plan_free(p);
		return err;
	}
	/* The build runs without the owner's lock: its own copy. */
	if (cp->aborted)
		mk_aborted_range(cp->aborted, p->bases[0], p->limit, &p->aborted);
	p->cp.aborted = NULL;
	if ((err = mk_segswap_prepare(p->dir, &p->staging, why))) {
		mk_cleaner_plan_free(p);
		return err;
	}
	*out = p;
	return MK_OK;
}

/* ---- building ------------------------------------------------------------ */

typedef struct {
	mk_clean_plan *p;
	mk_clean_stats *st;
	keymap map;
	cstate ns;              /* the new state */
	/* pass 2 */
	mk_segment *out;        /* the staged segment being written */
	int64_t out_cleaned_at; /* its oldest source's first cleaning */
	int64_t tombstones;     /* kept in it */
	bool expire;            /* tombstones of the current source may go */
	int64_t src_cleaned_at; /* the current source's first cleaning */
	int64_t batch_tombstones;
	mk_strbuf frame;
	mk_err err;
	mk_strbuf *why;
} build_ctx;

static void on_batch_keys(void *arg, const mk_batch_view *b, uint64_t pos)
{
	(void)pos;
	build_ctx *c = arg;
	if (mk_batch_is_control(b) || mk_aborted_hides(&c->p->aborted, b))
		return;
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, b);
	while (mk_record_next(&it, &rec))
		if (rec.key.len >= 0)
			map_put(&c->map, &rec.key, rec.offset);
	mk_record_iter_release(&it);
}

static bool keep_record(const mk_record_view *rec, void *arg)
{
	build_ctx *c = arg;
	if (rec->key.len < 0)
		return true;
	if (map_get(&c->map, &rec->key) > rec->offset) {
		c->st->records_removed++;
		return false;
	}
	if (rec->value.len < 0) {
		if (c->expire) {
			c->st->tombstones_removed++;
			return false;
		}
		c->batch_tombstones++;
	}
	return true;
}

static bool keep_all(const mk_record_view *rec, void *arg)
{
	(void)rec;
	(void)arg;
	return true;
}

static bool drop_aborted(const mk_record_view *rec, void *arg)
{
	(void)rec;
	build_ctx *c = arg;
	c->st->records_removed++;
	return false;
}

/* A new staged segment at base. */
static mk_err out_start(build_ctx *c, int64_t base)
{
	mk_clean_plan *p = c->p;
	if (p->nnew == p->news_cap) {
		p->news_cap = p->news_cap ? p->news_cap * 2 : 16;
		p->news = mk_xrealloc(p->news, p->news_cap * sizeof(*p->news));
		p->news_size = mk_xrealloc(p->news_size,
					   p->news_cap * sizeof(*p->news_size));
	}
	mk_err err = mk_segment_create(p->staging.buf, base, p->fdcache,
				       &c->out, c->why);
	if (err)
		return err;
	p->news[p->nnew] = base;
	p->news_size[p->nnew++] = 0;
	c->out_cleaned_at = p->cp.now_ms;
	c->tombstones = 0;
	return MK_OK;
}

/* Seal, fsync and close the staged segment; stamp it in the new state. */
static mk_err out_finish(build_ctx *c)
{
	mk_clean_plan *p = c->p;
	mk_err err = mk_segment_seal(c->out, c->why);
	if (!err)
		err = mk_segment_flush(c->out, c->why);
	p->news_size[p->nnew - 1] = c->out->size;
	mk_segment_close(c->out);
	c->out = NULL;
	stamp_push(&c->ns, (seg_stamp){ p->news[p->nnew - 1], c->out_cleaned_at,
					c->tombstones });
	return err;
}

/*
 * Where the filtered batch b goes: into the staged segment while it fits
 * (segment.bytes, 32-bit relative offsets), else a new one based at b (the
 * first one at the range's base, so that the log's first base stays).
 */
static mk_err place(build_ctx *c, const mk_batch_view *b)
{
	mk_err err = MK_OK;
	uint64_t size = c->out ? c->out->size : 0;
	if (c->out && size > 0 &&
	    (size + b->frame_len > (uint64_t)c->p->cp.segment_bytes ||
	     size + b->frame_len > UINT32_MAX ||
	     mk_batch_last_offset(b) - c->out->base > (int64_t)UINT32_MAX))
		err = out_finish(c);
	if (!err && !c->out)
		err = out_start(c, c->p->nnew ? b->meta.base_offset : c->p->bases[0]);
	return err;
}

static void on_batch_filter(void *arg, const mk_batch_view *b, uint64_t pos)
{
	(void)pos;
	build_ctx *c = arg;
	if (c->err)
		return;
	mk_strbuf_reset(&c->frame);
	c->batch_tombstones = 0;
	/* Control markers stay whole; data batches lose superseded records. */
	mk_frame_filter(b, mk_batch_is_control(b) ? keep_all
			   : mk_aborted_hides(&c->p->aborted, b) ? drop_aborted
			   : keep_record, c, &c->frame);
	if (!c->frame.len)
		return;
	mk_batch_view nb;
	if (mk_frame_decode_header((const uint8_t *)c->frame.buf, c->frame.len,
				   0, false, &nb, NULL)) {
		c->err = MK_CORRUPT_MESSAGE;    /* cannot happen */
		return;
	}
	if ((c->err = place(c, &nb)))
		return;
	c->err = mk_segment_append(c->out, (const uint8_t *)c->frame.buf, &nb,
				   c->p->cp.index_interval_bytes, c->why);
	if (c->err)
		return;
	c->st->bytes_written += nb.frame_len;
	c->tombstones += c->batch_tombstones;
	/* A segment is as old as its oldest cleaning: its tombstones never
	 * outlive delete.retention.ms from it. */
	if (c->src_cleaned_at < c->out_cleaned_at)
		c->out_cleaned_at = c->src_cleaned_at;
}

static mk_err scan_source(mk_clean_plan *p, size_t i, mk_segment_batch_fn fn,
			  build_ctx *c, mk_strbuf *why)
{
	mk_segment *s;
	mk_err err = mk_segment_open_closed(p->dir, p->bases[i], p->fdcache,
					    &s, why);
	if (err)
		return err;
	/* The file may have grown under a recovery since: the size planned. */
	if (s->size > p->sizes[i])
		s->size = p->sizes[i];
	int64_t end = i + 1 < p->n ? p->bases[i + 1] : p->limit;
	err = mk_segment_scan(s, end, fn, c, why);
	mk_segment_close(s);
	return err ? err : c->err;
}

/* Pass 2: every source filtered, in order, into staged segments packed up
 * to segment.bytes by what they keep. */
static mk_err build_segments(build_ctx *c)
{
	mk_clean_plan *p = c->p;
	mk_err err = MK_OK;
	for (size_t k = 0; k < p->n && !err; k++) {
		const seg_stamp *sp = stamp_find(&p->state, p->bases[k]);
		bool was_cleaned = sp && p->bases[k] < p->state.cleaned_to;
		c->src_cleaned_at = was_cleaned ? sp->cleaned_at : p->cp.now_ms;
		c->expire = was_cleaned &&
			    sp->cleaned_at <= p->cp.now_ms - p->cp.delete_retention_ms;
		err = scan_source(p, k, on_batch_filter, c, c->why);
		c->st->bytes_read += p->sizes[k];
		if (k == 0)
			MK_FAILPOINT("cleaner.swap.writing");
	}
	/* Nothing kept at all: one empty segment keeps the range's base. */
	if (!err && !c->out && !p->nnew)
		err = out_start(c, p->bases[0]);
	if (c->out) {
		mk_err e2 = out_finish(c);
		if (!err)
			err = e2;
	}
	c->st->segments_in = p->n;
	c->st->segments_out = p->nnew;
	return err;
}

mk_err mk_cleaner_build(mk_clean_plan *p, mk_clean_stats *st, mk_strbuf *why)
{
	mk_clean_stats local;
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	build_ctx c;
	memset(&c, 0, sizeof(c));
	c.p = p;
	c.st = st;
	c.why = why;
	mk_strbuf_init(&c.map.keys, 0);
	mk_strbuf_init(&c.frame, 0);
	map_grow(&c.map);
	mk_err err = MK_OK;
	/* Pass 1: the latest offset of every key of the dirty segments (the
	 * cleaned ones hold each key once: what the map lacks stays). */
	for (size_t i = 0; i < p->n && !err; i++)
		if (p->mapped[i])
			err = scan_source(p, i, on_batch_keys, &c, why);
	c.ns.cleaned_to = p->state.cleaned_to > p->limit ? p->state.cleaned_to
							 : p->limit;
	if (!err)
		err = build_segments(&c);
	if (!err && mk_fsync_dir(p->staging.buf)) {
		mk_strbuf_addf(why, "%s: fsync failed", p->staging.buf);
		err = MK_KAFKA_STORAGE_ERROR;
	}
	/* Stamps of segments past the range (rare: a lower point than at the
	 * last cleaning) stay. */
	for (size_t k = 0; k < p->state.n; k++)
		if (p->state.v[k].base >= p->limit)
			stamp_push(&c.ns, p->state.v[k]);
	state_format(&c.ns, &p->new_state);
	free(c.ns.v);
	map_free(&c.map);
	mk_strbuf_release(&c.frame);
	return err;
}

/* ---- committing ---------------------------------------------------------- */

mk_err mk_cleaner_commit(mk_log *log, mk_clean_plan *p, bool *swapped,
			 mk_strbuf *why)
{
	*swapped = false;
	size_t count = mk_log_segment_count(log);
	bool same = count > p->n;
	for (size_t i = 0; i <= p->n && same; i++) {
		mk_segment_info si;
		mk_log_segment_info(log, i, &si);
		if (i < p->n)
			same = si.base_offset == p->bases[i] && si.size == p->sizes[i];
		else
			same = si.base_offset == p->limit;
	}
	/* A restart of the log meanwhile (its open empties DIR/cleaned):
	 * every staged .log must still be there, whole. */
	mk_strbuf path = MK_STRBUF_INIT;
	for (size_t i = 0; i < p->nnew && same; i++) {
		struct stat stt;
		mk_strbuf_reset(&path);
		mk_strbuf_addf(&path, "%s/%020lld.log", p->staging.buf,
			       (long long)p->news[i]);
		same = !stat(path.buf, &stt) && (uint64_t)stt.st_size == p->news_size[i];
	}
	/* A truncation meanwhile (mk_cleaner_truncate) changed the state the
	 * plan started from. */
	if (same) {
		mk_strbuf now = MK_STRBUF_INIT;
		cstate st;
		state_load(p->dir, &st, &now);
		free(st.v);
		same = now.len == p->state_text.len &&
		       !memcmp(now.buf, p->state_text.buf, now.len);
		mk_strbuf_release(&now);
	}
	mk_strbuf_release(&path);
	if (!same)
		return MK_OK;
	mk_err err = mk_log_replace_segments(log, 0, p->n, p->news, p->nnew,
					     p->new_state.buf, p->new_state.len);
	if (err)
		mk_strbuf_addstr(why, mk_log_error(log));
	else
		*swapped = true;
	return err;
}

mk_err mk_cleaner_compact(mk_log *log, const mk_clean_params *cp,
			  mk_clean_stats *st, mk_strbuf *why)
{
	mk_clean_plan *p;
	mk_err err = mk_cleaner_plan(log, cp, &p, why);
	if (st)
		memset(st, 0, sizeof(*st));
	if (err || !p)
		return err;
	err = mk_cleaner_build(p, st, why);
	bool swapped;
	if (!err)
		err = mk_cleaner_commit(log, p, &swapped, why);
	mk_cleaner_plan_free(p);
	return err;
}

/* ---- state --------------------------------------------------------------- */

void mk_cleaner_info_get(mk_log *log, int64_t cleaning_point,
			 mk_cleaner_info *info)
{
	cstate st;
	state_load(mk_log_dir(log), &st, NULL);
	memset(info, 0, sizeof(*info));
	info->cleaned_to = st.cleaned_to;
	size_t n = cleanable(log, cleaning_point);
	for (size_t i = 0; i < n; i++) {
		mk_segment_info si;
		mk_log_segment_info(log, i, &si);
		info->cleanable_bytes += si.size;
		if (si.base_offset >= st.cleaned_to)
			info->dirty_bytes += si.size;
	}
	free(st.v);
}
