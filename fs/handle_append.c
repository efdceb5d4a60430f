/*
 * handle_append.c — the append kind of open files (handles.h): the write
 * parameters, the carried line, and the descriptor's producer.
 */
#include "handles.h"
#include "xalloc.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topic_name.h"

/* An append descriptor's own state (h->kind), guarded by h->lock. */
typedef struct {
	mk_append_params ap;
	bool readable;           /* opened O_RDWR: receipts are kept */
	mk_strbuf pending;       /* unterminated last line */
	mk_strbuf first;         /* the carried line completed by a write */
	mk_parsed parsed;        /* the records of the write being appended */
	mk_producer *prod;
	bool line_refused;       /* the carried line was refused: every
				  * later write is too (handles.h) */
	mk_err held;             /* a parked write's error, told at its end */
	mk_strbuf held_why;
} append_state;

static mk_err open_append(mkfs *fs, mk_handle *h, bool readable, mk_strbuf *why)
{
	append_state *a = h->kind;
	a->readable = readable;
	if (mk_topic_name_internal(h->ref.topic->name)) {
		mk_strbuf_addf(why, "%s is an internal topic: only the group coordinator writes it",
			       h->ref.topic->name);
		return MK_TOPIC_AUTHORIZATION_FAILED;
	}
	mk_producer_opts o = {
		.acks = a->ap.acks == MK_ACKS_DEFAULT ? MK_PRODUCER_ACKS_DEFAULT
						       : a->ap.acks,
		.producer = a->ap.producer,
		.seq = a->ap.seq,
		.txn = a->ap.txn,
		.txns = fs->txns,
		.keep_receipts = readable,
	};
	return mk_producer_open(fs->producers, h->ref.topic,
				h->ref.partition < 0 ? MK_PARTITION_ANY : h->ref.partition,
				&o, &a->prod, why);
}

/* Receipts as text: "TOPIC PARTITION BASE COUNT", BASE "-" for acks=0. */
static void take_receipts(mk_handle *h)
{
	append_state *a = h->kind;
	mk_receipt r[64];
	size_t n;
	while ((n = mk_producer_take_receipts(a->prod, r, 64)) > 0)
		for (size_t i = 0; i < n; i++) {
			mk_strbuf_addf(&h->text, "%s %d ", h->ref.topic->name, r[i].partition);
			if (r[i].acks == 0)
				mk_strbuf_addstr(&h->text, "-");
			else
				mk_strbuf_addf(&h->text, "%lld", (long long)r[i].base);
			mk_strbuf_addf(&h->text, " %d\n", r[i].count);
		}
}

static mk_err line_too_long(int64_t max, mk_strbuf *why)
{
	mk_strbuf_addf(why, "line longer than message.max.bytes=%lld", (long long)max);
	return MK_MESSAGE_TOO_LARGE;
}

/* A one-record batch's size for a value of len bytes (and the write's
 * key=, if any): what a line of len bytes needs at least. */
static size_t batch_of_one(const mk_parse_opts *opts, size_t len)
{
	return mk_frame_size_of_one(opts->has_key ? opts->key : MK_BYTES_NULL,
				    (mk_bytes){ NULL, (int32_t)len }, NULL, 0);
}

/*
 * Step 1: the carried line completes with this write's first line (or, at
 * the last close, on its own) and is parsed into a->parsed; *used gets the
 * bytes of buf it took. Its record must fit a batch of its own.
 */
static mk_err parse_carried(mk_handle *h, const mk_parse_opts *opts,
			    const char *buf, size_t len, bool final,
			    size_t *used, mk_strbuf *why)
{
	append_state *a = h->kind;
	*used = 0;
	if (!a->pending.len)
		return MK_OK;
	const char *nl = memchr(buf, '\n', len);
	size_t head = nl ? (size_t)(nl - buf) + 1 : len;
	if (!nl && !final)
		return a->pending.len + len > opts->max_line
			? line_too_long((int64_t)opts->max_line, why) : MK_OK;
	mk_strbuf_reset(&a->first);
	mk_strbuf_add(&a->first, a->pending.buf, a->pending.len);
	mk_strbuf_add(&a->first, buf, head);
	size_t consumed;
	*used = head;
	mk_err err = mk_parse_records(opts, a->first.buf, a->first.len, true,
				      &a->parsed, &consumed, why);
	if (err || !a->parsed.n)
		return err;
	const mk_record_in *r = &a->parsed.recs[0];
	size_t need = mk_frame_size_of_one(r->key, r->value, r->headers,
					   r->nheaders);
	if (need > opts->max_line) {
		mk_strbuf_addf(why, "a line of %zu bytes needs a %zu-byte batch, over message.max.bytes=%zu",
			       a->first.len - (nl ? 1 : 0), need, opts->max_line);
		return MK_MESSAGE_TOO_LARGE;
	}
	return MK_OK;
}

/*
 * The unterminated line a write leaves, carried bytes of it so far: it
 * can never be sent once it is longer than max_line or, plain, once its
 * one-record batch is over max_line. And when the write is a full piece
 * (`full`: the kernel may be splitting a larger write(2), and the next
 * piece would complete the line), a line whose one-record batch comes
 * within a page of max_line is refused here, at this piece: a later
 * piece's refusal would only shorten the write's count (handles.h).
 */
static mk_err check_carried(const mk_parse_opts *opts, size_t carried,
			    bool full, mk_strbuf *why)
{
	if (carried > opts->max_line)
		return line_too_long((int64_t)opts->max_line, why);
	size_t need = batch_of_one(opts, carried);
	if (opts->format == MK_FORMAT_PLAIN && need > opts->max_line) {
		mk_strbuf_addf(why, "an unterminated line of %zu bytes needs a %zu-byte batch, over message.max.bytes=%zu",
			       carried, need, opts->max_line);
		return MK_MESSAGE_TOO_LARGE;
	}
	if (full && need + (size_t)sysconf(_SC_PAGESIZE) > opts->max_line) {
		mk_strbuf_addf(why, "a write the kernel splits leaves an unterminated line of %zu bytes (a %zu-byte batch) within a page of message.max.bytes=%zu at the end of a full piece: refused there, not by the piece that would complete it",
			       carried, need, opts->max_line);
		return MK_MESSAGE_TOO_LARGE;
	}
	return MK_OK;
}

/* Step 2: the complete lines of the rest; *tail gets the unterminated end. */
static mk_err parse_rest(mk_handle *h, const mk_parse_opts *opts,
			 const char *buf, size_t len, size_t used, bool final,
			 bool full, size_t *tail, mk_strbuf *why)
{
	append_state *a = h->kind;
	size_t consumed = 0;
	mk_err err = MK_OK;
	if (used < len)
		err = mk_parse_records(opts, buf + used, len - used, final,
				       &a->parsed, &consumed, why);
	*tail = len - used - consumed;
	size_t carried = (used ? 0 : a->pending.len) + *tail;
	if (!err && !final && carried)
		err = check_carried(opts, carried, full, why);
	return err;
}

/* Step 4: what is carried to the next write once this one was taken. */
static void keep_tail(mk_handle *h, const char *buf, size_t len, size_t used,
		      size_t tail, bool final)
{
	append_state *a = h->kind;
	if (used || !a->pending.len || final)
		mk_strbuf_reset(&a->pending);
	if (!final)
		mk_strbuf_add(&a->pending, buf + len - tail, tail);
}

/*
 * The carried line itself was refused as too large: its start was taken
 * by an earlier write, or an earlier piece of this write(2) whose count
 * the kernel tells the writer. It is dropped, never sent, and as the rest
 * of it cannot be told from new data, every later write is refused.
 */
static void drop_carried(mk_handle *h, mk_strbuf *why)
{
	append_state *a = h->kind;
	mk_strbuf_addf(why, "; its first %zu bytes, taken by an earlier write or an earlier piece of this one, are dropped, and this descriptor refuses every later write: open the file again",
		       a->pending.len);
	mk_strbuf_reset(&a->pending);
	a->line_refused = true;
}

/* A write after drop_carried. */
static mk_err refused_after_drop(const mk_parse_opts *opts, mk_strbuf *why)
{
	mk_strbuf_addf(why, "this descriptor refused a line over message.max.bytes=%zu part-way through, and what follows cannot be told from the rest of that line: nothing more is taken; open the file again",
		       opts->max_line);
	return MK_MESSAGE_TOO_LARGE;
}

/* A write of len bytes may be a full piece of a larger write(2): more
 * than the session's max_write less a page (the kernel's first piece is
 * max_write less the buffer's offset in its page). */
static bool full_piece(const mkfs *fs, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return fs->max_write > page && len > fs->max_write - page;
}

/*
 * Acknowledgements the producer still owes, looked at once without
 * waiting (see mk_producer_check): pending fills wait with `kind`; the
 * first error is returned once none are owed. Under h->lock.
 */
static mk_err check_acks(mk_handle *h, bool all, mk_wait_kind kind,
			 mk_wait *wait, mk_strbuf *why)
{
	append_state *a = h->kind;
	bool pending;
	mk_ack_watch aw;
	mk_err err = mk_producer_check(a->prod, all, &pending, &aw, why);
	if (pending) {
		*wait = (mk_wait){ .kind = kind, .p = aw.p, .coord = aw.coord,
				   .seen = aw.seen, .has_ticket = aw.p != NULL,
				   .ticket = aw.ticket, .deadline_ms = aw.deadline_ms };
		return MK_OK;
	}
	wait->kind = MK_WAIT_NONE;
	return err;
}

/* An error found before a parked request's acknowledgements came: told
 * when it ends, before theirs. Under h->lock. */
static void hold_error(mk_handle *h, mk_err err, const mk_strbuf *why)
{
	append_state *a = h->kind;
	if (!err || a->held)
		return;
	a->held = err;
	mk_strbuf_reset(&a->held_why);
	mk_strbuf_add(&a->held_why, why->buf, why->len);
}

static mk_err take_held(mk_handle *h, mk_err err, mk_strbuf *why)
{
	append_state *a = h->kind;
	if (!a->held)
		return err;
	mk_err held = a->held;
	a->held = MK_OK;
	mk_strbuf_reset(why);
	mk_strbuf_add(why, a->held_why.buf, a->held_why.len);
	return held;
}

/*
 * Parse buf (after any carried line) and hand its records to the
 * producer (step 3); a write the producer took moves the carried line on,
 * a refused one changes nothing.
 */
static mk_err append_bytes(mkfs *fs, mk_handle *h, const char *buf, size_t len,
			   bool final, mk_strbuf *why)
{
	append_state *a = h->kind;
	mk_topic_config tc;
	mk_cluster_topic_config(fs->cluster, h->ref.topic, &tc);
	mk_parse_opts opts = {
		.format = a->ap.format,
		.has_key = a->ap.has_key,
		.key = mk_bytes_of(a->ap.key, (size_t)a->ap.key_len),
		.max_line = (size_t)tc.message_max_bytes,
	};
	if (a->line_refused && !final)
		return refused_after_drop(&opts, why);
	mk_parsed_reset(&a->parsed);
	mk_parsed_reserve(&a->parsed, a->pending.len + len);
	size_t used, tail = 0, taken = 0;
	mk_err err = parse_carried(h, &opts, buf, len, final, &used, why);
	/* An error of parse_carried, or of the rest while it took nothing
	 * (no newline), is the carried line's. */
	bool carried_line = a->pending.len && (err || !used);
	if (!err)
		err = parse_rest(h, &opts, buf, len, used, final,
				 !final && full_piece(fs, len), &tail, why);
	if (err == MK_MESSAGE_TOO_LARGE && carried_line)
		drop_carried(h, why);
	if (err)
		return err;
	if (a->parsed.n) {
		/* Append now; the acknowledgements are looked at by the caller
		 * (the write's own, or fsync's and the last close's all). */
		err = mk_producer_append(a->prod, a->parsed.recs, a->parsed.n,
					 &taken, why);
		if (!taken)
			return err;
	}
	keep_tail(h, buf, len, used, tail, final);
	return err;
}

/*
 * The carried line as a record, then every lingering batch, sent; what is
 * owed is looked at once and, while some is, the wait is filled with
 * `kind` (the error so far held for the end). Under h->lock.
 */
static mk_err append_drain(mkfs *fs, mk_handle *h, mk_wait *wait,
			   mk_wait_kind kind, mk_strbuf *why)
{
	append_state *a = h->kind;
	mk_err err = MK_OK;
	if (a->pending.len)
		err = append_bytes(fs, h, "", 0, true, why);
	mk_err ferr = mk_producer_flush_begin(a->prod, why);
	if (!err)
		err = ferr;
	hold_error(h, err, why);
	mk_strbuf_reset(why);
	mk_err acked = check_acks(h, true, kind, wait, why);
	if (mk_wait_pending(wait))
		return MK_OK;
	return take_held(h, acked, why);
}

/* fsync's second step: make the partition's (or topic's) logs durable. */
static mk_err fsync_logs(mk_handle *h)
{
	if (h->ref.partition >= 0)
		return mk_partition_flush(mk_handle_partition(h));
	mk_err err = MK_OK;
	for (int i = 0; i < h->ref.topic->npartitions && !err; i++)
		err = mk_partition_flush(mk_topic_partition(h->ref.topic, i));
	return err;
}

/*
 * The last close of an append descriptor: what it still holds is sent;
 * errors can only go to /errors now. Nothing is waited for: after
 * close_begin's parked wait nothing is owed; what a close without it (a
 * stop: mk_fs_release_all) still finds owed is the producer's last look
 * (mk_producer_close), told after an error held before it.
 */
static void append_release(mk_handle *h)
{
	append_state *a = h->kind;
	mk_strbuf why = MK_STRBUF_INIT, last = MK_STRBUF_INIT;
	mk_wait wait;
	mk_err err = append_drain(h->fs, h, &wait, MK_WAIT_CLOSE_ACKS, &why);
	mk_err closed = mk_producer_close(a->prod, &last);
	a->prod = NULL;
	bool owed = mk_wait_pending(&wait);
	if (owed || (!err && closed)) {
		err = owed ? take_held(h, closed, &last) : closed;
		mk_strbuf_reset(&why);
		mk_strbuf_add(&why, last.buf, last.len);
	}
	mk_strbuf_release(&last);
	if (err)
		mk_errlog_add(&h->fs->cluster->errlog,
			      mk_clock_now(&h->fs->cluster->clock), h->path, err,
			      "at the last close: %s", why.len ? why.buf : mk_err_name(err));
	mk_strbuf_release(&why);
}

/* ---- the kind's operations --------------------------------------------- */

static mk_err append_open(mkfs *fs, mk_handle *h, int flags, mk_strbuf *why)
{
	int acc = flags & O_ACCMODE;
	append_state *a = mk_xcalloc(1, sizeof(*a));
	mk_strbuf_init(&a->pending, 0);
	mk_strbuf_init(&a->first, 0);
	mk_strbuf_init(&a->held_why, 0);
	h->kind = a;
	if (acc == O_RDONLY) {
		mk_strbuf_addstr(why, "append files are opened for writing (O_RDWR to read receipts)");
		return MK_INVALID_REQUEST;
	}
	mk_err err = mk_name_parse_append(h->ref.name, &a->ap, why);
	if (!err)
		err = open_append(fs, h, acc == O_RDWR, why);
	return err;
}

/* Reads of an O_RDWR descriptor: its receipts. */
static mk_err append_read(mkfs *fs, mk_handle *h, mk_read_req *rq,
			  mk_strbuf *why)
{
	(void)fs;
	(void)rq;
	(void)why;
	take_receipts(h);
	return MK_OK;
}

static mk_err append_write(mkfs *fs, mk_handle *h, const char *buf, size_t size,
			   mk_wait *wait, mk_strbuf *why)
{
	/* A write refused before anything was appended owes nothing: the
	 * look finds nothing pending and its error stands. */
	mk_err err = append_bytes(fs, h, buf, size, false, why);
	mk_strbuf first = MK_STRBUF_INIT;
	mk_strbuf_add(&first, why->buf, why->len);
	mk_strbuf_reset(why);
	mk_err acked = check_acks(h, false, MK_WAIT_ACKS, wait, why);
	if (mk_wait_pending(wait)) {
		hold_error(h, err, &first);
		err = MK_OK;
	} else if (err) {
		mk_strbuf_reset(why);
		mk_strbuf_add(why, first.buf, first.len);
	} else {
		err = acked;
	}
	mk_strbuf_release(&first);
	return err;
}

/*
 * A close of one copy of the descriptor sends nothing: the carried line
 * and the lingering batches wait for the last close, fsync or linger.ms.
 * It reports the error of a batch sent in the background, if any.
 */
static mk_err append_flush(mkfs *fs, mk_handle *h, mk_strbuf *why)
{
	(void)fs;
	append_state *a = h->kind;
	return a->prod ? mk_producer_poll(a->prod, why) : MK_OK;
}

static mk_err append_fsync(mkfs *fs, mk_handle *h, mk_wait *wait,
			   mk_strbuf *why)
{
	pthread_mutex_lock(&h->lock);
	mk_err err = append_drain(fs, h, wait, MK_WAIT_FSYNC_ACKS, why);
	pthread_mutex_unlock(&h->lock);
	if (err || mk_wait_pending(wait))
		return err;
	return fsync_logs(h);
}

static mk_err append_resume(mkfs *fs, mk_handle *h, mk_wait *wait,
			    mk_strbuf *why)
{
	(void)fs;
	mk_wait_kind kind = wait->kind;
	if (kind != MK_WAIT_ACKS && kind != MK_WAIT_FSYNC_ACKS &&
	    kind != MK_WAIT_CLOSE_ACKS)
		return MK_OK;
	pthread_mutex_lock(&h->lock);
	mk_err err = check_acks(h, kind != MK_WAIT_ACKS, kind, wait, why);
	if (!mk_wait_pending(wait))
		err = take_held(h, err, why);
	pthread_mutex_unlock(&h->lock);
	if (!err && !mk_wait_pending(wait) && kind == MK_WAIT_FSYNC_ACKS)
		err = fsync_logs(h);
	return err;
}

static bool append_close_begin(mk_handle *h, mk_wait *wait)
{
	append_state *a = h->kind;
	if (!a->prod)
		return true;
	mk_strbuf why = MK_STRBUF_INIT;
	pthread_mutex_lock(&h->lock);
	mk_err err = append_drain(h->fs, h, wait, MK_WAIT_CLOSE_ACKS, &why);
	/* Settled with an error: held for mk_handle_close's /errors line. */
	hold_error(h, err, &why);
	pthread_mutex_unlock(&h->lock);
	mk_strbuf_release(&why);
	return !mk_wait_pending(wait);
}

static void append_free(mk_handle *h)
{
	append_state *a = h->kind;
	if (!a)
		return;
	if (a->prod)
		append_release(h);
	mk_parsed_release(&a->parsed);
	mk_strbuf_release(&a->first);
	mk_strbuf_release(&a->held_why);
	mk_strbuf_release(&a->pending);
	free(a);
}

const mk_handle_ops mk_append_handle_ops = {
	.open = append_open,
	.read = append_read,
	.write = append_write,
	.flush = append_flush,
	.fsync = append_fsync,
	.resume = append_resume,
	.close_begin = append_close_begin,
	.release = append_free,
	.nonseekable = true,
};
