/*
 * failpoint.h — named crash points.
 *
 * A failpoint marks an instant in a multi-step change at which a crash must
 * leave something recoverable: MK_FAILPOINT("meta.save.before-rename").
 * Tests arm a point by name; when an armed point is hit the process dies at
 * once with SIGKILL (no atexit, no flush, no unmount): exactly what a
 * kill -9 at that instant leaves on disk. The next mount must recover.
 *
 * Arming:
 *   MKFS_FAILPOINTS="name[@N][,name[@N]...]"   read once at start-up by
 *       mk_failpoint_init_env(): die at the Nth hit of name (default 1)
 *   mk_failpoint_arm(name, n)                   the same from a unit test,
 *       which normally forks first (the child dies, the parent reopens)
 *   MKFS_FAILPOINT_TRACE=FILE                   every point hit appends its
 *       name and a newline to FILE, so a crash test can learn which points a
 *       scenario passes and then arm each in turn
 *
 * Names are "area.step" in lower case (log.roll.after-create, ...); each
 * module's header lists the points it defines.
 *
 * Cost when nothing is armed and no trace is set: one relaxed atomic load.
 * The table is process-wide by nature (a crash is); it is written by
 * init/arm before the paths under test run, and hits count atomically.
 */
#ifndef MK_FAILPOINT_H
#define MK_FAILPOINT_H

#include <stdatomic.h>
#include <stdbool.h>

extern _Atomic bool mk_failpoints_active;

void mk_failpoint_hit_slow(const char *name);

#define MK_FAILPOINT(name)                                                  \
	do {                                                                \
		if (atomic_load_explicit(&mk_failpoints_active,             \
					 memory_order_relaxed))             \
			mk_failpoint_hit_slow(name);                        \
	} while (0)

/* Read MKFS_FAILPOINTS and MKFS_FAILPOINT_TRACE. False on a malformed
 * MKFS_FAILPOINTS (nothing armed then). */
bool mk_failpoint_init_env(void);
/* Arm name to kill the process at its nth hit (n >= 1). False when the
 * table is full or the name is too long. */
bool mk_failpoint_arm(const char *name, int n);
/* Forget every armed point and the trace file. */
void mk_failpoint_reset(void);

#endif
