/*
 * cleaner.h — retention and compaction of one replica's log (docs/filesystem.md 5,
 * "Retention and compaction"), beside the log: it decides what goes and
 * builds cleaned segments; the log (log.h hooks) moves its start, deletes
 * segments and swaps cleaned ones in (segswap.h: crash-safe at every
 * instant).
 *
 * Retention (cleanup.policy delete). A closed segment goes when its
 * largest record timestamp is older than now - retention.ms, or while the
 * log's size minus that segment stays at least retention.bytes (Kafka's
 * rules), and only as a prefix of the closed segments: the first segment
 * that must stay ends the deletion, and the active segment always stays,
 * and so does every segment not wholly below the cleaning point (the HW).
 * The log start moves to the base of the first segment kept.
 *
 * Compaction (cleanup.policy compact). The cleanable range is the closed
 * segments wholly below the cleaning point (the caller's bound: the HW and
 * the LSO, never past the active segment). For every key the record with
 * the highest offset in that range is kept, every earlier record with the
 * same key goes; offsets are kept, so gaps appear; batches keep their
 * producer id, epoch, sequence and offset range (mk_frame_filter), control
 * batches stay whole, keyless records stay. A tombstone (null value) stays
 * until delete.retention.ms has passed since the segment holding it was
 * cleaned (the time each segment was first cleaned is in the state file).
 * The records of aborted transactions (cp->aborted, txnindex.h) go as
 * Kafka's cleaner discards them: they neither count as a key's latest
 * record nor stay; their control markers stay.
 *
 * Grouping. A pass rewrites the whole cleanable range, packing what it
 * keeps into cleaned segments of at most segment.bytes (and 2^32 offsets)
 * each: a cleaned segment ends when the next kept batch would not fit, and
 * the next one starts at that batch's base offset (the first keeps the
 * range's base; it is empty only when nothing at all is kept). So a range
 * holding L kept bytes becomes about L / segment.bytes + 1 segments,
 * whatever the number of segments or past passes, and no empty segment
 * stays but that one. A pass runs when something is dirty (a segment never
 * cleaned, or holding tombstones now due) or when two neighbouring
 * segments fit in one (small or empty segments left by rolls, retention or
 * an older cleaner: they are merged with no new data). The key map is
 * built from the dirty segments only (the cleaned ones hold each key at
 * most once), so a pass reads the dirty bytes twice and the cleaned ones,
 * about the live bytes, once. A segment is as old as its oldest cleaning
 * (its tombstones' clock).
 *
 * The cleaned segments are built into DIR/cleaned/ from private handles of
 * the closed segment files, so that the expensive part can run without
 * the owner's lock (appends go on: the active segment is never touched);
 * the swap itself runs under the lock and first checks that the segments
 * cleaned are still the log's (mk_cleaner_plan / _build / _commit).
 *
 * State file DIR/cleaner-checkpoint ("version 1", "cleaned_to N", then
 * "segment BASE CLEANED_AT_MS" lines), replaced by the swap (segswap.h):
 * cleaned_to is the cleaner's checkpoint, the end of the last cleaned
 * range; the dirty ratio is the share of the cleanable bytes at or past it.
 * Every segment below cleaned_to has a line; cleaned_to is the base of a
 * segment (the one after the range cleaned) unless retention deleted past
 * it.
 *
 * The state checked. Each run (mk_cleaner_plan) checks the saved offsets
 * against the log before using them. Refused as damage (KAFKA_STORAGE_
 * ERROR, "DIR/cleaner-checkpoint: cleaned_to N is past the log end M",
 * "... is not the base of a segment", "segment B names no segment of the
 * log"): cleaned_to past the log end, or inside the log but not a
 * segment's base; a segment line at or past the log's first segment that
 * names none of its segments. No crash leaves these: the state changes
 * only with a journaled swap (a crash leaves the state before or after,
 * each matching its segments), the cleaned range is fsynced before the
 * swap and lies below the active segment, so a crash that loses an
 * unflushed tail (mk_log_crash) never cuts below cleaned_to. Handled
 * exactly instead: lines below the log's first segment (retention,
 * DeleteRecords, a follower's reset to its leader's log start deleted the
 * segments; they are ignored and dropped at the next swap), and a
 * truncation of the log below cleaned_to (a follower's, or on promotion):
 * mk_cleaner_truncate lowers the state first, so a crash after it leaves a
 * state that is merely conservative (more dirty).
 *
 * Failpoint: cleaner.swap.writing (half-way through staging), plus those
 * of segswap.h.
 *
 * Threads: the log calls are made under the log owner's lock (log.h);
 * mk_cleaner_build touches only its plan and files of its own, so it runs
 * without that lock. Two builds for one log must not overlap (the caller
 * serialises cleaner runs).
 */
#ifndef MK_CLEANER_H
#define MK_CLEANER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "log.h"
#include "strbuf.h"
#include "txnindex.h"

typedef struct {
	int64_t now_ms;               /* cluster clock */
	int64_t retention_ms;         /* -1: no limit by time */
	int64_t retention_bytes;      /* -1: no limit by size */
	int64_t delete_retention_ms;  /* how long tombstones survive */
	int64_t segment_bytes;        /* the grouping bound */
	int64_t index_interval_bytes;
	int64_t cleaning_point;       /* nothing at or past it is compacted
				       * or deleted by retention */
	const mk_aborted_list *aborted;   /* the log's aborted transactions
					   * (copied by the plan); NULL: none */
} mk_clean_params;

/* What a log's cleaner state says (for /state). */
typedef struct {
	int64_t cleaned_to;           /* the cleaner's checkpoint */
	uint64_t cleanable_bytes;     /* closed segments below the point */
	uint64_t dirty_bytes;         /* of those, at or past cleaned_to */
} mk_cleaner_info;

/*
 * Retention: delete the prefix of closed segments the rules allow and move
 * the log start past it (also deletes segments left below the log start).
 * *deleted (may be NULL) gets the number of segments deleted.
 */
mk_err mk_cleaner_retain(mk_log *log, const mk_clean_params *cp,
			 size_t *deleted);

/* A planned compaction of one log; opaque. */
typedef struct mk_clean_plan mk_clean_plan;

typedef struct {
	uint64_t bytes_read;          /* closed-segment bytes cleaned */
	uint64_t bytes_written;       /* cleaned-segment bytes */
	int64_t records_removed;
	int64_t tombstones_removed;
	size_t segments_in, segments_out;
} mk_clean_stats;

/*
 * Under the owner's lock: check the saved state (see "The state
 * checked"), choose the cleanable segments (*plan NULL when no pass is
 * due) and prepare DIR/cleaned/.
 */
mk_err mk_cleaner_plan(mk_log *log, const mk_clean_params *cp,
		       mk_clean_plan **plan, mk_strbuf *why);
/* Without the lock: build and fsync the cleaned segments. */
mk_err mk_cleaner_build(mk_clean_plan *plan, mk_clean_stats *st,
			mk_strbuf *why);
/*
 * Under the lock again: when the planned segments are still the log's,
 * swap the cleaned ones in (*swapped true); else drop them (the log or the
 * state moved under the cleaner: retention, truncation; the next run
 * cleans).
 */
mk_err mk_cleaner_commit(mk_log *log, mk_clean_plan *plan, bool *swapped,
			 mk_strbuf *why);
void mk_cleaner_plan_free(mk_clean_plan *plan);

/* The three steps at once, under the caller's lock (tests, tools). */
mk_err mk_cleaner_compact(mk_log *log, const mk_clean_params *cp,
			  mk_clean_stats *st, mk_strbuf *why);

/*
 * Before mk_log_truncate_to(log, offset): when offset is below cleaned_to,
 * lower cleaned_to to the base of the segment holding offset and drop the
 * lines of that segment and later ones (written atomically; the segment
 * cut becomes dirty). Nothing happens otherwise.
 */
mk_err mk_cleaner_truncate(mk_log *log, int64_t offset, mk_strbuf *why);

/* The cleaner's checkpoint and dirty bytes of log below cleaning_point. */
void mk_cleaner_info_get(mk_log *log, int64_t cleaning_point,
			 mk_cleaner_info *info);

#endif
