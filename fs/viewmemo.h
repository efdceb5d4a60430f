/*
 * viewmemo.h — what the daemon knows of a records view's whole text, so
 * that the kernel's page cache may serve it (docs/filesystem.md, "paged
 * records").
 *
 * A records file (leader's view, no :follow, no :committed, a topic that
 * is not compacted) is a function of its partition's records: while the
 * partition does not change (its change count, mk_partition_seq, stays
 * the same) the same name gives the same bytes. A descriptor that read
 * such a view to its end without the partition changing meanwhile
 * leaves a memo: the name, the topic (a reference, so that a topic
 * deleted and made again is never taken for the old one), the partition,
 * its change count, the view's first offset, the offset after its last
 * record and the text's length. While the partition's change count is
 * still the memo's, the view's length is known (a stat reports it), and
 * a new descriptor is paged: it reads by offset, through the page cache.
 *
 * Which cached pages may be kept (FOPEN_KEEP_CACHE): pages are filled
 * only by paged descriptors, and every paged descriptor open on a name
 * has the memo's identity (a descriptor whose identity differs is a
 * stream, not paged). The first paged open of an identity does not keep
 * the cache (the kernel drops whatever the name held before); later
 * ones do, as long as the memo stands.
 *
 * Locking: one mutex guards the table; calls are short and call into core
 * only to put topic references (mk_topic_put takes no lock the callers
 * hold).
 */
#ifndef MK_VIEWMEMO_H
#define MK_VIEWMEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"

typedef struct mk_viewmemo mk_viewmemo;

/* What identifies a view's text. */
typedef struct {
	mk_topic *topic;         /* not a reference: compared only */
	int partition;
	uint64_t seq;            /* the partition's change count */
	int64_t start;           /* the view's first offset */
} mk_view_id;

mk_viewmemo *mk_viewmemo_new(void);
/* Puts every topic reference; call before the cluster is closed. */
void mk_viewmemo_free(mk_viewmemo *vm);

/* A stream read path's view [id.start, end) to its end: size bytes.
 * ref is a reference to id->topic, which the memo takes over. */
void mk_viewmemo_learn(mk_viewmemo *vm, const char *path, const mk_view_id *id,
		       int64_t end, long long size, mk_topic *ref);
/* The known length of path's text for the current identity (start is
 * not compared: a stat does not resolve positions); false: unknown. */
bool mk_viewmemo_size(mk_viewmemo *vm, const char *path, mk_topic *topic,
		      int partition, uint64_t seq, long long *size);
/*
 * A descriptor opens path with identity id: true when it is paged (the
 * memo matches and every paged descriptor open on path has the same
 * identity); then *size and *end are the memo's, and *keep_cache says
 * whether the pages cached for path may be kept. A paged open is counted
 * until mk_viewmemo_close.
 */
bool mk_viewmemo_open(mk_viewmemo *vm, const char *path, const mk_view_id *id,
		      long long *size, int64_t *end, bool *keep_cache);
void mk_viewmemo_close(mk_viewmemo *vm, const char *path);

#endif
