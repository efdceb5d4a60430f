/*
 * timeindex.c — the sparse time index of timeindex.h: an array in memory,
 * the same entries appended to the .timeindex file.
 */
#include "timeindex.h"

#include <assert.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "strbuf.h"

void mk_timeindex_init(mk_timeindex *ti)
{
	ti->fd = -1;
	ti->e = NULL;
	ti->n = ti->cap = 0;
	ti->synced = 0;
	ti->dirty = false;
}

mk_err mk_timeindex_open(mk_timeindex *ti, const char *path)
{
	assert(ti->fd < 0);
	ti->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	return ti->fd < 0 ? MK_KAFKA_STORAGE_ERROR : MK_OK;
}

static void reserve(mk_timeindex *ti, size_t n)
{
	if (n <= ti->cap)
		return;
	size_t cap = ti->cap ? ti->cap : 16;
	while (cap < n)
		cap *= 2;
	mk_time_entry *e = realloc(ti->e, cap * sizeof(*e));
	if (!e)
		abort();
	ti->e = e;
	ti->cap = cap;
}

static void encode(uint8_t *b, const mk_time_entry *e)
{
	mk_store_be64(b, (uint64_t)e->ts);
	mk_store_be32(b + 8, e->rel);
}

void mk_timeindex_clear(mk_timeindex *ti)
{
	ti->n = 0;
	ti->synced = 0;
}

void mk_timeindex_push(mk_timeindex *ti, int64_t ts, uint32_t rel)
{
	assert(ti->n == 0 ||
	       (ts >= ti->e[ti->n - 1].ts && rel > ti->e[ti->n - 1].rel));
	reserve(ti, ti->n + 1);
	ti->e[ti->n++] = (mk_time_entry){ ts, rel };
}

mk_err mk_timeindex_append(mk_timeindex *ti, int64_t ts, uint32_t rel)
{
	assert(ti->fd >= 0);
	uint8_t b[MK_TIMEINDEX_ENTRY_SIZE];
	mk_time_entry e = { ts, rel };
	encode(b, &e);
	if (mk_pwrite_all(ti->fd, b, sizeof(b),
			  (long long)ti->n * MK_TIMEINDEX_ENTRY_SIZE))
		return MK_KAFKA_STORAGE_ERROR;
	mk_timeindex_push(ti, ts, rel);
	ti->dirty = true;
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

mk_err mk_timeindex_write_all(mk_timeindex *ti)
{
	assert(ti->fd >= 0);
	size_t len = ti->n * MK_TIMEINDEX_ENTRY_SIZE;
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		abort();
	for (size_t i = 0; i < ti->n; i++)
		encode(b + i * MK_TIMEINDEX_ENTRY_SIZE, &ti->e[i]);
	mk_err err = MK_OK;
	if (same_file(ti->fd, b, len)) {
		/* Already there (a mount after a clean stop): no write, and
		 * no fsync later. An index is only an accelerator: were it
		 * not durable after all, the next load rebuilds it. */
		free(b);
		ti->synced = ti->n;
		ti->dirty = false;
		return MK_OK;
	}
	if (ftruncate(ti->fd, 0) || mk_pwrite_all(ti->fd, b, len, 0))
		err = MK_KAFKA_STORAGE_ERROR;
	free(b);
	ti->synced = 0;
	ti->dirty = true;
	return err;
}

mk_err mk_timeindex_load(mk_timeindex *ti, uint64_t seg_size,
			 uint64_t rel_limit, bool *valid)
{
	assert(ti->fd >= 0);
	*valid = false;
	mk_timeindex_clear(ti);
	struct stat st;
	if (fstat(ti->fd, &st))
		return MK_KAFKA_STORAGE_ERROR;
	uint64_t len = (uint64_t)st.st_size;
	if (len % MK_TIMEINDEX_ENTRY_SIZE)
		return MK_OK;
	size_t n = (size_t)(len / MK_TIMEINDEX_ENTRY_SIZE);
	if (n > seg_size || (n == 0) != (seg_size == 0))
		return MK_OK;
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		abort();
	mk_err err = mk_pread_all(ti->fd, b, len, 0);
	if (err) {
		free(b);
		return err == MK_CORRUPT_MESSAGE ? MK_OK : MK_KAFKA_STORAGE_ERROR;
	}
	reserve(ti, n);
	bool ok = true;
	for (size_t i = 0; i < n && ok; i++) {
		const uint8_t *p = b + i * MK_TIMEINDEX_ENTRY_SIZE;
		mk_time_entry e = { (int64_t)mk_load_be64(p),
				    mk_load_be32(p + 8) };
		if (e.rel >= rel_limit)
			ok = false;
		else if (i > 0 && (e.ts < ti->e[i - 1].ts ||
				   e.rel <= ti->e[i - 1].rel))
			ok = false;
		ti->e[i] = e;
	}
	free(b);
	if (!ok)
		return MK_OK;
	ti->n = n;
	ti->synced = n;
	ti->dirty = false;
	*valid = true;
	return MK_OK;
}

bool mk_timeindex_before(const mk_timeindex *ti, int64_t target,
			 mk_time_entry *out)
{
	/* First entry with ts >= target; the answer is the one before it. */
	size_t lo = 0, hi = ti->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ti->e[mid].ts < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	*out = ti->e[lo - 1];
	return true;
}

bool mk_timeindex_last(const mk_timeindex *ti, mk_time_entry *out)
{
	if (!ti->n)
		return false;
	*out = ti->e[ti->n - 1];
	return true;
}

mk_err mk_timeindex_truncate_rel(mk_timeindex *ti, uint32_t rel)
{
	size_t n = ti->n;
	while (n > 0 && ti->e[n - 1].rel >= rel)
		n--;
	if (n == ti->n)
		return MK_OK;
	ti->n = n;
	if (ti->synced > n)
		ti->synced = n;
	if (ti->fd >= 0) {
		if (ftruncate(ti->fd, (off_t)(n * MK_TIMEINDEX_ENTRY_SIZE)))
			return MK_KAFKA_STORAGE_ERROR;
		ti->dirty = true;
	}
	return MK_OK;
}

mk_err mk_timeindex_sync(mk_timeindex *ti)
{
	if (ti->fd < 0 || !ti->dirty)
		return MK_OK;
	if (fsync(ti->fd))
		return MK_KAFKA_STORAGE_ERROR;
	ti->dirty = false;
	ti->synced = ti->n;
	return MK_OK;
}

void mk_timeindex_crash(mk_timeindex *ti)
{
	if (ti->fd >= 0 && ti->dirty &&
	    ftruncate(ti->fd, (off_t)(ti->synced * MK_TIMEINDEX_ENTRY_SIZE))) {
	}
}

void mk_timeindex_detach(mk_timeindex *ti)
{
	assert(!ti->dirty);
	if (ti->fd >= 0)
		close(ti->fd);
	ti->fd = -1;
}

void mk_timeindex_close(mk_timeindex *ti)
{
	if (ti->fd >= 0)
		close(ti->fd);
	free(ti->e);
	mk_timeindex_init(ti);
}
