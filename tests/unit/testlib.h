/*
 * testlib.h — fixtures shared by the unit tests (test_log.c,
 * test_replica.c, test_producer.c, ...; the fs tests through
 * testlib_fs.h): temporary directories, descriptor counting, batch
 * frames, a cluster on a manual clock, and the driver of the events a
 * producer's acknowledgements wait for. Every helper asserts (cmocka)
 * what it needs, so a test reads as its scenario.
 *
 * Linked into every unit test, core and fs (tests/meson.build). No state of its
 * own: each helper works on what it is given.
 */
#ifndef MK_TESTLIB_H
#define MK_TESTLIB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "codec.h"
#include "config.h"
#include "coordinator.h"
#include "log.h"
#include "producer.h"
#include "strbuf.h"

/* ---- temporary directories ------------------------------------------- */

/* Make /tmp/mk-test-TAG-XXXXXX into root (size n); asserts. */
void tl_tmpdir(char *root, size_t n, const char *tag);
/* Remove a tree made by tl_tmpdir (and everything in it). */
void tl_rmtree(const char *root);
/* Open file descriptors of this process (leak checks). */
int tl_count_fds(void);

/* A SIGXFSZ handler that counts (tl_xfsz). Under RLIMIT_FSIZE a write
 * that starts at the limit fails with EFBIG and raises SIGXFSZ; one that
 * starts below and would pass the limit is short and raises none: the
 * count says how many writes started exactly at the limit. */
extern volatile sig_atomic_t tl_xfsz;
void tl_count_xfsz(int sig);

/*
 * A cmocka fixture for one log's directory: setup makes root by
 * tl_tmpdir(TAG) with dir = ROOT/t-0 (not created) and counts the open
 * descriptors; teardown removes root and fails when descriptors leaked.
 */
typedef struct {
	char root[64];
	char dir[128];
	int nfds;
} tl_logdir;
int tl_logdir_setup(void **state, const char *tag);
int tl_logdir_teardown(void **state);
/* Start the log over: dir removed, and with it its entries of root's
 * checkpoint files (logdir.h; for a log opened alone, root is its broker
 * directory). */
void tl_logdir_wipe(const tl_logdir *f);
/* Only the Kafka files: root's three and dir's leader-epoch-checkpoint
 * (what a log written before them lacks). */
void tl_logdir_wipe_kafka_files(const tl_logdir *f);

/* ---- a broker directory's checkpoint files (logdir.h) -------------------- */

/*
 * The offset that dir's file (mk_logdir_names[file]: its
 * recovery-point-offset-checkpoint, ...) gives topic's partition, parsed
 * as Kafka's OffsetCheckpointFile (asserted well-formed); -1 when the file
 * or the entry is missing.
 */
int64_t tl_ckpt_offset(const char *dir, int file, const char *topic,
		       int partition);

/* ---- frames ------------------------------------------------------------ */

/*
 * Append to out one frame of n records with null keys and the given values
 * (NUL-terminated), timestamps ts[i] or, when ts is NULL, 1000 + base + i;
 * base offset and leader epoch as given, no producer, not transactional.
 */
void tl_frame(mk_strbuf *out, int64_t base, int32_t epoch,
	      const char *const *vals, int n, const int64_t *ts);

/* ---- indexes ----------------------------------------------------------- */

/*
 * Check one segment's index rows (its offset index's, then its time
 * index's: segment.h, mk_segment_index_entry) against the log's batches
 * bi[0..n) (from mk_log_batches): every offset row is the base offset and
 * position of a batch of that segment; every time row names a batch of it
 * and carries the largest timestamp of the segment's batches up to and
 * including it, which that batch first reached (but for the first row,
 * the first batch's, whatever its timestamp). Returns the rows (free
 * them) and their count.
 */
mk_index_row *tl_check_index_rows(mk_log *log, int64_t segment,
				  const mk_batch_info *bi, size_t n,
				  size_t *nrows);

/* ---- a cluster ---------------------------------------------------------- */

/* Defaults, brokers 1..nbrokers, the manual clock. */
void tl_config(mk_config *cfg, int nbrokers);
/* Open (or reopen) the cluster of data dir; asserts success. */
mk_cluster *tl_cluster_open(const char *dir, const mk_config *cfg);
/* Create topic name with partitions and rf, and up to two KEY=VALUE
 * overrides (NULL for none); asserts success. */
void tl_create_topic(mk_cluster *c, const char *name, int partitions, int rf,
		     const char *o1, const char *o2);

/* ---- events: nothing in core waits, so a test drives what would -------- */

/*
 * Make the event a pending call waits for come, or let it come: a change
 * of p after `seen` (with ack, one that may settle that ticket:
 * mk_watch.ack). On a cluster whose fetchers did not start, one explicit
 * fetch round (mk_cluster_replicate): the event comes from it or not at
 * all. With fetchers, wait for it: a watcher armed on p and a condition
 * variable, no timed wait.
 */
void tl_await_change(mk_cluster *c, mk_partition *p, uint64_t seen,
		     const mk_ack_ticket *ack);
/*
 * Settle what producer p owes (mk_producer_check; all: the sender's
 * batches too): while a check says some is owed, tl_await_change on the
 * watch it names, then look again; asserts that it settles within
 * TL_ROUNDS events. Returns the first error settled (MK_OK: all
 * acknowledged).
 */
#define TL_ROUNDS 1000
mk_err tl_producer_settle(mk_cluster *c, mk_producer *p, bool all,
			  mk_strbuf *why);
/* Append (mk_producer_append), then settle what that append owes: the
 * first error of the two. */
mk_err tl_producer_send(mk_cluster *c, mk_producer *p, const mk_record_in *recs,
			size_t n, size_t *taken, mk_strbuf *why);
/* Send every open batch (mk_producer_flush_begin), then settle all that
 * is owed: the first error of the two. */
mk_err tl_producer_flush(mk_cluster *c, mk_producer *p, mk_strbuf *why);

/* A coordinator's call in a test (coordinator.h): pass &tl_call, and wrap
 * the call in tl_done, which gives err when it was refused at once, else
 * the call's result, sleeping on the coordinator's events meanwhile. */
extern mk_coord_call tl_call;
mk_err tl_done(mk_err err, mk_strbuf *why);

/* Sleep on the coordinator's events until its first after seen. */
void tl_coord_sleep(mk_coord *rt, uint64_t seen);
/* As tl_await_change, for a coordinator's event (a held transactional
 * batch's registration): one fetch round without fetchers, else sleep. */
void tl_await_coord(mk_cluster *c, mk_coord *rt, uint64_t seen);
/* Wait for the acks=all ticket of res (when pending) on partition p,
 * sleeping on p's events (mk_partition_watch): a test's stand-in for a
 * parked request. The events come from elsewhere (the fetchers in auto
 * mode, another thread's fetch rounds, a clock move). */
mk_err tl_ack_wait(mk_partition *p, const mk_produce_result *res,
		   mk_strbuf *why);

#endif
