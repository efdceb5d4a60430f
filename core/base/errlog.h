/*
 * errlog.h — the ring of recent errors behind /errors.
 *
 * Each line is "TIME_MS PATH CODE MESSAGE"; the newest MK_ERRLOG_LINES are
 * kept, oldest dropped first. Its own mutex guards it, so any thread may add
 * a line while holding any other lock (it is always taken last).
 *
 * One line may be held back: mk_errlog_hold() keeps it aside until the
 * next add or format (then it is logged first, with its own time), unless
 * mk_errlog_drop_held() names its path before that. The filesystem holds
 * the failed lookup of a name directly under /topics or /producers, which
 * is also how mkdir starts: a mkdir of that name drops it.
 */
#ifndef MK_ERRLOG_H
#define MK_ERRLOG_H

#include <pthread.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

#define MK_ERRLOG_LINES 1000

typedef struct {
	pthread_mutex_t lock;
	char *lines[MK_ERRLOG_LINES];
	size_t head;      /* index of the oldest line */
	size_t count;
	char *held;       /* a line held back, or NULL */
	char *held_path;
} mk_errlog;

void mk_errlog_init(mk_errlog *log);
void mk_errlog_destroy(mk_errlog *log);
void mk_errlog_add(mk_errlog *log, int64_t time_ms, const char *path,
		   mk_err code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void mk_errlog_hold(mk_errlog *log, int64_t time_ms, const char *path,
		    mk_err code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Forget the held line if it is about path. */
void mk_errlog_drop_held(mk_errlog *log, const char *path);
/* Every line, oldest first, each ending in a newline. */
void mk_errlog_format(mk_errlog *log, mk_strbuf *out);

#endif
