/*
 * ops.c — the FUSE low-level operations: turn an inode number into a
 * path (inodes.h), resolve it (nodes.h), call a node or handle function,
 * map the error; around that, what only the FUSE layer can do (the
 * permission rules of -o allow_other, directory listings, the kernel's
 * cache of paged views and attribute times, write and read replies). No request waits for the cluster here: a handle call that
 * would wait fills an mk_wait and the request is parked (park.h); the
 * worker thread returns at once.
 *
 * Files other than raw segments and paged records (handles.h) use
 * direct_io, since their contents are computed and have no stable size.
 * Attributes and entries are never cached by the kernel (timeouts 0): the
 * tree changes under it. Cached pages are dropped by the kernel when a
 * file's size changes and at every open without keep_cache (only a paged
 * records open whose view's memo stands keeps them), and by the daemon
 * for paged records before their size grows (viewmemo.h: view_inval,
 * view_store).
 */
#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errno_map.h"
#include "group.h"
#include "handles.h"
#include "inodes.h"
#include "park.h"
#include "txn.h"
#include "cacheprobe.h"
#include "viewmemo.h"
#include "xalloc.h"

#define NAME_MAX_BYTES 255

static mkfs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* A refusal that is not a core error (EPERM for unlink and the like). */
static void refuse(fuse_req_t req, const char *path, int errnum,
		   const char *why)
{
	mkfs *fs = fs_of(req);
	mk_errlog_add(&fs->cluster->errlog, mk_clock_now(&fs->cluster->clock),
		      path, MK_INVALID_REQUEST, "%s", why);
	fuse_reply_err(req, errnum);
}

/* ---- paths and permissions ----------------------------------------- */

/* The path of ino into out; false (ENOENT replied) when it is unknown. */
static bool path_of(fuse_req_t req, fuse_ino_t ino, mk_strbuf *out)
{
	if (mk_inodes_path(fs_of(req)->inodes, ino, out))
		return true;
	fuse_reply_err(req, ENOENT);
	mk_strbuf_release(out);
	return false;
}

/* parent's path + "/" + name; false when replied (unknown parent, or a
 * name over NAME_MAX: EINVAL, like every other name limit). */
static bool child_path(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mk_strbuf *out)
{
	if (!path_of(req, parent, out))
		return false;
	if (out->len > 1)
		mk_strbuf_addch(out, '/');
	mk_strbuf_addstr(out, name);
	if (strlen(name) > NAME_MAX_BYTES) {
		mk_strbuf why = MK_STRBUF_INIT;
		mk_strbuf_addf(&why, "a name component is %zu bytes, over %d",
			       strlen(name), NAME_MAX_BYTES);
		mk_reply_fail(fs_of(req), req, out->buf, MK_INVALID_REQUEST, &why);
		mk_strbuf_release(out);
		return false;
	}
	return true;
}

/*
 * With -o allow_other, other users are held to the node's mode: the
 * owner of the mount (or root) may do anything the mode lets the owner
 * do; anyone else needs the "other" bit. Control files and directories
 * are not other-writable, so only the owner changes the cluster.
 */
static bool may(fuse_req_t req, mode_t mode, bool write)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	if (ctx->uid == 0 || ctx->uid == fs_of(req)->owner)
		return true;
	return mode & (write ? S_IWOTH : S_IROTH);
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
 * that `tail -f`, which polls the size, follows it. An fstat comes with
 * its descriptor only when the kernel sends one; otherwise the search.
 */
static off_t stream_size(mkfs *fs, const node_ref *ref, const char *path,
			 struct fuse_file_info *fi)
{
	mk_handle *h = fi && fi->fh ? (mk_handle *)(uintptr_t)fi->fh : NULL;
	if (h && mk_handle_paged(h))
		return (off_t)mk_handle_stream_size(h);    /* may step */
	long long size = 0;
	/* A records view whose pages state lives or whose length is known
	 * (viewmemo.h): that size, by name and through every descriptor, so
	 * that the kernel never sees the size move under its cached pages
	 * but by a step. */
	if (fs->views && ref->def->type == NODE_RECORDS && ref->broker < 0 &&
	    ref->topic) {
		mk_view_pages *pg = mk_viewmemo_pin(fs->views, path);
		mk_read_params rp;
		mk_strbuf why = MK_STRBUF_INIT;
		mk_err perr = pg ? mk_name_parse_records(ref->name, &rp, &why) : MK_OK;
		mk_strbuf_release(&why);
		if (pg && !perr) {
			/* Paged descriptors are open: this size may step. */
			size = mk_records_paged_size(fs, pg, ref, rp.format);
			mk_viewmemo_unpin(fs->views, pg);
			return (off_t)size;
		}
		if (pg)
			mk_viewmemo_unpin(fs->views, pg);
		mk_partition *p = mk_topic_partition(ref->topic, ref->partition);
		if (p && mk_viewmemo_size(fs->views, path, ref->topic, ref->partition,
					  mk_partition_seq(p), &size))
			return (off_t)size;
	}
	if (h)
		return (off_t)mk_handle_stream_size(h);
	pthread_mutex_lock(&fs->handles_lock);
	for (size_t i = 0; i < fs->nhandles; i++)
		if (!strcmp(fs->handles[i]->path, path)) {
			long long sz = mk_handle_stream_size(fs->handles[i]);
			if (sz > size)
				size = sz;
		}
	pthread_mutex_unlock(&fs->handles_lock);
	return (off_t)size;
}

/* st_blksize of stream files: the largest read request the kernel sends
 * (max_pages, derived from max_write). */
#define MK_STREAM_BLKSIZE (1 << 20)

static void fill_stat(mkfs *fs, const node_ref *ref, const char *path,
		      struct fuse_file_info *fi, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = fs->owner;
	st->st_gid = getgid();
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	st->st_atim = st->st_mtim = st->st_ctim = now;
	if (ref->def->type == NODE_DIR) {
		st->st_mode = S_IFDIR | ref->def->mode;
		st->st_nlink = 2;
		return;
	}
	st->st_mode = S_IFREG | ref->def->mode;
	st->st_nlink = 1;
	if (ref->def->type == NODE_RAW) {
		mk_strbuf real = MK_STRBUF_INIT;
		struct stat rst;
		int64_t limit;
		if (!mk_node_raw_path(fs, ref, &real, &limit) &&
		    !stat(real.buf, &rst)) {
			st->st_size = limit >= 0 && limit < rst.st_size
					      ? (off_t)limit : rst.st_size;
			st->st_mtim = rst.st_mtim;
		}
		mk_strbuf_release(&real);
	} else if (ref->def->type == NODE_RECORDS ||
		   ref->def->type == NODE_BATCHES) {
		st->st_size = stream_size(fs, ref, path, fi);
		/* The preferred I/O size: readers such as cat(1) and dd-less
		 * copies size their read() by it, and a large request costs
		 * one round trip through FUSE. */
		st->st_blksize = MK_STREAM_BLKSIZE;
	} else {
		size_t size;
		if (mk_node_value_size(fs, ref, &size))
			st->st_size = (off_t)size;
	}
	st->st_blocks = (st->st_size + 511) / 512;
}

/*
 * Stat a path: 0, or an errno with the /errors line already added for an
 * unknown name in the domain or a malformed parameterised name (probes of
 * other names, .Trash or .git, add nothing).
 */
static int stat_path(mkfs *fs, const char *path, struct fuse_file_info *fi,
		     fuse_ino_t ino, struct stat *st)
{
	mk_strbuf why = MK_STRBUF_INIT;
	node_ref ref;
	mk_err err = mk_resolve(fs, path, &ref, &why);
	if (err) {
		/* The line for a name mkdir could create waits: a mkdir of
		 * it drops it (errlog.h). */
		if (in_domain(path) && creatable(path) && err != MK_INVALID_REQUEST) {
			mk_errlog_hold(&fs->cluster->errlog,
				       mk_clock_now(&fs->cluster->clock), path, err,
				       "%s", why.len ? why.buf : mk_err_name(err));
			mk_strbuf_release(&why);
			return mk_errno(err);
		}
		if (in_domain(path) || err != MK_UNKNOWN_TOPIC_OR_PARTITION) {
			mk_errlog_add(&fs->cluster->errlog, mk_clock_now(&fs->cluster->clock),
				      path, err, "%s", why.len ? why.buf : mk_err_name(err));
			mk_strbuf_release(&why);
			return mk_errno(err);
		}
		mk_strbuf_release(&why);
		return ENOENT;
	}
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
			mk_errlog_add(&fs->cluster->errlog, mk_clock_now(&fs->cluster->clock),
				      path, err, "%s", why.buf);
			mk_strbuf_release(&why);
			return mk_errno(err);
		}
	}
	fill_stat(fs, &ref, path, fi, ino, st);
	mk_node_ref_release(&ref);
	mk_strbuf_release(&why);
	return 0;
}

/* Reply with the entry of path (one more inode reference). */
static void reply_entry(fuse_req_t req, const char *path)
{
	mkfs *fs = fs_of(req);
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	int rc = stat_path(fs, path, NULL, 0, &e.attr);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	e.ino = mk_inodes_ref(fs->inodes, path);
	e.attr.st_ino = e.ino;
	e.generation = 1;
	if (fuse_reply_entry(req, &e) != 0)
		mk_inodes_forget(fs->inodes, e.ino, 1);
}

/* ---- handles left open at a stop ------------------------------------ */

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
		mk_handle_flush(fs, fs->handles[i], &why);
		mk_strbuf_release(&why);
		mk_handle_close(fs->handles[i]);
	}
	fs->nhandles = 0;
	free(fs->handles);
	fs->handles = NULL;
	fs->handles_alloc = 0;
	pthread_mutex_unlock(&fs->handles_lock);
	/* Its topic references go before the cluster closes. */
	mk_viewmemo_free(fs->views);
	fs->views = NULL;
	mk_cacheprobe_free(fs->probe);
	fs->probe = NULL;
}

static void drop_handle(mkfs *fs, mk_handle *h)
{
	untrack(fs, h);
	mk_handle_close(h);
}

/* ---- lifecycle, lookup, attributes ----------------------------------- */

/* What paged records ask of the kernel (viewmemo.h); arg: the session. */
static void view_inval(void *arg, uint64_t ino, long long off)
{
	fuse_lowlevel_notify_inval_inode(arg, (fuse_ino_t)ino, (off_t)off, 0);
}

static void view_store(void *arg, uint64_t ino, long long off, const char *data,
		       size_t n)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(n);
	bv.buf[0].mem = (void *)data;
	fuse_lowlevel_notify_store(arg, (fuse_ino_t)ino, (off_t)off, &bv, 0);
}

static const mk_view_kernel view_kernel = { view_inval, view_store };

/* Probes of the page cache (cacheprobe.h): ask, and take the answer. */
#define PROBE_MS 200

static int view_retrieve(void *arg, uint64_t ino, size_t size, long long off,
			 void *cookie)
{
	return fuse_lowlevel_notify_retrieve(arg, (fuse_ino_t)ino, size,
					     (off_t)off, cookie);
}

void mk_fs_stop(mkfs *fs)
{
	struct mk_viewmemo *vm = fs->views;
	if (!vm || mk_viewmemo_stop(vm))
		fuse_session_exit(fs->session);
}

/* The last step under way at a stop ended: end the loop, and interrupt
 * its thread's wait (libfuse's loop looks at the exit flag when a signal
 * interrupts it). */
static void views_drained(void *arg)
{
	mkfs *fs = arg;
	fuse_session_exit(fs->session);
	if (fs->has_loop_thread)
		pthread_kill(fs->loop_thread, SIGTERM);
}

/* The completion thread's timer: probes past their time are unknown. */
static int64_t probe_tick(void *arg, int64_t now_ms)
{
	mkfs *fs = arg;
	return mk_cacheprobe_expire(fs->probe, now_ms);
}

static void op_retrieve_reply(fuse_req_t req, void *cookie, fuse_ino_t ino,
			      off_t offset, struct fuse_bufvec *bufv)
{
	(void)ino;
	(void)offset;
	mkfs *fs = fs_of(req);
	if (fs->probe)
		mk_cacheprobe_answer(fs->probe, cookie, fuse_buf_size(bufv));
	fuse_reply_none(req);
}

/* The largest piece of one write(2) the kernel sends: max_write, in no
 * more pages than fs.fuse.max_pages_limit allows (read as the kernel
 * reads it, at the connection's start), where the kernel has it. */
static size_t write_piece_max(size_t max_write)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned long pages;
	FILE *f = fopen("/proc/sys/fs/fuse/max_pages_limit", "r");
	if (f && fscanf(f, "%lu", &pages) == 1 && pages &&
	    pages < max_write / page)
		max_write = pages * page;
	if (f)
		fclose(f);
	return max_write;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	mkfs *fs = userdata;
	/* Requests of 1 MiB, or what libfuse's buffer holds if less. */
	if (conn->max_write > 1u << 20)
		conn->max_write = 1u << 20;
	fs->max_write = write_piece_max(conn->max_write);
	conn->max_readahead = 1u << 20;
	/* Cached pages (raw segments, paged records) are dropped when the
	 * size changes or at an open without keep_cache, not at every read
	 * whose attributes show a new mtime (ours are the time of the stat). */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	/* After daemonizing: threads survive. */
	fs->parking = mk_parking_new(fs, drop_handle);
	/* A fetcher answers the acks=all writes its round completed. */
	mk_cluster_on_round(fs->cluster, mk_parking_help, fs->parking);
	/* A step waits in the kernel for reads other workers answer: at
	 * most half the workers step at once (viewmemo.h); one worker
	 * alone never could, so it has no paged records. */
	unsigned workers = fs->workers ? fs->workers : 10;
	struct mk_viewmemo *views = workers > 1
		? mk_viewmemo_new(&view_kernel, (int)workers / 2) : NULL;
	if (views)
		mk_viewmemo_on_drained(views, views_drained, fs);
	fs->views = views;    /* complete before a signal handler may see it */
	fs->probe = mk_cacheprobe_new();
	mk_parking_set_tick(fs->parking, probe_tick, fs);
	mk_cluster_start(fs->cluster);
	if (fs->groups)
		mk_groups_start(fs->groups);
	if (fs->txns)
		mk_txns_start(fs->txns);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	mk_strbuf path = MK_STRBUF_INIT;
	if (!child_path(req, parent, name, &path))
		return;
	reply_entry(req, path.buf);
	mk_strbuf_release(&path);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	mk_inodes_forget(fs_of(req)->inodes, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		mk_inodes_forget(fs_of(req)->inodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mk_strbuf path = MK_STRBUF_INIT;
	if (!path_of(req, ino, &path))
		return;
	struct stat st;
	int rc = stat_path(fs_of(req), path.buf, fi, ino, &st);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_attr(req, &st, 0);
	mk_strbuf_release(&path);
}

/*
 * setattr: `>` opens with O_TRUNC, a truncate to 0 of a writable file,
 * which is a no-op; touch (times) is accepted and changes nothing. Any
 * other size is EPERM (logs are append-only), and so are chmod and chown
 * (modes are part of the tree's contract).
 */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	(void)fi;
	mkfs *fs = fs_of(req);
	mk_strbuf path = MK_STRBUF_INIT;
	if (!path_of(req, ino, &path))
		return;
	node_ref ref;
	if (mk_resolve(fs, path.buf, &ref, NULL)) {
		fuse_reply_err(req, ENOENT);
		goto out;
	}
	mode_t mode = ref.def->mode;
	bool dir = ref.def->type == NODE_DIR;
	mk_node_ref_release(&ref);
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		refuse(req, path.buf, EPERM, "modes and owners of the tree cannot change");
		goto out;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (dir) {
			fuse_reply_err(req, EISDIR);
			goto out;
		}
		if (!(mode & 0222) || !may(req, mode, true)) {
			refuse(req, path.buf, EACCES, "the file is not writable");
			goto out;
		}
		if (attr->st_size != 0) {
			refuse(req, path.buf, EPERM, "logs are append-only: only a truncate to 0 (O_TRUNC) is accepted, and changes nothing");
			goto out;
		}
	}
	struct stat st;
	int rc = stat_path(fs, path.buf, fi, ino, &st);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_attr(req, &st, 0);
out:
	mk_strbuf_release(&path);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct statvfs sv;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_namemax = NAME_MAX_BYTES;
	fuse_reply_statfs(req, &sv);
}

/* ---- directories ------------------------------------------------------ */

typedef struct {
	fuse_req_t req;
	char *buf;
	size_t len, alloc;
} dirbuf;

static void dir_add(void *arg, const char *name, bool dir)
{
	dirbuf *d = arg;
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_mode = dir ? S_IFDIR : S_IFREG;
	st.st_ino = 0xffffffffu;    /* unknown until looked up (0 hides it) */
	size_t need = fuse_add_direntry(d->req, NULL, 0, name, NULL, 0);
	if (d->len + need > d->alloc) {
		d->alloc = (d->len + need) * 2;
		d->buf = mk_xrealloc(d->buf, d->alloc);
	}
	fuse_add_direntry(d->req, d->buf + d->len, need, name, &st,
			  (off_t)(d->len + need));
	d->len += need;
}

/* opendir takes the listing once; readdir pages through it. */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mkfs *fs = fs_of(req);
	mk_strbuf path = MK_STRBUF_INIT;
	if (!path_of(req, ino, &path))
		return;
	node_ref ref;
	if (mk_resolve(fs, path.buf, &ref, NULL)) {
		fuse_reply_err(req, ENOENT);
		goto out;
	}
	if (ref.def->type != NODE_DIR) {
		mk_node_ref_release(&ref);
		fuse_reply_err(req, ENOTDIR);
		goto out;
	}
	dirbuf *d = mk_xcalloc(1, sizeof(*d));
	d->req = req;
	dir_add(d, ".", true);
	dir_add(d, "..", true);
	mk_node_list(fs, &ref, dir_add, d);
	mk_node_ref_release(&ref);
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0) {
		free(d->buf);
		free(d);
	}
out:
	mk_strbuf_release(&path);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	dirbuf *d = (dirbuf *)(uintptr_t)fi->fh;
	if (off < 0 || (size_t)off >= d->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	/* Reply from a copy owned by this thread: the listing is freed by
	 * releasedir on another thread, ordered after this reply only by the
	 * kernel (which ThreadSanitizer cannot see: it checks writev's buffer
	 * after the call returns). */
	size_t n = d->len - (size_t)off < size ? d->len - (size_t)off : size;
	char *copy = mk_xmalloc(n);
	memcpy(copy, d->buf + off, n);
	fuse_reply_buf(req, copy, n);
	free(copy);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dirbuf *d = (dirbuf *)(uintptr_t)fi->fh;
	free(d->buf);
	free(d);
	fuse_reply_err(req, 0);
}

/* ---- commands that wait inside the cluster: jobs (park.h) ------------- */

/*
 * The group and transaction coordinators append their records with
 * acks=all and act once they are acknowledged: a control write the node
 * table marks as waiting (under /groups/G and /transactions/ID, and two
 * /ctl commands: mk_node_write_waits), mkdir and rmdir of a group or an
 * id (mk_node_mkdir_waits) run as jobs on the lot's command thread. (A
 * transactional append is not one: its batch waits for its partition's
 * registration in the producer, and the write parks as any other.) A command that leaves its
 * coordinator call pending parks (mk_park_job_wait) and goes on where it
 * stopped when the call completes: the next line of a control write, or
 * the reply.
 */
typedef enum { JOB_WRITE, JOB_MKDIR, JOB_RMDIR } job_kind;

typedef struct {
	mk_job base;              /* first */
	job_kind kind;
	mkfs *fs;
	mk_handle *h;             /* JOB_WRITE (a control write): kept open
				   * by the request */
	char *data;               /* the bytes written, or the path */
	size_t size;
	bool started;
	size_t done;              /* a control write: the bytes run so far */
	mk_coord_call call;       /* the command's, while pending */
} fs_job;

static void job_free(fs_job *j)
{
	mk_coord_call_forget(&j->call);
	free(j->data);
	free(j);
}

static const char *job_path(const fs_job *j)
{
	return j->kind == JOB_WRITE ? j->h->path : j->data;
}

static void job_cancel(mk_job *base)
{
	fs_job *j = (fs_job *)base;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_strbuf_addstr(&why, "interrupted before the command started (nothing changed)");
	mk_reply_fail(j->fs, base->req, job_path(j), MK_INTERRUPTED, &why);
	job_free(j);
}

/* Run the command on from where it stopped (its call complete). */
static mk_err job_step(fs_job *j, mk_strbuf *why)
{
	j->started = true;
	if (j->kind == JOB_MKDIR)
		return mk_node_mkdir(j->fs, j->data, &j->call, why);
	if (j->kind == JOB_RMDIR)
		return mk_node_rmdir(j->fs, j->data, &j->call, why);
	return mk_node_control(j->fs, &j->h->ref, j->data, j->size, &j->done,
			       &j->call, why);
}

/* Reply to a job whose command ended with err, and free it. */
static void job_reply(fs_job *j, mk_err err, mk_strbuf *why)
{
	/* Only the daemon's stop interrupts a command inside the cluster,
	 * which may have appended: not EINTR (a retry could repeat it). */
	if (err == MK_INTERRUPTED) {
		mk_strbuf_reset(why);
		mk_strbuf_addstr(why, "the daemon stopped before the command's records were acknowledged");
		err = MK_REQUEST_TIMED_OUT;
	}
	if (err) {
		mk_reply_fail(j->fs, j->base.req, job_path(j), err, why);
	} else {
		mk_strbuf_release(why);
		if (j->kind == JOB_WRITE)
			fuse_reply_write(j->base.req, j->size);
		else if (j->kind == JOB_MKDIR)
			reply_entry(j->base.req, j->data);
		else
			fuse_reply_err(j->base.req, 0);
	}
	job_free(j);
}

/* Step until the command ends (reply: true) or its call is pending. */
static bool job_go(fs_job *j, mk_wait *wait)
{
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_coord_call_resume(&j->call, &why);
	while (!err && !mk_coord_call_pending(&j->call)) {
		if (j->started && (j->kind != JOB_WRITE || j->done >= j->size))
			break;
		err = job_step(j, &why);
	}
	if (!err && mk_coord_call_pending(&j->call)) {
		mk_strbuf_release(&why);
		*wait = (mk_wait){ .kind = MK_WAIT_ACKS, .coord = j->call.rt,
				   .seen = j->call.seen,
				   .deadline_ms = j->call.deadline_ms };
		return false;
	}
	job_reply(j, err, &why);
	return true;
}

static bool job_resume(mk_job *base, mk_wait *wait, bool stopping, bool dying)
{
	fs_job *j = (fs_job *)base;
	if (job_go(j, wait))
		return true;
	if (!stopping && !dying)
		return false;
	mk_strbuf why = MK_STRBUF_INIT;
	if (dying) {
		/* Answered at once, EINTR (job_reply would turn it into the
		 * stop's ETIMEDOUT): the caller can neither see nor retry it. */
		mk_strbuf_addstr(&why, "the caller was killed while the coordinator's records awaited the ISR (they stay appended)");
		mk_reply_fail(j->fs, base->req, job_path(j), MK_INTERRUPTED, &why);
		job_free(j);
		return true;
	}
	mk_strbuf_addstr(&why, "the daemon stopped before the command's records were acknowledged");
	job_reply(j, MK_REQUEST_TIMED_OUT, &why);
	return true;
}

static void job_run(mk_job *base)
{
	fs_job *j = (fs_job *)base;
	mkfs *fs = j->fs;
	if (j->kind == JOB_MKDIR)
		mk_errlog_drop_held(&fs->cluster->errlog, j->data);
	mk_wait wait;
	if (!job_go(j, &wait))
		mk_park_job_wait(fs->parking, base, &wait);
}

static void queue_job(fuse_req_t req, job_kind kind, mk_handle *h,
		      const char *data, size_t size)
{
	mkfs *fs = fs_of(req);
	fs_job *j = mk_xcalloc(1, sizeof(*j));
	j->base.req = req;
	j->base.run = job_run;
	j->base.cancel = job_cancel;
	j->base.resume = job_resume;
	j->kind = kind;
	j->fs = fs;
	j->h = h;
	j->data = mk_xmalloc(size + 1);
	memcpy(j->data, data, size);
	j->data[size] = '\0';
	j->size = size;
	mk_park_job(fs->parking, &j->base);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	(void)mode;
	mkfs *fs = fs_of(req);
	mk_strbuf path = MK_STRBUF_INIT;
	if (!child_path(req, parent, name, &path))
		return;
	if (!may(req, 0755, true)) {
		refuse(req, path.buf, EACCES, "only the mount's owner may change the cluster");
	} else if (mk_node_mkdir_waits(fs, path.buf)) {
		queue_job(req, JOB_MKDIR, NULL, path.buf, path.len);
	} else {
		mk_strbuf why = MK_STRBUF_INIT;
		mk_errlog_drop_held(&fs->cluster->errlog, path.buf);
		mk_err err = mk_node_mkdir(fs, path.buf, NULL, &why);
		if (err) {
			mk_reply_fail(fs, req, path.buf, err, &why);
		} else {
			mk_strbuf_release(&why);
			reply_entry(req, path.buf);
		}
	}
	mk_strbuf_release(&path);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	mkfs *fs = fs_of(req);
	mk_strbuf path = MK_STRBUF_INIT;
	if (!child_path(req, parent, name, &path))
		return;
	if (!may(req, 0755, true)) {
		refuse(req, path.buf, EACCES, "only the mount's owner may change the cluster");
	} else if (mk_node_mkdir_waits(fs, path.buf)) {
		queue_job(req, JOB_RMDIR, NULL, path.buf, path.len);
	} else {
		mk_strbuf why = MK_STRBUF_INIT;
		mk_err err = mk_node_rmdir(fs, path.buf, NULL, &why);
		if (err) {
			mk_reply_fail(fs, req, path.buf, err, &why);
		} else {
			mk_strbuf_release(&why);
			fuse_reply_err(req, 0);
		}
	}
	mk_strbuf_release(&path);
}

/* unlink, rename, link, symlink, mknod: the tree is not edited by name. */
static void refuse_name(fuse_req_t req, fuse_ino_t parent, const char *name,
			const char *what)
{
	mk_strbuf path = MK_STRBUF_INIT;
	if (!child_path(req, parent, name, &path))
		return;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_strbuf_addf(&why, "%s is not supported: files are made and removed by the cluster (mkdir/rmdir, /ctl)", what);
	refuse(req, path.buf, EPERM, why.buf);
	mk_strbuf_release(&why);
	mk_strbuf_release(&path);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	refuse_name(req, parent, name, "unlink");
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	(void)newparent;
	(void)newname;
	(void)flags;
	refuse_name(req, parent, name, "rename");
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	(void)link;
	refuse_name(req, parent, name, "symlink");
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	(void)ino;
	refuse_name(req, newparent, newname, "link");
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	(void)mode;
	(void)rdev;
	refuse_name(req, parent, name, "creating a file");
}

/* ---- files -------------------------------------------------------------- */

static mk_handle *handle_of(struct fuse_file_info *fi)
{
	return (mk_handle *)(uintptr_t)fi->fh;
}

/* Open path into a new handle (*out); 0 or an errno (with its /errors
 * line). */
static int open_handle(fuse_req_t req, const char *path, int flags,
		       mk_handle **out)
{
	mkfs *fs = fs_of(req);
	mk_strbuf why = MK_STRBUF_INIT;
	node_ref ref;
	mk_err err = mk_resolve(fs, path, &ref, &why);
	if (err)
		goto fail;
	int acc = flags & O_ACCMODE;
	if ((acc != O_RDONLY && !may(req, ref.def->mode, true)) ||
	    (acc != O_WRONLY && !may(req, ref.def->mode, false))) {
		mk_node_ref_release(&ref);
		mk_errlog_add(&fs->cluster->errlog, mk_clock_now(&fs->cluster->clock),
			      path, MK_INVALID_REQUEST,
			      "permission denied: the file's mode does not let this user %s it",
			      acc == O_RDONLY ? "read" : "write");
		mk_strbuf_release(&why);
		return EACCES;
	}
	err = mk_handle_open(fs, &ref, path, flags, out, &why);
	mk_node_ref_release(&ref);
	if (err)
		goto fail;
	mk_strbuf_release(&why);
	return 0;
fail:
	mk_errlog_add(&fs->cluster->errlog, mk_clock_now(&fs->cluster->clock),
		      path, err, "%s", why.len ? why.buf : mk_err_name(err));
	mk_strbuf_release(&why);
	return mk_errno(err);
}

/* The open of h (inode ino) is decided: fill fi and track h. */
static void open_finish(mkfs *fs, mk_handle *h, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	/* Paged records (handles.h) go through the page cache like raw
	 * segments; every other file is computed, with direct I/O. */
	mk_handle_paging *pg = mk_handle_paged(h);
	fi->direct_io = !h->ops->cached && !pg;
	fi->keep_cache = pg && pg->keep_cache;
	/* Before the open is answered: a first paged open of its view drops
	 * what the inode cached (viewmemo.h). */
	if (pg) {
		mk_viewmemo_opened(fs->views, pg->pages, ino, fs->session,
				   pg->fresh);
		pg->fresh = false;
	}
	track(fs, h);
	fi->fh = (uint64_t)(uintptr_t)h;
	/* Streams accept lseek (head and tail seek back) and go on reading;
	 * a poll is consumed as read, so it does not seek. */
	fi->nonseekable = h->ops->nonseekable;
}

/* Answer an open whose handle is ready. */
static void open_reply(fuse_req_t req, mkfs *fs, mk_handle *h, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	open_finish(fs, h, ino, fi);
	if (fuse_reply_open(req, fi) != 0)   /* the open was interrupted */
		drop_handle(fs, h);
}

/*
 * A paged view whose first page left the cache (evicted, or dropped with
 * POSIX_FADV_DONTNEED) is read faster as a stream: readahead through the
 * page cache sends smaller requests and copies twice. Not every time
 * (viewmemo.h: mk_viewmemo_cold), and never the first paged open of an
 * identity: those fill the cache. The open asks the kernel (cacheprobe.h)
 * and its worker returns; the answer (a retrieve_reply on another
 * worker), or the probe's expiry after PROBE_MS on the parking lot's
 * completion thread (then: paged), answers the open.
 */
typedef struct {
	fuse_req_t req;
	mkfs *fs;
	mk_handle *h;
	fuse_ino_t ino;
	struct fuse_file_info fi;    /* a copy: libfuse's is on its stack */
} probed_open;

static void probe_done(void *arg, int cached)
{
	probed_open *po = arg;
	mkfs *fs = po->fs;
	if (cached == 1)
		mk_viewmemo_warm(fs->views, mk_handle_paged(po->h)->pages);
	else if (cached == 0 &&
		 mk_viewmemo_cold(fs->views, mk_handle_paged(po->h)->pages))
		mk_handle_unpage(po->h);
	open_reply(po->req, fs, po->h, po->ino, &po->fi);
	free(po);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mkfs *fs = fs_of(req);
	mk_strbuf path = MK_STRBUF_INIT;
	if (!path_of(req, ino, &path))
		return;
	mk_handle *h;
	int rc = open_handle(req, path.buf, fi->flags, &h);
	mk_strbuf_release(&path);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	mk_handle_paging *pg = mk_handle_paged(h);
	if (pg && !pg->fresh && fs->probe && fs->session && fs->parking) {
		probed_open *po = mk_xcalloc(1, sizeof(*po));
		*po = (probed_open){ req, fs, h, ino, *fi };
		mk_cacheprobe_start(fs->probe, view_retrieve, fs->session, ino, 0,
				    mk_wall_ms() + PROBE_MS, probe_done, po);
		mk_parking_poke(fs->parking);    /* the expiry's timer */
		return;
	}
	open_reply(req, fs, h, ino, fi);
}

/* Files cannot be created; an existing one opens as usual. */
static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	mkfs *fs = fs_of(req);
	mk_strbuf path = MK_STRBUF_INIT;
	if (!child_path(req, parent, name, &path))
		return;
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	node_ref ref;
	if (mk_resolve(fs, path.buf, &ref, NULL)) {
		refuse(req, path.buf, EPERM, "files cannot be created; the cluster makes them");
		goto out;
	}
	mk_node_ref_release(&ref);
	int rc = stat_path(fs, path.buf, NULL, 0, &e.attr);
	e.ino = mk_inodes_ref(fs->inodes, path.buf);
	mk_handle *h = NULL;
	if (!rc)
		rc = open_handle(req, path.buf, fi->flags, &h);
	if (!rc)
		open_finish(fs, h, e.ino, fi);    /* no cache probe: a speed-up only */
	if (rc) {
		mk_inodes_forget(fs->inodes, e.ino, 1);
		fuse_reply_err(req, rc);
		goto out;
	}
	e.attr.st_ino = e.ino;
	e.generation = 1;
	if (fuse_reply_create(req, &e, fi) != 0) {
		mk_inodes_forget(fs->inodes, e.ino, 1);
		drop_handle(fs, handle_of(fi));
	}
out:
	mk_strbuf_release(&path);
}

/* A completed read: the reply is written from the handle's bytes. */
static void reply_read(void *arg, const char *data, size_t n)
{
	fuse_reply_buf(arg, data, n);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino;
	mkfs *fs = fs_of(req);
	mk_handle *h = handle_of(fi);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_wait wait;
	mk_err err = mk_handle_read_reply(fs, h, size, off, &wait, reply_read,
					  req, &why);
	if (!err && mk_wait_pending(&wait)) {
		mk_strbuf_release(&why);
		mk_park(fs->parking, req, h, MK_PARK_READ,
			mk_xmalloc(size ? size : 1), size, off, &wait);
		return;
	}
	if (err)
		mk_reply_fail(fs, req, h->path, err, &why);
	mk_strbuf_release(&why);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)off;
	mkfs *fs = fs_of(req);
	mk_handle *h = handle_of(fi);
	if (mk_handle_write_waits(h, buf, size)) {
		queue_job(req, JOB_WRITE, h, buf, size);
		return;
	}
	mk_strbuf why = MK_STRBUF_INIT;
	mk_wait wait;
	mk_err err = mk_handle_write(fs, h, buf, size, &wait, &why);
	if (!err && mk_wait_pending(&wait)) {
		mk_strbuf_release(&why);
		mk_park(fs->parking, req, h, MK_PARK_WRITE, NULL, size, 0, &wait);
		return;
	}
	if (err)
		mk_reply_fail(fs, req, h->path, err, &why);
	else
		fuse_reply_write(req, size);
	mk_strbuf_release(&why);
}

static void status_op(fuse_req_t req, struct fuse_file_info *fi, bool sync)
{
	mkfs *fs = fs_of(req);
	mk_handle *h = handle_of(fi);
	mk_strbuf why = MK_STRBUF_INIT;
	mk_wait wait;
	wait.kind = MK_WAIT_NONE;    /* a flush sends nothing: never parks */
	mk_err err = sync ? mk_handle_fsync(fs, h, &wait, &why)
			  : mk_handle_flush(fs, h, &why);
	if (!err && mk_wait_pending(&wait)) {
		mk_strbuf_release(&why);
		mk_park(fs->parking, req, h, MK_PARK_STATUS, NULL, 0, 0, &wait);
		return;
	}
	if (err)
		mk_reply_fail(fs, req, h->path, err, &why);
	else
		fuse_reply_err(req, 0);
	mk_strbuf_release(&why);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	status_op(req, fi, false);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	status_op(req, fi, true);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	/* The last close of the open file description: an append file sends
	 * what it still holds (errors can only go to /errors, handles.h). The
	 * kernel is answered at once (a release holds one of its few
	 * background slots); the acknowledgements still owed are waited for
	 * parked, and the handle is closed from their event. */
	mkfs *fs = fs_of(req);
	mk_handle *h = handle_of(fi);
	mk_wait wait;
	bool now = mk_handle_close_begin(h, &wait);
	fuse_reply_err(req, 0);
	if (now)
		drop_handle(fs, h);
	else
		mk_park(fs->parking, NULL, h, MK_PARK_RELEASE, NULL, 0, 0, &wait);
}

const struct fuse_lowlevel_ops mk_ll_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.statfs = op_statfs,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.unlink = op_unlink,
	.rename = op_rename,
	.symlink = op_symlink,
	.link = op_link,
	.mknod = op_mknod,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.retrieve_reply = op_retrieve_reply,
};
