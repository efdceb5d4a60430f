/*
 * handles.c — open files: what every kind shares (the lock, the stream
 * hand-out of the text), each operation reaching the kind's own through
 * its row of the node table (handle.h); and the two small kinds, value
 * and control snapshots and raw segment files. Records and batches are
 * handle_records.c, append handle_append.c, poll poll.c.
 */
#include "handles.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- snapshots: value and control files -------------------------------- */

static mk_err snapshot_open(mkfs *fs, mk_handle *h, int flags, mk_strbuf *why)
{
	if ((flags & O_ACCMODE) != O_WRONLY && h->ref.def->read)
		return h->ref.def->read(fs, &h->ref, &h->text, why);
	return MK_OK;
}

/* Snapshots honour the offset, so re-reads and seeks work. */
static mk_err snapshot_read(mkfs *fs, mk_handle *h, mk_read_req *rq,
			    mk_strbuf *why)
{
	(void)fs;
	(void)why;
	long long off = rq->off;
	rq->answered = true;
	if (off < 0 || (size_t)off >= h->text.len) {
		rq->reply(rq->arg, NULL, 0);
		return MK_OK;
	}
	size_t n = h->text.len - (size_t)off < rq->size ? h->text.len - (size_t)off
							  : rq->size;
	rq->reply(rq->arg, h->text.buf + off, n);
	return MK_OK;
}

static mk_err snapshot_write(mkfs *fs, mk_handle *h, const char *buf,
			     size_t size, mk_wait *wait, mk_strbuf *why)
{
	(void)wait;
	/* No call: a command that waits inside a coordinator is refused
	 * here; the serving layer runs those as jobs (ops.c). */
	return mk_node_control(fs, &h->ref, buf, size, NULL, NULL, why);
}

static bool snapshot_write_waits(const mk_handle *h, const char *buf,
				 size_t size)
{
	return h->ref.def->type == NODE_CONTROL &&
	       mk_node_write_waits(&h->ref, buf, size);
}

/* The operations of rows that name none (node_def.hops). */
static const mk_handle_ops snapshot_ops = {
	.open = snapshot_open,
	.read = snapshot_read,
	.write = snapshot_write,
	.write_waits = snapshot_write_waits,
};

/* ---- raw: a real segment or index file, read-only ---------------------- */

typedef struct {
	int fd;
} raw_state;

static mk_err raw_open(mkfs *fs, mk_handle *h, int flags, mk_strbuf *why)
{
	(void)flags;
	raw_state *rs = mk_xmalloc(sizeof(*rs));
	rs->fd = -1;
	h->kind = rs;
	mk_strbuf real = MK_STRBUF_INIT;
	mk_err err = mk_node_raw_path(fs, &h->ref, &real, NULL);
	if (!err) {
		rs->fd = open(real.buf, O_RDONLY | O_CLOEXEC);
		if (rs->fd < 0) {
			mk_strbuf_addf(why, "cannot open %s", real.buf);
			err = MK_KAFKA_STORAGE_ERROR;
		}
	}
	mk_strbuf_release(&real);
	return err;
}

static void raw_release(mk_handle *h)
{
	raw_state *rs = h->kind;
	if (rs && rs->fd >= 0)
		close(rs->fd);
	free(rs);
}

static mk_err raw_read(mkfs *fs, mk_handle *h, mk_read_req *rq, mk_strbuf *why)
{
	raw_state *rs = h->kind;
	mk_err err = MK_OK;
	size_t size = rq->size;
	long long off = rq->off;
	rq->answered = true;
	int64_t limit = mk_node_raw_limit(fs, &h->ref);
	if (limit >= 0)
		size = off >= limit ? 0
		       : (uint64_t)(limit - off) < size ? (size_t)(limit - off)
		       : size;
	char *buf = mk_xmalloc(size ? size : 1);
	ssize_t r = pread(rs->fd, buf, size, (off_t)off);
	if (r < 0) {
		mk_strbuf_addstr(why, "read failed");
		err = MK_KAFKA_STORAGE_ERROR;
	} else {
		rq->reply(rq->arg, buf, (size_t)r);
	}
	free(buf);
	return err;
}

const mk_handle_ops mk_raw_handle_ops = {
	.open = raw_open,
	.read = raw_read,
	.release = raw_release,
	.cached = true,
};

/* ---- every kind -------------------------------------------------------- */

mk_err mk_handle_open(mkfs *fs, node_ref *ref, const char *path, int flags,
		      mk_handle **out, mk_strbuf *why)
{
	int acc = flags & O_ACCMODE;
	const node_def *d = ref->def;
	bool wants_write = acc != O_RDONLY, wants_read = acc != O_WRONLY;
	if ((wants_write && !(d->mode & 0222)) ||
	    (wants_read && !(d->mode & 0444) && d->type != NODE_APPEND) ||
	    d->type == NODE_DIR) {
		mk_strbuf_addf(why, "%s cannot be opened %s", path,
			       acc == O_RDONLY ? "for reading" : acc == O_WRONLY ? "for writing" : "read-write");
		return MK_INVALID_REQUEST;
	}
	mk_handle *h = mk_xcalloc(1, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
	h->ref = *ref;
	memset(ref, 0, sizeof(*ref));    /* the handle owns the topic reference */
	h->path = mk_xstrdup(path);
	h->fs = fs;
	h->ops = d->hops ? d->hops : &snapshot_ops;
	mk_strbuf_init(&h->text, 0);
	mk_err err = h->ops->open(fs, h, flags, why);
	if (err) {
		mk_handle_close(h);
		return err;
	}
	*out = h;
	return MK_OK;
}

void mk_handle_close(mk_handle *h)
{
	if (!h)
		return;
	/*
	 * A read is answered from this handle's text under its lock, and
	 * the kernel may send the release (to another thread) before that
	 * reply's writev has returned: wait for the reply to let go.
	 * Nothing else can take the lock after the release.
	 */
	pthread_mutex_lock(&h->lock);
	pthread_mutex_unlock(&h->lock);
	if (h->ops->release)
		h->ops->release(h);
	mk_node_ref_release(&h->ref);
	mk_strbuf_release(&h->text);
	pthread_mutex_destroy(&h->lock);
	free(h->path);
	free(h);
}

long long mk_handle_stream_size(mk_handle *h)
{
	long long size;
	if (h->ops->size && h->ops->size(h, &size))    /* takes no handle lock */
		return size;
	if (pthread_mutex_trylock(&h->lock) != 0)
		return (long long)atomic_load(&h->streamed);
	if (h->ops->peek)
		h->ops->peek(h);
	size = (long long)atomic_load(&h->streamed) +
	       (long long)(h->text.len - h->text_pos);
	pthread_mutex_unlock(&h->lock);
	return size;
}

/* mk_handle_read's reply: a copy into the caller's buffer. */
typedef struct {
	char *buf;
	size_t *n;
} copy_reply;

static void copy_out(void *arg, const char *data, size_t n)
{
	copy_reply *c = arg;
	if (n)
		memcpy(c->buf, data, n);
	*c->n = n;
}

mk_err mk_handle_read(mkfs *fs, mk_handle *h, char *buf, size_t size,
		      long long off, mk_wait *wait, size_t *n, mk_strbuf *why)
{
	*n = 0;
	copy_reply c = { buf, n };
	return mk_handle_read_reply(fs, h, size, off, wait, copy_out, &c, why);
}

mk_err mk_handle_read_reply(mkfs *fs, mk_handle *h, size_t size,
			    long long off, mk_wait *wait,
			    mk_read_reply_fn reply, void *arg, mk_strbuf *why)
{
	mk_read_req rq = { size, off, wait, reply, arg, false };
	wait->kind = MK_WAIT_NONE;
	pthread_mutex_lock(&h->lock);
	mk_err err = h->ops->read ? h->ops->read(fs, h, &rq, why) : MK_OK;
	if (rq.answered || (err && h->text.len == h->text_pos))
		goto out;
	err = MK_OK;
	if (mk_wait_pending(wait))
		goto out;
	/* Streams: hand out what is buffered, ignoring the offset, straight
	 * from the handle's text (no copy here: the reply is written from
	 * it while the lock is held). */
	size_t n = h->text.len - h->text_pos < size ? h->text.len - h->text_pos : size;
	reply(arg, h->text.buf + h->text_pos, n);
	h->text_pos += n;
	if (h->ops->consumed)
		h->ops->consumed(fs, h, n);
	atomic_fetch_add(&h->streamed, n);
	if (h->text_pos == h->text.len) {
		mk_strbuf_reset(&h->text);
		h->text_pos = 0;
	} else if (h->text_pos > (1u << 20)) {
		mk_strbuf_consume(&h->text, h->text_pos);
		h->text_pos = 0;
	}
out:
	pthread_mutex_unlock(&h->lock);
	return err;
}

mk_err mk_handle_write(mkfs *fs, mk_handle *h, const char *buf, size_t size,
		       mk_wait *wait, mk_strbuf *why)
{
	mk_err err = MK_OK;
	wait->kind = MK_WAIT_NONE;
	pthread_mutex_lock(&h->lock);
	if (h->ops->write)
		err = h->ops->write(fs, h, buf, size, wait, why);
	pthread_mutex_unlock(&h->lock);
	return err;
}

bool mk_handle_write_waits(const mk_handle *h, const char *buf, size_t size)
{
	return h->ops->write_waits && h->ops->write_waits(h, buf, size);
}

mk_err mk_handle_flush(mkfs *fs, mk_handle *h, mk_strbuf *why)
{
	mk_err err = MK_OK;
	pthread_mutex_lock(&h->lock);
	if (h->ops->flush)
		err = h->ops->flush(fs, h, why);
	pthread_mutex_unlock(&h->lock);
	return err;
}

mk_err mk_handle_fsync(mkfs *fs, mk_handle *h, mk_wait *wait,
		       mk_strbuf *why)
{
	wait->kind = MK_WAIT_NONE;
	return h->ops->fsync ? h->ops->fsync(fs, h, wait, why) : MK_OK;
}

mk_err mk_handle_resume(mkfs *fs, mk_handle *h, mk_wait *wait, mk_strbuf *why)
{
	return h->ops->resume ? h->ops->resume(fs, h, wait, why) : MK_OK;
}

bool mk_handle_close_begin(mk_handle *h, mk_wait *wait)
{
	wait->kind = MK_WAIT_NONE;
	return h->ops->close_begin ? h->ops->close_begin(h, wait) : true;
}
