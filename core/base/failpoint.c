/*
 * failpoint.c — see failpoint.h. A small fixed table; hits are counted
 * with atomics so points may be hit from any thread.
 */
#include "failpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"

#define MAX_POINTS 32
#define MAX_NAME 64

typedef struct {
	char name[MAX_NAME];
	int nth;
	_Atomic int hits;
} failpoint;

_Atomic bool mk_failpoints_active;
static failpoint points[MAX_POINTS];
static _Atomic int npoints;
static int trace_fd = -1;

static void trace(const char *name)
{
	if (trace_fd < 0)
		return;
	char line[MAX_NAME + 2];
	size_t n = strnlen(name, MAX_NAME);
	memcpy(line, name, n);
	line[n++] = '\n';
	/* O_APPEND: one write per line keeps lines whole across threads. */
	ssize_t w;
	do
		w = write(trace_fd, line, n);
	while (w < 0 && errno == EINTR);
}

void mk_failpoint_hit_slow(const char *name)
{
	trace(name);
	int n = atomic_load(&npoints);
	for (int i = 0; i < n; i++) {
		failpoint *p = &points[i];
		if (strcmp(p->name, name) != 0)
			continue;
		if (atomic_fetch_add(&p->hits, 1) + 1 == p->nth) {
			kill(getpid(), SIGKILL);
			for (;;)
				pause();
		}
	}
}

bool mk_failpoint_arm(const char *name, int n)
{
	int i = atomic_load(&npoints);
	if (i >= MAX_POINTS || n < 1 || strlen(name) >= MAX_NAME || !*name)
		return false;
	strcpy(points[i].name, name);
	points[i].nth = n;
	atomic_store(&points[i].hits, 0);
	atomic_store(&npoints, i + 1);
	atomic_store(&mk_failpoints_active, true);
	return true;
}

void mk_failpoint_reset(void)
{
	atomic_store(&mk_failpoints_active, false);
	atomic_store(&npoints, 0);
	if (trace_fd >= 0)
		close(trace_fd);
	trace_fd = -1;
}

bool mk_failpoint_init_env(void)
{
	const char *tr = getenv("MKFS_FAILPOINT_TRACE");
	if (tr && *tr) {
		trace_fd = open(tr, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
				0644);
		if (trace_fd >= 0)
			atomic_store(&mk_failpoints_active, true);
	}
	const char *spec = getenv("MKFS_FAILPOINTS");
	if (!spec || !*spec)
		return true;
	char buf[1024];
	if (strlen(spec) >= sizeof buf)
		return false;
	strcpy(buf, spec);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int64_t nth = 1;
		char *at = strchr(tok, '@');
		if (at) {
			*at = '\0';
			if (!mk_parse_i64(at + 1, &nth) || nth < 1 ||
			    nth > 1000000000) {
				mk_failpoint_reset();
				return false;
			}
		}
		if (!mk_failpoint_arm(tok, (int)nth)) {
			mk_failpoint_reset();
			return false;
		}
	}
	return true;
}
