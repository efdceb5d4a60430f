/*
 * visible.c — a fetch reduced to what its reader may see (visible.h):
 * one frame walk (mk_frame_next), the marker and aborted-data rules of
 * txnindex.h, the clamp at the visible end.
 */
#include "visible.h"

size_t mk_visible_batches(const mk_fetched *f, size_t max, int64_t *pos,
			  mk_visible_fn fn, void *arg)
{
	size_t n = 0;
	mk_frame_iter it;
	mk_batch_view b;
	mk_frame_iter_init(&it, f->frames, f->len);
	while (n < max && mk_frame_next(&it, &b)) {
		if (b.meta.base_offset >= f->visible)
			break;
		int64_t after = mk_batch_next_offset(&b);
		if (after <= *pos)
			continue;     /* wholly before the position */
		/* Markers are never shown; read_committed hides aborted data. */
		if (!mk_batch_is_control(&b) &&
		    !(f->aborted && mk_aborted_hides(f->aborted, &b)))
			n += fn(arg, &b, *pos, f->visible, max - n, pos);
		if (n < max && after > *pos)
			*pos = after < f->visible ? after : f->visible;
	}
	return n;
}

size_t mk_visible_records(const mk_batch_view *b, int64_t from, int64_t end,
			  size_t max,
			  void (*fn)(void *arg, const mk_record_view *rec),
			  void *arg, int64_t *next)
{
	size_t n = 0;
	mk_record_iter it;
	mk_record_view rec;
	mk_record_iter_init(&it, b);
	while (n < max && mk_record_next(&it, &rec)) {
		if (rec.offset < from)
			continue;
		if (rec.offset >= end)
			break;
		fn(arg, &rec);
		n++;
		*next = rec.offset + 1;
	}
	mk_record_iter_release(&it);
	return n;
}
