#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "failpoint.h"

mk_err mk_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return MK_KAFKA_STORAGE_ERROR;
	int rc = fsync(fd);
	close(fd);
	return rc ? MK_KAFKA_STORAGE_ERROR : MK_OK;
}

mk_err mk_pwrite_all(int fd, const void *buf, size_t len, long long off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return MK_KAFKA_STORAGE_ERROR;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return MK_OK;
}

mk_err mk_pread_all(int fd, void *buf, size_t len, long long off)
{
	char *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return MK_KAFKA_STORAGE_ERROR;
		}
		if (n == 0)
			return MK_CORRUPT_MESSAGE;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return MK_OK;
}

/* A crash point PREFIX.STEP, named only when points are active. */
static void point(const char *prefix, const char *step)
{
	if (!prefix || !atomic_load_explicit(&mk_failpoints_active,
					     memory_order_relaxed))
		return;
	char name[64];
	snprintf(name, sizeof name, "%s.%s", prefix, step);
	mk_failpoint_hit_slow(name);
}

mk_err mk_file_replace(const char *path, const void *data, size_t len)
{
	return mk_file_replace_fp(path, data, len, NULL);
}

mk_err mk_file_replace_fp(const char *path, const void *data, size_t len,
			  const char *prefix)
{
	mk_strbuf tmp = MK_STRBUF_INIT;
	mk_strbuf_addf(&tmp, "%s.tmp", path);
	mk_err err = MK_KAFKA_STORAGE_ERROR;
	int fd = open(tmp.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	if (mk_pwrite_all(fd, data, len, 0)) {
		close(fd);
		unlink(tmp.buf);
		goto out;
	}
	point(prefix, "after-write");
	if (fsync(fd)) {
		close(fd);
		unlink(tmp.buf);
		goto out;
	}
	close(fd);
	point(prefix, "after-fsync");
	if (rename(tmp.buf, path)) {
		unlink(tmp.buf);
		goto out;
	}
	point(prefix, "after-rename");
	/* The directory is the part of path before its last slash. */
	const char *slash = strrchr(path, '/');
	mk_strbuf_reset(&tmp);
	if (slash)
		mk_strbuf_add(&tmp, path, slash == path ? 1 : (size_t)(slash - path));
	else
		mk_strbuf_addch(&tmp, '.');
	err = mk_fsync_dir(tmp.buf);
	if (!err)
		point(prefix, "done");
out:
	mk_strbuf_release(&tmp);
	return err;
}

mk_err mk_file_read(const char *path, mk_strbuf *out, bool *missing)
{
	*missing = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) {
			*missing = true;
			return MK_OK;
		}
		return MK_KAFKA_STORAGE_ERROR;
	}
	for (;;) {
		mk_strbuf_grow(out, 4096);
		ssize_t n = read(fd, out->buf + out->len, out->alloc - out->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return MK_KAFKA_STORAGE_ERROR;
		}
		if (n == 0)
			break;
		mk_strbuf_setlen(out, out->len + (size_t)n);
	}
	close(fd);
	return MK_OK;
}

mk_err mk_mkdirs(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return MK_OK;     /* the common case: one lookup */
	mk_strbuf p = MK_STRBUF_INIT;
	mk_strbuf_addstr(&p, path);
	mk_err err = MK_OK;
	for (size_t i = 1; i <= p.len; i++) {
		if (i < p.len && p.buf[i] != '/')
			continue;
		char save = p.buf[i];
		p.buf[i] = '\0';
		if (mkdir(p.buf, 0755) == 0) {
			/* A new directory is durable once its parent is. */
			char *slash = strrchr(p.buf, '/');
			if (slash && slash != p.buf) {
				*slash = '\0';
				err = mk_fsync_dir(p.buf);
				*slash = '/';
			} else if (slash == NULL) {
				err = mk_fsync_dir(".");
			}
			if (err)
				break;
		} else if (errno != EEXIST) {
			err = MK_KAFKA_STORAGE_ERROR;
			break;
		}
		p.buf[i] = save;
	}
	mk_strbuf_release(&p);
	return err;
}

bool mk_dir_spread_subdirs(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	int flags = 0;
	bool ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
	if (ok && !(flags & FS_TOPDIR_FL)) {
		flags |= FS_TOPDIR_FL;
		ok = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
	}
	close(fd);
	return ok;
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

mk_err mk_remove_tree(const char *path)
{
	if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return MK_KAFKA_STORAGE_ERROR;
	return MK_OK;
}
