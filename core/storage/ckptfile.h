/*
 * ckptfile.h — Kafka's checkpoint text files: the layout of Kafka's
 * CheckpointFile (server-common) with the two entry formats this project
 * writes, OffsetCheckpointFile's and LeaderEpochCheckpointFile's
 * (storage/.../internals/checkpoint). Text only, no I/O: the owners of the
 * files read and replace them (logdir.h: a broker's three offset
 * checkpoints; log_checkpoint.h: a log's leader-epoch-checkpoint).
 *
 * The text, every line ending in a newline, as Kafka writes it:
 *
 *     0                       the version (0 for both formats)
 *     N                       the number of entry lines that follow
 *     TOPIC PARTITION OFFSET  N times (an offset checkpoint), or
 *     EPOCH START_OFFSET      N times (a leader-epoch checkpoint)
 *
 * Format writes one space between fields and the entries in the order
 * given (offsets: sorted by topic, then partition; epochs: ascending).
 *
 * The parse takes exactly that and refuses anything else as damage
 * (KAFKA_STORAGE_ERROR, "PATH: line N: REASON" in why, nothing to free):
 * it is stricter than Kafka's reader, which splits a line on runs of white
 * space and reads an empty file (what its constructor creates) as having
 * no entry. Here an empty file, a NUL byte, a missing count, a line
 * without its
 * newline, more or fewer entries than the count, a field that is not a
 * strict integer of its range (parse.h: offsets and start offsets in
 * [0, 2^63-1], partitions and epochs in [0, 2^31-1]), a topic that is no
 * valid topic name (topic_name.h), a (topic, partition) given twice, and
 * epochs or start offsets that do not strictly increase are all refused:
 * these files are only ever replaced whole (fileio.h), so any of these is
 * damage or a hand edit, never something a crash leaves.
 */
#ifndef MK_CKPTFILE_H
#define MK_CKPTFILE_H

#include <stddef.h>
#include <stdint.h>

#include "epoch_cache.h"
#include "error.h"
#include "strbuf.h"

/* One OffsetCheckpointFile entry. */
typedef struct {
	char *topic;
	int32_t partition;
	int64_t offset;
} mk_ckpt_offset;

/* The text of an offset checkpoint holding v[0..n) (topic owned by the
 * caller), appended to out. */
void mk_ckpt_format_offsets(mk_strbuf *out, const mk_ckpt_offset *v,
			    size_t n);
/*
 * Parse text (the whole file, len bytes and a NUL after them; cut in
 * place) into a new array, sorted by topic then partition (*out, *n; free
 * with mk_ckpt_offsets_free).
 */
mk_err mk_ckpt_parse_offsets(const char *path, char *text, size_t len,
			     mk_ckpt_offset **out, size_t *n, mk_strbuf *why);
void mk_ckpt_offsets_free(mk_ckpt_offset *v, size_t n);

/* The text of a leader-epoch checkpoint holding v[0..n), appended. */
void mk_ckpt_format_epochs(mk_strbuf *out, const mk_epoch_entry *v, size_t n);
/* Parse text (len bytes, as above) into a new array (*out: free it; NULL
 * when n is 0), epochs and start offsets strictly increasing. */
mk_err mk_ckpt_parse_epochs(const char *path, char *text, size_t len,
			    mk_epoch_entry **out, size_t *n, mk_strbuf *why);

#endif
