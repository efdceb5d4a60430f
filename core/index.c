/*
 * index.c — the sparse offset index of index.h: an array in memory, the
 * same entries appended to the .index file.
 */
#include "index.h"

#include <assert.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "strbuf.h"

void mk_index_init(mk_index *ix)
{
	ix->fd = -1;
	ix->e = NULL;
	ix->n = ix->cap = 0;
	ix->synced = 0;
	ix->dirty = false;
}

mk_err mk_index_open(mk_index *ix, const char *path)
{
	assert(ix->fd < 0);
	ix->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	return ix->fd < 0 ? MK_KAFKA_STORAGE_ERROR : MK_OK;
}

static void reserve(mk_index *ix, size_t n)
{
	if (n <= ix->cap)
		return;
	size_t cap = ix->cap ? ix->cap : 16;
	while (cap < n)
		cap *= 2;
	mk_index_entry *e = realloc(ix->e, cap * sizeof(*e));
	if (!e)
		abort();
	ix->e = e;
	ix->cap = cap;
}

void mk_index_clear(mk_index *ix)
{
	ix->n = 0;
	ix->synced = 0;
}

void mk_index_push(mk_index *ix, uint32_t rel, uint32_t pos)
{
	assert(ix->n == 0 ||
	       (rel > ix->e[ix->n - 1].rel && pos > ix->e[ix->n - 1].pos));
	reserve(ix, ix->n + 1);
	ix->e[ix->n++] = (mk_index_entry){ rel, pos };
}

mk_err mk_index_append(mk_index *ix, uint32_t rel, uint32_t pos)
{
	assert(ix->fd >= 0);
	uint8_t b[MK_INDEX_ENTRY_SIZE];
	mk_store_be32(b, rel);
	mk_store_be32(b + 4, pos);
	mk_err err = mk_pwrite_all(ix->fd, b, sizeof(b),
				   (long long)ix->n * MK_INDEX_ENTRY_SIZE);
	if (err)
		return MK_KAFKA_STORAGE_ERROR;
	mk_index_push(ix, rel, pos);
	ix->dirty = true;
	return MK_OK;
}

/* Does the file hold exactly len bytes, equal to b? */
static bool same_file(int fd, const uint8_t *b, size_t len)
{
	struct stat st;
	if (fstat(fd, &st) || (uint64_t)st.st_size != len)
		return false;
	if (len == 0)
		return true;
	uint8_t *cur = malloc(len);
	if (!cur)
		return false;
	bool same = mk_pread_all(fd, cur, len, 0) == MK_OK &&
		    memcmp(cur, b, len) == 0;
	free(cur);
	return same;
}

mk_err mk_index_write_all(mk_index *ix)
{
	assert(ix->fd >= 0);
	size_t len = ix->n * MK_INDEX_ENTRY_SIZE;
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		abort();
	for (size_t i = 0; i < ix->n; i++) {
		mk_store_be32(b + i * MK_INDEX_ENTRY_SIZE, ix->e[i].rel);
		mk_store_be32(b + i * MK_INDEX_ENTRY_SIZE + 4, ix->e[i].pos);
	}
	mk_err err = MK_OK;
	if (same_file(ix->fd, b, len)) {
		/* Already there (a mount after a clean stop): no write, and
		 * no fsync later. An index is only an accelerator: were it
		 * not durable after all, the next load rebuilds it. */
		free(b);
		ix->synced = ix->n;
		ix->dirty = false;
		return MK_OK;
	}
	if (ftruncate(ix->fd, 0) || mk_pwrite_all(ix->fd, b, len, 0))
		err = MK_KAFKA_STORAGE_ERROR;
	free(b);
	ix->synced = 0;
	ix->dirty = true;
	return err;
}

mk_err mk_index_load(mk_index *ix, uint64_t seg_size, uint64_t rel_limit,
		     bool *valid)
{
	assert(ix->fd >= 0);
	*valid = false;
	mk_index_clear(ix);
	struct stat st;
	if (fstat(ix->fd, &st))
		return MK_KAFKA_STORAGE_ERROR;
	uint64_t len = (uint64_t)st.st_size;
	if (len % MK_INDEX_ENTRY_SIZE)
		return MK_OK;
	size_t n = (size_t)(len / MK_INDEX_ENTRY_SIZE);
	/* More entries than bytes in the segment cannot be right. */
	if (n > seg_size)
		return MK_OK;
	if ((n == 0) != (seg_size == 0))
		return MK_OK;
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		abort();
	mk_err err = mk_pread_all(ix->fd, b, len, 0);
	if (err) {
		free(b);
		/* A short read means the file shrank under us: rebuild. */
		return err == MK_CORRUPT_MESSAGE ? MK_OK : MK_KAFKA_STORAGE_ERROR;
	}
	reserve(ix, n);
	bool ok = true;
	for (size_t i = 0; i < n && ok; i++) {
		uint32_t rel = mk_load_be32(b + i * MK_INDEX_ENTRY_SIZE);
		uint32_t pos = mk_load_be32(b + i * MK_INDEX_ENTRY_SIZE + 4);
		if (rel >= rel_limit || pos >= seg_size)
			ok = false;
		else if (i == 0 && pos != 0)
			ok = false;
		else if (i > 0 && (rel <= ix->e[i - 1].rel ||
				   pos <= ix->e[i - 1].pos))
			ok = false;
		ix->e[i] = (mk_index_entry){ rel, pos };
	}
	free(b);
	if (!ok)
		return MK_OK;
	ix->n = n;
	ix->synced = n;   /* what we read is what the disk holds */
	ix->dirty = false;
	*valid = true;
	return MK_OK;
}

bool mk_index_floor(const mk_index *ix, uint32_t rel, mk_index_entry *out)
{
	/* First entry with e.rel > rel; the answer is the one before it. */
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->e[mid].rel <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	*out = ix->e[lo - 1];
	return true;
}

bool mk_index_last(const mk_index *ix, mk_index_entry *out)
{
	if (!ix->n)
		return false;
	*out = ix->e[ix->n - 1];
	return true;
}

static mk_err cut(mk_index *ix, size_t n)
{
	if (n >= ix->n)
		return MK_OK;
	ix->n = n;
	if (ix->synced > n)
		ix->synced = n;
	if (ix->fd >= 0) {
		if (ftruncate(ix->fd, (off_t)(n * MK_INDEX_ENTRY_SIZE)))
			return MK_KAFKA_STORAGE_ERROR;
		ix->dirty = true;
	}
	return MK_OK;
}

mk_err mk_index_truncate_rel(mk_index *ix, uint32_t rel)
{
	size_t n = ix->n;
	while (n > 0 && ix->e[n - 1].rel >= rel)
		n--;
	return cut(ix, n);
}

mk_err mk_index_truncate_pos(mk_index *ix, uint32_t pos)
{
	size_t n = ix->n;
	while (n > 0 && ix->e[n - 1].pos >= pos)
		n--;
	return cut(ix, n);
}

mk_err mk_index_sync(mk_index *ix)
{
	if (ix->fd < 0 || !ix->dirty)
		return MK_OK;
	if (fsync(ix->fd))
		return MK_KAFKA_STORAGE_ERROR;
	ix->dirty = false;
	ix->synced = ix->n;
	return MK_OK;
}

void mk_index_crash(mk_index *ix)
{
	/* Best effort: this only simulates losing the page cache. */
	if (ix->fd >= 0 && ix->dirty &&
	    ftruncate(ix->fd, (off_t)(ix->synced * MK_INDEX_ENTRY_SIZE))) {
	}
}

void mk_index_detach(mk_index *ix)
{
	assert(!ix->dirty);
	if (ix->fd >= 0)
		close(ix->fd);
	ix->fd = -1;
}

void mk_index_close(mk_index *ix)
{
	if (ix->fd >= 0)
		close(ix->fd);
	free(ix->e);
	mk_index_init(ix);
}
