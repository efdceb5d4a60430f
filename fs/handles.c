/*
 * handles.c — open files: value snapshots, record streams, appends.
 */
#include "handles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"

#define FETCH_BYTES (1u << 20)

static mk_partition *handle_partition(mk_handle *h)
{
	return mk_topic_partition(h->ref.topic, h->ref.partition);
}

/* ---- open ------------------------------------------------------------- */

static mk_err open_append(mkfs *fs, mk_handle *h, bool readable, mk_strbuf *why);

/* Turn a POS into an offset against the partition's current state. */
static mk_err resolve_position(mk_partition *p, const mk_read_params *rp,
			       int64_t *next, mk_strbuf *why)
{
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	if (pi.leader < 0) {
		mk_strbuf_addstr(why, "the partition has no online leader");
		return MK_LEADER_NOT_AVAILABLE;
	}
	int64_t visible = rp->committed ? pi.lso : pi.hw;
	switch (rp->pos.kind) {
	case MK_POS_EARLIEST:
		*next = pi.log_start;
		return MK_OK;
	case MK_POS_LATEST:
		*next = visible;
		return MK_OK;
	case MK_POS_BACK:
		*next = visible - rp->pos.value;
		if (*next < pi.log_start)
			*next = pi.log_start;
		return MK_OK;
	case MK_POS_OFFSET:
		if (rp->pos.value < pi.log_start || rp->pos.value > pi.leo) {
			mk_strbuf_addf(why, "offset %lld outside [%lld, %lld]",
				       (long long)rp->pos.value, (long long)pi.log_start,
				       (long long)pi.leo);
			return MK_OFFSET_OUT_OF_RANGE;
		}
		*next = rp->pos.value;
		return MK_OK;
	case MK_POS_TIME:
		return mk_partition_offset_for_time(p, rp->pos.value, next);
	}
	return MK_INVALID_REQUEST;
}

mk_err mk_handle_open(mkfs *fs, node_ref *ref, const char *path, int flags,
		      mk_handle **out, mk_strbuf *why)
{
	int acc = flags & O_ACCMODE;
	const node_def *d = ref->def;
	bool wants_write = acc != O_RDONLY, wants_read = acc != O_WRONLY;
	mk_err err = MK_OK;
	if ((wants_write && !(d->mode & 0222)) ||
	    (wants_read && !(d->mode & 0444) && d->type != NODE_APPEND) ||
	    d->type == NODE_DIR) {
		mk_strbuf_addf(why, "%s cannot be opened %s", path,
			       acc == O_RDONLY ? "for reading" : acc == O_WRONLY ? "for writing" : "read-write");
		return MK_INVALID_REQUEST;
	}
	mk_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return MK_OUT_OF_MEMORY;
	pthread_mutex_init(&h->lock, NULL);
	h->ref = *ref;
	memset(ref, 0, sizeof(*ref));    /* the handle owns the topic reference */
	h->path = strdup(path);
	h->fd = -1;
	h->acks = MK_ACKS_DEFAULT;
	pthread_mutex_init(&h->receipts_lock, NULL);
	mk_strbuf_init(&h->receipts, 0);
	mk_strbuf_init(&h->text, 0);
	mk_strbuf_init(&h->fetched, 0);
	mk_strbuf_init(&h->pending, 0);

	switch (d->type) {
	case NODE_VALUE:
	case NODE_CONTROL:
		if (wants_read && d->read)
			err = d->read(fs, &h->ref, &h->text, why);
		break;
	case NODE_RECORDS:
		err = mk_name_parse_records(h->ref.name, &h->rp, why);
		if (!err)
			err = resolve_position(handle_partition(h), &h->rp, &h->next, why);
		break;
	case NODE_APPEND:
		if (acc == O_RDONLY) {
			mk_strbuf_addstr(why, "append files are opened for writing (O_RDWR to read receipts)");
			err = MK_INVALID_REQUEST;
			break;
		}
		err = mk_name_parse_append(h->ref.name, &h->ap, why);
		if (!err)
			err = open_append(fs, h, acc == O_RDWR, why);
		break;
	case NODE_RAW: {
		mk_strbuf real = MK_STRBUF_INIT;
		err = mk_node_raw_path(fs, &h->ref, &real);
		if (!err) {
			h->fd = open(real.buf, O_RDONLY | O_CLOEXEC);
			if (h->fd < 0) {
				mk_strbuf_addf(why, "cannot open %s", real.buf);
				err = MK_KAFKA_STORAGE_ERROR;
			}
		}
		mk_strbuf_release(&real);
		break;
	}
	case NODE_DIR:
		break;
	}
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
	if (h->fd >= 0)
		close(h->fd);
	mk_accumulator_free(h->acc, NULL);
	mk_node_ref_release(&h->ref);
	mk_strbuf_release(&h->receipts);
	pthread_mutex_destroy(&h->receipts_lock);
	mk_strbuf_release(&h->text);
	mk_strbuf_release(&h->fetched);
	mk_strbuf_release(&h->pending);
	pthread_mutex_destroy(&h->lock);
	free(h->path);
	free(h);
}

/* ---- records ---------------------------------------------------------- */

static bool max_reached(const mk_handle *h)
{
	return h->rp.max >= 0 && h->returned >= h->rp.max;
}

/* Format the records of fetched frames at or after h->next, below end. */
static void format_frames(mk_handle *h, int64_t end)
{
	size_t pos = 0;
	while (pos < h->fetched.len && !max_reached(h)) {
		/* The log validated the frame (CRC, records) as it read it. */
		mk_batch_view b;
		if (mk_frame_decode_header((const uint8_t *)h->fetched.buf + pos,
					   h->fetched.len - pos, 0, false, &b,
					   NULL))
			break;    /* cannot happen */
		pos += b.frame_len;
		if (b.meta.base_offset >= end)
			break;
		if (!mk_batch_is_control(&b)) {
			mk_record_iter it;
			mk_record_view rec;
			mk_record_iter_init(&it, &b);
			while (mk_record_next(&it, &rec)) {
				if (rec.offset < h->next)
					continue;
				if (rec.offset >= end || max_reached(h))
					break;
				mk_format_record(h->rp.format, &rec, &h->text);
				h->returned++;
				h->next = rec.offset + 1;
			}
		}
		if (max_reached(h))
			break;
		int64_t after = mk_batch_next_offset(&b);
		if (after > h->next)
			h->next = after < end ? after : end;
	}
}

static mk_err records_fill(mk_handle *h, size_t want, const mk_waiter *w,
			   mk_wait *wait, mk_strbuf *why)
{
	mk_partition *p = handle_partition(h);
	while (h->text.len - h->text_pos < want && !h->eof) {
		if (max_reached(h)) {
			h->eof = true;
			break;
		}
		mk_strbuf_reset(&h->fetched);
		/* Taken before the fetch: a change after it wakes the park. */
		uint64_t seq = wait ? mk_partition_seq(p) : 0;
		int64_t visible;
		size_t budget = want > FETCH_BYTES ? want : FETCH_BYTES;
		mk_err err = mk_partition_fetch(p, h->next, budget, &h->fetched,
						&visible, why);
		if (err)
			return err;
		if (h->fetched.len) {
			format_frames(h, visible);
			continue;
		}
		if (!h->rp.follow) {
			h->eof = true;
			break;
		}
		if (h->text.len > h->text_pos)
			break;    /* give the reader what it has first */
		if (wait) {
			*wait = (mk_wait){ .kind = MK_WAIT_DATA, .p = p, .seen = seq,
					   .deadline_ms = INT64_MAX, .seq = -1 };
			break;
		}
		if (w && w->interrupted && w->interrupted(w->arg)) {
			mk_strbuf_addstr(why, "interrupted while following");
			return MK_INTERRUPTED;
		}
		mk_partition_wait_change(p, &h->seen, 200);
	}
	return MK_OK;
}

mk_err mk_handle_read(mkfs *fs, mk_handle *h, char *buf, size_t size,
		      long long off, const mk_waiter *w, mk_wait *wait,
		      size_t *n, mk_strbuf *why)
{
	(void)fs;
	if (wait)
		wait->kind = MK_WAIT_NONE;
	mk_err err = MK_OK;
	*n = 0;
	pthread_mutex_lock(&h->lock);
	switch (h->ref.def->type) {
	case NODE_RAW: {
		ssize_t r = pread(h->fd, buf, size, (off_t)off);
		if (r < 0) {
			mk_strbuf_addstr(why, "read failed");
			err = MK_KAFKA_STORAGE_ERROR;
		} else {
			*n = (size_t)r;
		}
		goto out;
	}
	case NODE_VALUE:
	case NODE_CONTROL:
		/* Snapshots honour the offset, so re-reads and seeks work. */
		if (off < 0 || (size_t)off >= h->text.len)
			goto out;
		*n = h->text.len - (size_t)off < size ? h->text.len - (size_t)off : size;
		memcpy(buf, h->text.buf + off, *n);
		goto out;
	case NODE_RECORDS:
		err = records_fill(h, size, w, wait, why);
		if (err && h->text.len == h->text_pos)
			goto out;
		err = MK_OK;
		break;
	case NODE_APPEND:
		pthread_mutex_lock(&h->receipts_lock);
		mk_strbuf_add(&h->text, h->receipts.buf, h->receipts.len);
		mk_strbuf_reset(&h->receipts);
		pthread_mutex_unlock(&h->receipts_lock);
		break;
	case NODE_DIR:
		goto out;
	}
	/* Streams: hand out what is buffered, ignoring the offset. */
	*n = h->text.len - h->text_pos < size ? h->text.len - h->text_pos : size;
	memcpy(buf, h->text.buf + h->text_pos, *n);
	h->text_pos += *n;
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

/* ---- append ----------------------------------------------------------- */

static const mk_batch_meta plain_meta = {
	.flags = 0, .base_offset = 0, .leader_epoch = 0, .producer_id = -1,
	.producer_epoch = -1, .base_sequence = -1, .txn_id = { NULL, -1 },
};

static void add_receipt(void *arg, const char *topic, int partition,
			int64_t base, int32_t count, int acks)
{
	mk_handle *h = arg;
	if (!h->readable)
		return;
	pthread_mutex_lock(&h->receipts_lock);
	mk_strbuf_addf(&h->receipts, "%s %d ", topic, partition);
	if (acks == 0)
		mk_strbuf_addstr(&h->receipts, "-");
	else
		mk_strbuf_addf(&h->receipts, "%lld", (long long)base);
	mk_strbuf_addf(&h->receipts, " %d\n", count);
	pthread_mutex_unlock(&h->receipts_lock);
}

static mk_err open_append(mkfs *fs, mk_handle *h, bool readable, mk_strbuf *why)
{
	mk_cluster *c = fs->cluster;
	h->readable = readable;
	h->acks = h->ap.acks == MK_ACKS_DEFAULT ? (int)c->cfg.acks : h->ap.acks;
	if (h->ap.txn[0]) {
		mk_strbuf_addf(why, "no transaction %s", h->ap.txn);
		return MK_TRANSACTIONAL_ID_NOT_FOUND;
	}
	if (h->ap.producer[0]) {
		if (mk_cluster_producer_get(c, h->ap.producer, &h->pid, &h->epoch)) {
			mk_strbuf_addf(why, "no producer %s (mkdir /producers/%s first)",
				       h->ap.producer, h->ap.producer);
			return MK_UNKNOWN_PRODUCER_ID;
		}
		if (h->ap.acks != MK_ACKS_DEFAULT && h->ap.acks != MK_ACKS_ALL) {
			mk_strbuf_addstr(why, "an idempotent producer writes with acks=all");
			return MK_INVALID_REQUEST;
		}
		if (h->ap.seq >= 0 && h->ref.partition < 0) {
			mk_strbuf_addstr(why, "seq= is for partition append files (a topic append spreads over partitions)");
			return MK_INVALID_REQUEST;
		}
		h->idempotent = true;
		h->acks = MK_ACKS_ALL;
		h->next_seq = (int32_t)h->ap.seq;
	}
	if (h->ref.partition < 0) {
		mk_accumulator_opts o = {
			.acks = h->acks,
			.batch_size = c->cfg.batch_size,
			.linger_ms = c->cfg.linger_ms,
			.idempotent = h->idempotent,
			.pid = h->pid,
			.epoch = h->epoch,
			.receipt = add_receipt,
			.receipt_arg = h,
		};
		h->acc = mk_accumulator_new(c, h->ref.topic, &o);
	}
	return MK_OK;
}

/* Where parsed records go: one batch (partition append) or a staging
 * batch that is handed to the accumulator once the whole write parsed. */
typedef struct {
	mk_batch_builder b;
	int64_t now;
	int64_t max_bytes;        /* bound on the staged batch */
	int64_t message_max;      /* message.max.bytes */
} parse_ctx;

static mk_err collect_record(void *arg, mk_bytes key, mk_bytes value,
			     const mk_header *headers, size_t nheaders)
{
	parse_ctx *pc = arg;
	mk_builder_add(&pc->b, pc->now, key, value, headers, nheaders);
	if ((int64_t)mk_builder_size(&pc->b) > pc->max_bytes)
		return MK_MESSAGE_TOO_LARGE;
	return MK_OK;
}

/* One look at a parked acks=all wait (under h->lock): complete it, or
 * note the change count it was taken at. */
static mk_err ack_resume(mk_handle *h, mk_wait *wait, mk_strbuf *why)
{
	bool pending;
	uint64_t seen = mk_partition_seq(wait->p);
	mk_err err = mk_partition_ack_check(wait->p, &wait->ticket, &pending, why);
	if (!err && pending) {
		wait->seen = seen;
		return MK_OK;
	}
	/* Not acknowledged: the next write on this descriptor retries the
	 * batch's sequences (and is deduplicated), as without parking. */
	if (err && wait->seq >= 0 && h->next_seq == wait->seq + wait->count)
		h->next_seq = wait->seq;
	wait->kind = MK_WAIT_NONE;
	return err;
}

/* Partition append: the whole write is one batch. */
static mk_err produce_batch(mk_handle *h, parse_ctx *pc, const mk_waiter *w,
			    mk_wait *wait, mk_strbuf *why)
{
	mk_builder_finish(&pc->b);
	mk_produce_args a = {
		.acks = h->acks,
		.idempotent = h->idempotent,
		.pid = h->pid,
		.epoch = h->epoch,
		.seq = h->next_seq,
		.count = pc->b.count,
		.defer_ack = wait && h->acks == MK_ACKS_ALL,
	};
	mk_produce_result res;
	mk_err err = mk_partition_produce_ex(handle_partition(h),
					     (uint8_t *)pc->b.frame.buf, pc->b.frame.len,
					     &a, w, &res, why);
	if (res.base >= 0 && (!err || err == MK_NOT_ENOUGH_REPLICAS_AFTER_APPEND ||
			      err == MK_REQUEST_TIMED_OUT || err == MK_FENCED_LEADER_EPOCH))
		add_receipt(h, h->ref.topic->name, h->ref.partition, res.base,
			    res.count, h->acks);
	if (!err && h->next_seq >= 0)
		h->next_seq += res.count;
	if (!err && res.pending) {
		*wait = (mk_wait){ .kind = MK_WAIT_ACKS, .p = handle_partition(h),
				   .deadline_ms = res.ticket.deadline_ms,
				   .ticket = res.ticket,
				   .seq = a.seq >= 0 ? a.seq : -1, .count = res.count };
		err = ack_resume(h, wait, why);
	}
	return err;
}

/* Collect the headers of a staged record. */
static size_t record_headers(const mk_record_view *rec, mk_header *hdrs)
{
	size_t nh = 0, pos = 0;
	while (nh < MK_FORMAT_MAX_HEADERS && mk_header_next(rec, &pos, &hdrs[nh]))
		nh++;
	return nh;
}

/*
 * Topic append: replay the staged records through the accumulator, after
 * checking that each one could be sent at all (a record whose own batch
 * exceeds message.max.bytes refuses the whole write, before any record of
 * it reaches a partition).
 */
static mk_err accumulate(mk_handle *h, parse_ctx *pc, const mk_waiter *w,
			 mk_strbuf *why)
{
	mk_builder_finish(&pc->b);
	mk_batch_view b;
	/* Built just now by the builder: trusted, no CRC pass needed. */
	mk_err err = mk_frame_decode_header((const uint8_t *)pc->b.frame.buf,
					    pc->b.frame.len, 0, false, &b, NULL);
	if (err)
		return err;
	mk_record_iter it;
	mk_record_view rec;
	mk_header hdrs[MK_FORMAT_MAX_HEADERS];
	mk_record_iter_init(&it, &b);
	for (int line = 1; mk_record_next(&it, &rec); line++) {
		size_t nh = record_headers(&rec, hdrs);
		size_t need = mk_frame_size_of_one(rec.key, rec.value, hdrs, nh);
		if ((int64_t)need > pc->message_max) {
			mk_strbuf_addf(why, "record %d needs a %zu-byte batch, over message.max.bytes=%lld",
				       line, need, (long long)pc->message_max);
			return MK_MESSAGE_TOO_LARGE;
		}
	}
	mk_record_iter_init(&it, &b);
	while (!err && mk_record_next(&it, &rec)) {
		size_t nh = record_headers(&rec, hdrs);
		err = mk_accumulator_add(h->acc, rec.key, rec.value, hdrs, nh,
					 rec.timestamp, w, why);
	}
	mk_err end = mk_accumulator_end_write(h->acc, w, why);
	return err ? err : end;
}

/* An idempotent descriptor is fenced once its producer was re-initialised. */
static mk_err check_fenced(mkfs *fs, mk_handle *h, mk_strbuf *why)
{
	int64_t id;
	int16_t epoch;
	if (mk_cluster_producer_get(fs->cluster, h->ap.producer, &id, &epoch)) {
		mk_strbuf_addf(why, "producer %s no longer exists", h->ap.producer);
		return MK_UNKNOWN_PRODUCER_ID;
	}
	if (id != h->pid || epoch != h->epoch) {
		mk_strbuf_addf(why, "producer %s was initialised again (id %lld epoch %d, this descriptor has id %lld epoch %d): fenced",
			       h->ap.producer, (long long)id, epoch,
			       (long long)h->pid, h->epoch);
		return MK_PRODUCER_FENCED;
	}
	return MK_OK;
}

/* Parse buf (after any carried line) and produce it; keep the new tail. */
static mk_err append_bytes(mkfs *fs, mk_handle *h, const char *buf, size_t len,
			   bool final, const mk_waiter *w, mk_wait *wait,
			   mk_strbuf *why)
{
	mk_topic_config tc;
	mk_cluster_topic_config(fs->cluster, h->ref.topic, &tc);
	if (h->idempotent) {
		mk_err fenced = check_fenced(fs, h, why);
		if (fenced)
			return fenced;
	}
	parse_ctx pc = {
		.now = mk_clock_now(&fs->cluster->clock),
		.max_bytes = h->acc ? INT64_MAX : tc.message_max_bytes,
		.message_max = tc.message_max_bytes,
	};
	mk_builder_init(&pc.b, &plain_meta);
	mk_parse_opts opts = {
		.format = h->ap.format,
		.has_key = h->ap.has_key,
		.key = mk_bytes_of(h->ap.key, (size_t)h->ap.key_len),
		.max_line = (size_t)tc.message_max_bytes,
	};
	mk_err err = MK_OK;
	size_t used = 0, consumed = 0;
	/* The carried line completes with this write's first line. */
	if (h->pending.len) {
		const char *nl = memchr(buf, '\n', len);
		size_t head = nl ? (size_t)(nl - buf) + 1 : len;
		mk_strbuf first = MK_STRBUF_INIT;
		mk_strbuf_add(&first, h->pending.buf, h->pending.len);
		mk_strbuf_add(&first, buf, head);
		if (nl || final) {
			err = mk_parse_lines(&opts, first.buf, first.len, true,
					     collect_record, &pc, &consumed, why);
			used = head;
			consumed = 0;
		} else if ((int64_t)first.len > tc.message_max_bytes) {
			mk_strbuf_addf(why, "line longer than message.max.bytes=%lld",
				       (long long)tc.message_max_bytes);
			err = MK_MESSAGE_TOO_LARGE;
		}
		mk_strbuf_release(&first);
	}
	if (!err && used < len)
		err = mk_parse_lines(&opts, buf + used, len - used, final,
				     collect_record, &pc, &consumed, why);
	size_t tail = len - used - consumed;
	if (!err && !final && (int64_t)((used ? 0 : h->pending.len) + tail) > tc.message_max_bytes) {
		mk_strbuf_addf(why, "line longer than message.max.bytes=%lld",
			       (long long)tc.message_max_bytes);
		err = MK_MESSAGE_TOO_LARGE;
	}
	/* A carried plain line already too long for any batch is refused in
	 * the write that carries it (the kernel splits a long write: a later
	 * piece's error would only shorten the first one's count). */
	size_t carried = (used ? 0 : h->pending.len) + tail;
	if (!err && !final && carried && h->ap.format == MK_FORMAT_PLAIN) {
		mk_bytes key = h->ap.has_key
			? mk_bytes_of(h->ap.key, (size_t)h->ap.key_len)
			: (mk_bytes){ NULL, -1 };
		size_t need = mk_frame_size_of_one(key, mk_bytes_of(buf, carried), NULL, 0);
		if ((int64_t)need > tc.message_max_bytes) {
			mk_strbuf_addf(why, "an unterminated line of %zu bytes needs a %zu-byte batch, over message.max.bytes=%lld",
				       carried, need, (long long)tc.message_max_bytes);
			err = MK_MESSAGE_TOO_LARGE;
		}
	}
	if (err == MK_MESSAGE_TOO_LARGE && !why->len)
		mk_strbuf_addf(why, "batch larger than message.max.bytes=%lld",
			       (long long)tc.message_max_bytes);
	mk_err parsed_err = err;
	if (!err && pc.b.count)
		err = h->acc ? accumulate(h, &pc, w, why)
			     : produce_batch(h, &pc, w, wait, why);
	/*
	 * Unless the write was refused before anything was appended, the
	 * carried line is now this write's tail. A topic append took its
	 * records once they parsed (later errors are about sending them).
	 */
	bool refused = parsed_err ||
		(!h->acc && (err == MK_MESSAGE_TOO_LARGE || err == MK_NOT_ENOUGH_REPLICAS ||
			     err == MK_LEADER_NOT_AVAILABLE ||
			     err == MK_UNKNOWN_TOPIC_OR_PARTITION ||
			     err == MK_OUT_OF_ORDER_SEQUENCE_NUMBER ||
			     err == MK_PRODUCER_FENCED || err == MK_KAFKA_STORAGE_ERROR)) ||
		(h->acc && err == MK_MESSAGE_TOO_LARGE);
	if (!refused) {
		if (used || !h->pending.len || final)
			mk_strbuf_reset(&h->pending);
		if (!final)
			mk_strbuf_add(&h->pending, buf + len - tail, tail);
	}
	mk_builder_release(&pc.b);
	return err;
}

mk_err mk_handle_write(mkfs *fs, mk_handle *h, const char *buf, size_t size,
		       const mk_waiter *w, mk_wait *wait, mk_strbuf *why)
{
	mk_err err;
	if (wait)
		wait->kind = MK_WAIT_NONE;
	pthread_mutex_lock(&h->lock);
	if (h->ref.def->type == NODE_APPEND)
		err = append_bytes(fs, h, buf, size, false, w, wait, why);
	else
		err = mk_node_control(fs, &h->ref, buf, size, why);
	pthread_mutex_unlock(&h->lock);
	return err;
}

mk_err mk_handle_flush(mkfs *fs, mk_handle *h, const mk_waiter *w,
		       mk_wait *wait, mk_strbuf *why)
{
	mk_err err = MK_OK;
	if (wait)
		wait->kind = MK_WAIT_NONE;
	pthread_mutex_lock(&h->lock);
	if (h->ref.def->type == NODE_APPEND && h->pending.len)
		err = append_bytes(fs, h, "", 0, true, w, wait, why);
	if (h->acc) {
		mk_err ferr = mk_accumulator_flush(h->acc, w, why);
		if (!err)
			err = ferr;
	}
	pthread_mutex_unlock(&h->lock);
	return err;
}

/* fsync's second step: make the partition's (or topic's) logs durable. */
static mk_err fsync_logs(mk_handle *h)
{
	if (h->ref.def->type != NODE_APPEND)
		return MK_OK;
	if (h->ref.partition >= 0)
		return mk_partition_flush(handle_partition(h));
	mk_err err = MK_OK;
	for (int i = 0; i < h->ref.topic->npartitions && !err; i++)
		err = mk_partition_flush(mk_topic_partition(h->ref.topic, i));
	return err;
}

mk_err mk_handle_fsync(mkfs *fs, mk_handle *h, const mk_waiter *w,
		       mk_wait *wait, mk_strbuf *why)
{
	mk_err err = mk_handle_flush(fs, h, w, wait, why);
	if (err)
		return err;
	if (mk_wait_pending(wait)) {
		wait->kind = MK_WAIT_FSYNC_ACKS;
		return MK_OK;
	}
	return fsync_logs(h);
}

mk_err mk_handle_resume(mkfs *fs, mk_handle *h, mk_wait *wait, mk_strbuf *why)
{
	(void)fs;
	if (wait->kind != MK_WAIT_ACKS && wait->kind != MK_WAIT_FSYNC_ACKS)
		return MK_OK;
	bool then_fsync = wait->kind == MK_WAIT_FSYNC_ACKS;
	pthread_mutex_lock(&h->lock);
	mk_err err = ack_resume(h, wait, why);
	pthread_mutex_unlock(&h->lock);
	if (mk_wait_pending(wait))
		wait->kind = then_fsync ? MK_WAIT_FSYNC_ACKS : MK_WAIT_ACKS;
	else if (!err && then_fsync)
		err = fsync_logs(h);
	return err;
}
