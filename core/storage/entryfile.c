/*
 * entryfile.c — the fixed-width entry file of entryfile.h: an array in
 * memory, the same entries encoded one after another in the file.
 */
#include "entryfile.h"

#include <assert.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "search.h"
#include "xalloc.h"

void mk_entries_init(mk_entry_file *f, const mk_entry_kind *kind)
{
	f->kind = kind;
	f->fd = -1;
	f->e = NULL;
	f->n = f->cap = 0;
	f->written = f->synced = 0;
	f->dirty = false;
}

mk_err mk_entries_open(mk_entry_file *f, const char *path)
{
	assert(f->fd < 0);
	f->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	return f->fd < 0 ? MK_KAFKA_STORAGE_ERROR : MK_OK;
}

static void reserve(mk_entry_file *f, size_t n)
{
	if (n <= f->cap)
		return;
	size_t cap = f->cap ? f->cap : 16;
	while (cap < n)
		cap *= 2;
	f->e = mk_xreallocarray(f->e, cap, f->kind->mem_size);
	f->cap = cap;
}

static void *slot(mk_entry_file *f, size_t i)
{
	return f->e + i * f->kind->mem_size;
}

void mk_entries_clear(mk_entry_file *f)
{
	f->n = 0;
	f->written = f->synced = 0;
}

void mk_entries_push(mk_entry_file *f, const void *e)
{
	assert(f->n == 0 || f->kind->ordered(slot(f, f->n - 1), e));
	reserve(f, f->n + 1);
	memcpy(slot(f, f->n++), e, f->kind->mem_size);
}

mk_err mk_entries_append(mk_entry_file *f, const void *e)
{
	assert(f->fd >= 0);
	mk_entries_push(f, e);
	f->dirty = true;
	if (mk_entries_pending(f) * f->kind->disk_size < MK_ENTRIES_PENDING_BYTES)
		return MK_OK;
	return mk_entries_write_pending(f);
}

mk_err mk_entries_add(mk_entry_file *f, const void *e, bool write)
{
	if (write)
		return mk_entries_append(f, e);
	mk_entries_push(f, e);
	return MK_OK;
}

mk_err mk_entries_write_pending(mk_entry_file *f)
{
	size_t w = f->kind->disk_size, k = mk_entries_pending(f);
	if (f->fd < 0 || !k)
		return MK_OK;
	uint8_t stack[MK_ENTRIES_PENDING_BYTES + 64];
	uint8_t *b = k * w <= sizeof(stack) ? stack : mk_xmalloc(k * w);
	for (size_t i = 0; i < k; i++)
		f->kind->encode(b + i * w, slot(f, f->written + i));
	mk_err err = MK_OK;
	if (mk_pwrite_all(f->fd, b, k * w, (long long)(f->written * w)))
		err = MK_KAFKA_STORAGE_ERROR;
	else
		f->written = f->n;
	if (b != stack)
		free(b);
	return err;
}

/* Does the file hold exactly len bytes, equal to b? */
static bool same_file(int fd, const uint8_t *b, size_t len)
{
	struct stat st;
	if (fstat(fd, &st) || (uint64_t)st.st_size != len)
		return false;
	if (len == 0)
		return true;
	uint8_t *cur = mk_xmalloc(len);
	bool same = mk_pread_all(fd, cur, len, 0) == MK_OK &&
		    memcmp(cur, b, len) == 0;
	free(cur);
	return same;
}

mk_err mk_entries_write_all(mk_entry_file *f)
{
	assert(f->fd >= 0);
	size_t w = f->kind->disk_size, len = f->n * w;
	uint8_t *b = mk_xmalloc(len);
	for (size_t i = 0; i < f->n; i++)
		f->kind->encode(b + i * w, slot(f, i));
	if (!f->dirty && same_file(f->fd, b, len)) {
		/* Already there (a new segment's empty file, a mount after a
		 * clean stop): no write, and so no fsync later. An index is
		 * only an accelerator: were it not durable after all, the
		 * next load rebuilds it. */
		free(b);
		f->written = f->synced = f->n;
		return MK_OK;
	}
	mk_err err = MK_OK;
	if (ftruncate(f->fd, 0) || mk_pwrite_all(f->fd, b, len, 0))
		err = MK_KAFKA_STORAGE_ERROR;
	free(b);
	f->written = err ? 0 : f->n;
	f->synced = 0;
	f->dirty = true;
	return err;
}

mk_err mk_entries_load(mk_entry_file *f, uint64_t seg_size,
		       uint64_t rel_limit, bool *valid)
{
	assert(f->fd >= 0);
	*valid = false;
	mk_entries_clear(f);
	struct stat st;
	if (fstat(f->fd, &st))
		return MK_KAFKA_STORAGE_ERROR;
	size_t w = f->kind->disk_size;
	uint64_t len = (uint64_t)st.st_size;
	if (len % w)
		return MK_OK;
	size_t n = (size_t)(len / w);
	/* More entries than bytes in the segment cannot be right. */
	if (n > seg_size || (n == 0) != (seg_size == 0))
		return MK_OK;
	uint8_t *b = mk_xmalloc((size_t)len);
	mk_err err = mk_pread_all(f->fd, b, len, 0);
	if (err) {
		free(b);
		/* A short read means the file shrank under us: rebuild. */
		return err == MK_CORRUPT_MESSAGE ? MK_OK : MK_KAFKA_STORAGE_ERROR;
	}
	reserve(f, n);
	bool ok = true;
	for (size_t i = 0; i < n && ok; i++) {
		void *e = slot(f, i);
		f->kind->decode(b + i * w, e);
		ok = f->kind->plausible(e, i, seg_size, rel_limit) &&
		     (i == 0 || f->kind->ordered(slot(f, i - 1), e));
	}
	free(b);
	if (!ok)
		return MK_OK;
	f->n = n;
	f->written = f->synced = n;   /* what we read is what the disk holds */
	f->dirty = false;
	*valid = true;
	return MK_OK;
}

typedef struct {
	const mk_entry_file *f;
	bool (*below)(const void *e, const void *arg);
	const void *arg;
} entry_key;

static bool entry_below(const void *ctx, size_t i)
{
	const entry_key *k = ctx;
	return k->below(mk_entries_at(k->f, i), k->arg);
}

size_t mk_entries_partition(const mk_entry_file *f,
			    bool (*below)(const void *e, const void *arg),
			    const void *arg)
{
	entry_key k = { f, below, arg };
	return mk_lower_bound(f->n, entry_below, &k);
}

bool mk_entries_last(const mk_entry_file *f, void *out)
{
	if (!f->n)
		return false;
	memcpy(out, mk_entries_at(f, f->n - 1), f->kind->mem_size);
	return true;
}

bool mk_entries_last_where(const mk_entry_file *f,
			   bool (*below)(const void *e, const void *arg),
			   const void *arg, void *out)
{
	size_t n = mk_entries_partition(f, below, arg);
	if (n == 0)
		return false;
	memcpy(out, mk_entries_at(f, n - 1), f->kind->mem_size);
	return true;
}

mk_err mk_entries_truncate(mk_entry_file *f, size_t n)
{
	if (n >= f->n)
		return MK_OK;
	f->n = n;
	if (f->synced > n)
		f->synced = n;
	if (f->written <= n)      /* only pending entries were dropped */
		return MK_OK;
	f->written = n;
	if (f->fd >= 0) {
		if (ftruncate(f->fd, (off_t)(n * f->kind->disk_size)))
			return MK_KAFKA_STORAGE_ERROR;
		f->dirty = true;
	}
	return MK_OK;
}

mk_err mk_entries_sync(mk_entry_file *f)
{
	if (f->fd < 0 || !f->dirty)
		return MK_OK;
	if (mk_entries_write_pending(f) || fsync(f->fd))
		return MK_KAFKA_STORAGE_ERROR;
	f->dirty = false;
	f->synced = f->n;
	return MK_OK;
}

void mk_entries_crash(mk_entry_file *f)
{
	/* Best effort: this only simulates losing the page cache. */
	if (f->fd >= 0 && f->dirty &&
	    ftruncate(f->fd, (off_t)(f->synced * f->kind->disk_size))) {
	}
}

void mk_entries_detach(mk_entry_file *f)
{
	assert(!f->dirty);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

void mk_entries_evict(mk_entry_file *f)
{
	/* A failed write leaves them pending: written once reopened. */
	mk_entries_write_pending(f);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

void mk_entries_close(mk_entry_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->e);
	mk_entries_init(f, f->kind);
}
