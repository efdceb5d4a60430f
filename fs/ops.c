/*
 * ops.c — FUSE callbacks. Thin: resolve, call a node or handle function,
 * map the error. Files other than raw segments use direct_io, since their
 * contents are computed and have no stable size.
 */
#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errno_map.h"
#include "group.h"
#include "handles.h"
#include "xalloc.h"

static mkfs *self(void)
{
	return fuse_get_context()->private_data;
}

static int fail(mkfs *fs, const char *path, mk_err err, mk_strbuf *why)
{
	mk_errlog_add(&fs->cluster->errlog, mk_clock_now(&fs->cluster->clock),
		      path, err, "%s", why->len ? why->buf : mk_err_name(err));
	mk_strbuf_release(why);
	return -mk_errno(err);
}

static bool request_interrupted(void *arg)
{
	(void)arg;
	struct fuse_context *ctx = fuse_get_context();
	if (fuse_interrupted())
		return true;
	return ctx && ctx->fuse && fuse_session_exited(fuse_get_session(ctx->fuse));
}

static const mk_waiter waiter = { request_interrupted, NULL };

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->use_ino = 0;
	cfg->direct_io = 0;
	mkfs *fs = fuse_get_context()->private_data;
	mk_cluster_start(fs->cluster);   /* after daemonizing: threads survive */
	if (fs->groups)
		mk_groups_start(fs->groups);
	if (fs->txns)
		mk_txns_start(fs->txns);
	return fs;
}

static void track(mkfs *fs, mk_handle *h)
{
	pthread_mutex_lock(&fs->handles_lock);
	if (fs->nhandles == fs->handles_alloc) {
		fs->handles_alloc = fs->handles_alloc ? fs->handles_alloc * 2 : 64;
		fs->handles = mk_xrealloc(fs->handles, fs->handles_alloc * sizeof(*fs->handles));
	}
	fs->handles[fs->nhandles++] = h;
	pthread_mutex_unlock(&fs->handles_lock);
}

static void untrack(mkfs *fs, mk_handle *h)
{
	pthread_mutex_lock(&fs->handles_lock);
	for (size_t i = 0; i < fs->nhandles; i++)
		if (fs->handles[i] == h) {
			fs->handles[i] = fs->handles[--fs->nhandles];
			break;
		}
	pthread_mutex_unlock(&fs->handles_lock);
}

void mk_fs_release_all(mkfs *fs)
{
	pthread_mutex_lock(&fs->handles_lock);
	for (size_t i = 0; i < fs->nhandles; i++) {
		mk_strbuf why = MK_STRBUF_INIT;
		mk_handle_flush(fs, fs->handles[i], NULL, &why);
		mk_strbuf_release(&why);
		mk_handle_close(fs->handles[i]);
	}
	fs->nhandles = 0;
	free(fs->handles);
	fs->handles = NULL;
	fs->handles_alloc = 0;
	pthread_mutex_unlock(&fs->handles_lock);
}

static bool in_domain(const char *path)
{
	static const char *const dirs[] = { "/topics/", "/brokers/", "/producers/",
					    "/groups/", "/transactions/" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!strncmp(path, dirs[i], strlen(dirs[i])))
			return true;
	return false;
}

/* A name directly under a directory where mkdir creates (/topics/NAME,
 * /producers/NAME, /transactions/NAME): its lookup is also the first step
 * of that mkdir. */
static bool creatable(const char *path)
{
	static const char *const dirs[] = { "/topics/", "/producers/", "/transactions/" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t n = strlen(dirs[i]);
		if (!strncmp(path, dirs[i], n) && path[n] && !strchr(path + n, '/'))
			return true;
	}
	return false;
}

/*
 * The size of a stream file (records, batches): 0 unless it is open; open,
 * what its descriptor read plus what is visible now (the largest over the
 * descriptors open on this very name, which show the same stream), so
 * that `tail -f`, which polls the size, follows it. The kernel sends
 * fstat as a getattr by path, hence the search.
 */
static off_t stream_size(mkfs *fs, const char *path, struct fuse_file_info *fi)
{
	if (fi && fi->fh)
		return (off_t)mk_handle_stream_size((mk_handle *)(uintptr_t)fi->fh);
	long long size = 0;
	pthread_mutex_lock(&fs->handles_lock);
	for (size_t i = 0; i < fs->nhandles; i++)
		if (!strcmp(fs->handles[i]->path, path)) {
			long long s = mk_handle_stream_size(fs->handles[i]);
			if (s > size)
				size = s;
		}
	pthread_mutex_unlock(&fs->handles_lock);
	return (off_t)size;
}

/* st_blksize of stream files: the largest read request the kernel sends
 * (max_pages, derived from max_write). */
#define MK_STREAM_BLKSIZE (1 << 20)

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	mkfs *fs = self();
	mk_strbuf why = MK_STRBUF_INIT;
	node_ref ref;
	mk_err err = mk_resolve(fs, path, &ref, &why);
	if (err) {
		/* An unknown topic, partition, broker or producer is an error
		 * worth a line; probes of other names (.Trash, .git) are not.
		 * The line for a name mkdir could create waits: a mkdir of
		 * it drops it (errlog.h). */
		if (in_domain(path) && creatable(path)) {
			mk_errlog_hold(&fs->cluster->errlog,
				       mk_clock_now(&fs->cluster->clock), path, err,
				       "%s", why.len ? why.buf : mk_err_name(err));
			mk_strbuf_release(&why);
			return -mk_errno(err);
		}
		if (in_domain(path))
			return fail(fs, path, err, &why);
		mk_strbuf_release(&why);
		return -ENOENT;
	}
	/* A parameterised name must parse, or it does not exist as given. */
	if (ref.def->type == NODE_RECORDS || ref.def->type == NODE_APPEND ||
	    ref.def->type == NODE_POLL || ref.def->type == NODE_BATCHES) {
		mk_read_params rp;
		mk_append_params ap;
		err = ref.def->type == NODE_RECORDS
			? mk_name_parse_records(ref.name, &rp, &why)
			: ref.def->type == NODE_POLL
			? mk_name_parse_poll(ref.name, &rp, &why)
			: ref.def->type == NODE_BATCHES
			? mk_name_parse_batches(ref.name, &rp, &why)
			: mk_name_parse_append(ref.name, &ap, &why);
		if (err) {
			mk_node_ref_release(&ref);
			return fail(fs, path, err, &why);
		}
	}
	memset(st, 0, sizeof(*st));
	st->st_uid = getuid();
	st->st_gid = getgid();
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	st->st_atim = st->st_mtim = st->st_ctim = now;
	if (ref.def->type == NODE_DIR) {
		st->st_mode = S_IFDIR | ref.def->mode;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | ref.def->mode;
		st->st_nlink = 1;
		if (ref.def->type == NODE_RAW) {
			mk_strbuf real = MK_STRBUF_INIT;
			struct stat rst;
			if (!mk_node_raw_path(fs, &ref, &real) && !stat(real.buf, &rst)) {
				st->st_size = rst.st_size;
				st->st_mtim = rst.st_mtim;
			}
			mk_strbuf_release(&real);
		} else if (ref.def->type == NODE_RECORDS ||
			   ref.def->type == NODE_BATCHES) {
			st->st_size = stream_size(fs, path, fi);
			/* The preferred I/O size: readers such as cat(1) and
			 * dd-less copies size their read() by it, and a large
			 * request costs one round trip through FUSE. */
			st->st_blksize = MK_STREAM_BLKSIZE;
		} else {
			size_t size;
			if (mk_node_value_size(fs, &ref, &size))
				st->st_size = (off_t)size;
		}
		st->st_blocks = (st->st_size + 511) / 512;
	}
	mk_node_ref_release(&ref);
	mk_strbuf_release(&why);
	return 0;
}

struct fill_ctx {
	void *buf;
	fuse_fill_dir_t filler;
};

static void fill_one(void *arg, const char *name, bool dir)
{
	(void)dir;
	struct fill_ctx *fc = arg;
	fc->filler(fc->buf, name, NULL, 0, 0);
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	mkfs *fs = self();
	node_ref ref;
	if (mk_resolve(fs, path, &ref, NULL))
		return -ENOENT;
	if (ref.def->type != NODE_DIR) {
		mk_node_ref_release(&ref);
		return -ENOTDIR;
	}
	filler(buf, ".", NULL, 0, 0);
	filler(buf, "..", NULL, 0, 0);
	struct fill_ctx fc = { buf, filler };
	mk_node_list(fs, &ref, fill_one, &fc);
	mk_node_ref_release(&ref);
	return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	mkfs *fs = self();
	mk_strbuf why = MK_STRBUF_INIT;
	node_ref ref;
	mk_err err = mk_resolve(fs, path, &ref, &why);
	if (err)
		return fail(fs, path, err, &why);
	mk_handle *h;
	node_type type = ref.def->type;
	err = mk_handle_open(fs, &ref, path, fi->flags, &h, &why);
	mk_node_ref_release(&ref);
	if (err)
		return fail(fs, path, err, &why);
	track(fs, h);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = type != NODE_RAW;
	/* Streams accept lseek (head and tail seek back) and go on reading;
	 * a poll is consumed as read, so it does not seek. */
	fi->nonseekable = type == NODE_APPEND || type == NODE_POLL;
	mk_strbuf_release(&why);
	return 0;
}

static mk_handle *handle_of(struct fuse_file_info *fi)
{
	return (mk_handle *)(uintptr_t)fi->fh;
}

static int op_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	mkfs *fs = self();
	mk_strbuf why = MK_STRBUF_INIT;
	size_t n;
	mk_err err = mk_handle_read(fs, handle_of(fi), buf, size, off, &waiter,
				    &n, &why);
	if (err)
		return fail(fs, path, err, &why);
	mk_strbuf_release(&why);
	return (int)n;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)off;
	mkfs *fs = self();
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_handle_write(fs, handle_of(fi), buf, size, &waiter, &why);
	if (err)
		return fail(fs, path, err, &why);
	mk_strbuf_release(&why);
	return (int)size;
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
	mkfs *fs = self();
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_handle_flush(fs, handle_of(fi), &waiter, &why);
	if (err)
		return fail(fs, path, err, &why);
	mk_strbuf_release(&why);
	return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	mkfs *fs = self();
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_handle_fsync(fs, handle_of(fi), &waiter, &why);
	if (err)
		return fail(fs, path, err, &why);
	mk_strbuf_release(&why);
	return 0;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	mkfs *fs = self();
	mk_handle *h = handle_of(fi);
	/* The last close of the open file description: an append file sends
	 * what it still holds; errors can only go to /errors (handles.h). */
	untrack(fs, h);
	mk_handle_close(h);
	return 0;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)fi;
	mkfs *fs = self();
	node_ref ref;
	if (mk_resolve(fs, path, &ref, NULL))
		return -ENOENT;
	bool writable = ref.def->mode & 0222;
	mk_node_ref_release(&ref);
	/* O_TRUNC on a control or append file is how `>` opens it: no-op. */
	return writable && size == 0 ? 0 : -EINVAL;
}

static int op_mkdir(const char *path, mode_t mode)
{
	(void)mode;
	mkfs *fs = self();
	mk_strbuf why = MK_STRBUF_INIT;
	mk_errlog_drop_held(&fs->cluster->errlog, path);
	mk_err err = mk_node_mkdir(fs, path, &why);
	if (err)
		return fail(fs, path, err, &why);
	mk_strbuf_release(&why);
	return 0;
}

static int op_rmdir(const char *path)
{
	mkfs *fs = self();
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_node_rmdir(fs, path, &why);
	if (err)
		return fail(fs, path, err, &why);
	mk_strbuf_release(&why);
	return 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	/* Files cannot be created; an existing one opens as usual. */
	node_ref ref;
	if (mk_resolve(self(), path, &ref, NULL))
		return -EACCES;
	mk_node_ref_release(&ref);
	return op_open(path, fi);
}

static int op_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	(void)tv;
	(void)fi;
	node_ref ref;
	if (mk_resolve(self(), path, &ref, NULL))
		return -ENOENT;
	mk_node_ref_release(&ref);
	return 0;
}

const struct fuse_operations mk_fuse_ops = {
	.init = op_init,
	.getattr = op_getattr,
	.readdir = op_readdir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.truncate = op_truncate,
	.utimens = op_utimens,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
};
