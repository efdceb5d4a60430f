/*
 * segswap.h — the crash-safe replacement of closed segments of one log
 * directory by cleaned ones (the cleaner's swap; used by log.c).
 *
 * Files it owns in a log directory DIR:
 *
 *     DIR/cleaned/NNN.{log,index,timeindex}  staged segments: written and
 *                                            fsynced by the cleaner before
 *                                            the swap; garbage otherwise
 *     DIR/swap-journal                       the swap's one recorded step
 *     DIR/cleaner-checkpoint                 the cleaner's state (an opaque
 *                                            text the cleaner gives), moved
 *                                            in with the swap
 *
 * The protocol. Before the commit, only DIR/cleaned/ holds anything new,
 * and a crash rolls back (recovery empties DIR/cleaned). The commit is
 * the atomic replacement of DIR/swap-journal (write, fsync, rename, fsync
 * the directory): it names the staged bases, the old bases they replace and
 * the new cleaner state. From that instant the swap is decided, and
 * applying it is idempotent: move each staged file still in DIR/cleaned/
 * over its name in DIR (rename, atomic per file), delete the old segments
 * that are not also new bases, fsync DIR, install the cleaner state
 * (atomically), then delete the journal and fsync DIR. Recovery at open
 * applies a journal it finds, else empties DIR/cleaned. So a crash at any
 * instant leaves the log exactly as before (no journal) or exactly as
 * after (journal, re-applied).
 *
 * Invariant the caller keeps: every staged segment's file was fsynced (with
 * its indexes) and DIR/cleaned/ fsynced before mk_segswap_commit().
 *
 * Failpoints (failpoint.h), in the order a swap passes them:
 *   cleaner.swap.staged          staged files durable, journal not written
 *   cleaner.swap.journal         journal committed, nothing moved yet
 *   cleaner.swap.moved-one       the first staged .log moved into place
 *   cleaner.swap.moved           every staged file moved
 *   cleaner.swap.deleted-one     the first old segment deleted
 *   cleaner.swap.deleted         every old segment deleted, DIR fsynced
 *   cleaner.swap.state           cleaner state installed, journal still there
 *   cleaner.swap.done            journal deleted
 * (The cleaner adds cleaner.swap.writing, half-way through staging.)
 *
 * Not thread-safe: the log's owner calls it under its lock.
 */
#ifndef MK_SEGSWAP_H
#define MK_SEGSWAP_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

#define MK_SEGSWAP_STAGING "cleaned"
#define MK_SEGSWAP_JOURNAL "swap-journal"
#define MK_SEGSWAP_STATE "cleaner-checkpoint"

/* DIR/cleaned (created, emptied of leftovers) into *out. */
mk_err mk_segswap_prepare(const char *dir, mk_strbuf *out, mk_strbuf *why);

/*
 * Commit and apply a swap: olds (ascending) are replaced by the staged
 * news (ascending, every one of them present in DIR/cleaned/), and state
 * becomes DIR/cleaner-checkpoint.
 */
mk_err mk_segswap_commit(const char *dir, const int64_t *olds, size_t nold,
			 const int64_t *news, size_t nnew, const char *state,
			 size_t state_len, mk_strbuf *why);

/* At log open, before the segments are listed: finish a committed swap or
 * roll back an uncommitted one. */
mk_err mk_segswap_recover(const char *dir, mk_strbuf *why);

#endif
