/*
 * txnindex.c — the aborted transactions of a replica's log (txnindex.h).
 */
#include "txnindex.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

#include "search.h"
#include "xalloc.h"

void mk_aborted_init(mk_aborted_list *l)
{
	memset(l, 0, sizeof(*l));
}

void mk_aborted_free(mk_aborted_list *l)
{
	free(l->v);
	mk_aborted_init(l);
}

void mk_aborted_clear(mk_aborted_list *l)
{
	l->n = 0;
}

void mk_aborted_add(mk_aborted_list *l, const mk_aborted_txn *t)
{
	assert(!l->n || l->v[l->n - 1].last <= t->last);
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? l->alloc * 2 : 8;
		l->v = mk_xrealloc(l->v, l->alloc * sizeof(*l->v));
	}
	l->v[l->n++] = *t;
}

typedef struct {
	const mk_aborted_list *l;
	int64_t offset;
} ending_key;

static bool ends_before(const void *ctx, size_t i)
{
	const ending_key *k = ctx;
	return k->l->v[i].last < k->offset;
}

/* The first entry whose last offset is >= offset. */
static size_t first_ending_at(const mk_aborted_list *l, int64_t offset)
{
	ending_key k = { l, offset };
	return mk_lower_bound(l->n, ends_before, &k);
}

void mk_aborted_range(const mk_aborted_list *l, int64_t from, int64_t to,
		      mk_aborted_list *out)
{
	mk_aborted_clear(out);
	for (size_t i = first_ending_at(l, from); i < l->n; i++)
		if (l->v[i].first < to)
			mk_aborted_add(out, &l->v[i]);
}

void mk_aborted_trim(mk_aborted_list *l, int64_t offset)
{
	size_t k = first_ending_at(l, offset);
	if (!k)
		return;
	memmove(l->v, l->v + k, (l->n - k) * sizeof(*l->v));
	l->n -= k;
}

bool mk_aborted_hides(const mk_aborted_list *l, const mk_batch_view *b)
{
	if (!(b->meta.flags & MK_BATCH_TRANSACTIONAL) || mk_batch_is_control(b))
		return false;
	int64_t off = b->meta.base_offset;
	for (size_t i = first_ending_at(l, off); i < l->n; i++)
		if (l->v[i].pid == b->meta.producer_id && l->v[i].first <= off)
			return true;
	return false;
}

void mk_txnindex_put(const mk_aborted_txn *t, uint8_t out[MK_TXNINDEX_ENTRY])
{
	mk_store_be16(out, 0);
	mk_store_be64(out + 2, (uint64_t)t->pid);
	mk_store_be64(out + 10, (uint64_t)t->first);
	mk_store_be64(out + 18, (uint64_t)t->last);
	mk_store_be64(out + 26, (uint64_t)t->lso);
}

void mk_txnindex_encode(const mk_aborted_list *l, int64_t from, int64_t to,
			mk_strbuf *out)
{
	uint8_t e[MK_TXNINDEX_ENTRY];
	for (size_t i = first_ending_at(l, from); i < l->n && l->v[i].last < to; i++) {
		mk_txnindex_put(&l->v[i], e);
		mk_strbuf_add(out, e, sizeof(e));
	}
}

/* ---- the files ------------------------------------------------------------ */

uint64_t mk_txnindex_file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) ? 0 : (uint64_t)st.st_size;
}

mk_err mk_txnindex_file_write(const char *path, const void *bytes, size_t n,
			      mk_strbuf *why)
{
	mk_strbuf old = MK_STRBUF_INIT;
	bool missing = true;
	mk_err err = MK_OK;
	bool unreadable = mk_file_read(path, &old, &missing) != MK_OK;
	if (!n) {
		if ((unreadable || !missing) && unlink(path) && errno != ENOENT)
			err = mk_io_error(why, path, "cannot delete");
	} else if (unreadable || missing || old.len != n ||
		   memcmp(old.buf, bytes, n)) {
		if (mk_file_replace(path, bytes, n))
			err = mk_io_error(why, path, "cannot write");
	}
	mk_strbuf_release(&old);
	return err;
}

mk_err mk_txnindex_file_append(const char *path, const void *bytes, size_t n,
			       mk_strbuf *why)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return mk_io_error(why, path, "cannot open");
	mk_err err = MK_OK;
	off_t end = lseek(fd, 0, SEEK_END);
	ssize_t w = write(fd, bytes, n);
	if (w < 0 || (size_t)w != n) {
		err = mk_io_error(why, path, "write failed");
		/* No partial entry stays to shift every later one. */
		if (end >= 0 && ftruncate(fd, end)) {
		}
	}
	close(fd);
	return err;
}
