/*
 * test_failpoint.c — named crash points (core/base/failpoint.h). An armed point
 * kills its process with SIGKILL at exactly its Nth hit, hits of other
 * points do not count, an unarmed run is untouched; the trace file lists
 * every hit in order; MKFS_FAILPOINTS is parsed strictly and a malformed
 * value arms nothing.
 *
 * Every hit that may kill runs in a forked child: the child reports each
 * hit it is about to make on a pipe, so the parent knows how far it got.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "failpoint.h"

typedef struct {
	int status;     /* from waitpid */
	int reached;    /* hits of the watched point the child began */
} outcome;

/*
 * Fork; the child runs setup(arg) and then hits "t.step" `hits` times,
 * with two hits of "t.other" before each, reporting each "t.step" hit on
 * a pipe just before making it; then exits 0.
 */
static outcome run_child(void (*setup)(void *), void *arg, int hits)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		if (setup)
			setup(arg);
		for (int i = 0; i < hits; i++) {
			MK_FAILPOINT("t.other");
			MK_FAILPOINT("t.other");
			char c = 'x';
			if (write(fds[1], &c, 1) != 1)
				_exit(3);
			MK_FAILPOINT("t.step");
		}
		_exit(0);
	}
	close(fds[1]);
	outcome o = { 0, 0 };
	char c;
	while (read(fds[0], &c, 1) == 1)
		o.reached++;
	close(fds[0]);
	assert_int_equal(waitpid(pid, &o.status, 0), pid);
	return o;
}

static bool killed(const outcome *o)
{
	return WIFSIGNALED(o->status) && WTERMSIG(o->status) == SIGKILL;
}

static bool exited_ok(const outcome *o)
{
	return WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0;
}

static void arm(void *arg)
{
	int n = *(int *)arg;
	if (!mk_failpoint_arm("t.step", n))
		_exit(4);
}

static void test_dies_at_nth_hit(void **state)
{
	(void)state;
	for (int n = 1; n <= 4; n++) {
		outcome o = run_child(arm, &n, 10);
		assert_true(killed(&o));
		assert_int_equal(o.reached, n);
	}
}

static void test_unarmed_and_short_runs_live(void **state)
{
	(void)state;
	/* Nothing armed. */
	outcome o = run_child(NULL, NULL, 10);
	assert_true(exited_ok(&o));
	assert_int_equal(o.reached, 10);
	/* Armed for the 5th hit, hit 4 times. */
	int n = 5;
	o = run_child(arm, &n, 4);
	assert_true(exited_ok(&o));
	assert_int_equal(o.reached, 4);
}

static void test_arm_limits(void **state)
{
	(void)state;
	mk_failpoint_reset();
	assert_false(mk_failpoint_arm("t.step", 0));
	assert_false(mk_failpoint_arm("t.step", -1));
	assert_false(mk_failpoint_arm("", 1));
	char longname[80];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_false(mk_failpoint_arm(longname, 1));
	assert_false(atomic_load(&mk_failpoints_active));
	/* The table holds 32 points. */
	for (int i = 0; i < 32; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t.p%d", i);
		assert_true(mk_failpoint_arm(name, 1));
	}
	assert_false(mk_failpoint_arm("t.one-too-many", 1));
	mk_failpoint_reset();
	assert_false(atomic_load(&mk_failpoints_active));
}

/* ---- the environment -------------------------------------------------- */

typedef struct {
	const char *spec;
	const char *trace;
} env;

static void from_env(void *arg)
{
	const env *e = arg;
	if (e->spec)
		setenv("MKFS_FAILPOINTS", e->spec, 1);
	else
		unsetenv("MKFS_FAILPOINTS");
	if (e->trace)
		setenv("MKFS_FAILPOINT_TRACE", e->trace, 1);
	else
		unsetenv("MKFS_FAILPOINT_TRACE");
	if (!mk_failpoint_init_env())
		_exit(5);
}

static void test_env_arms(void **state)
{
	(void)state;
	env e = { "t.step@3", NULL };
	outcome o = run_child(from_env, &e, 10);
	assert_true(killed(&o));
	assert_int_equal(o.reached, 3);
	/* No @N is the first hit; several points, one of them ours. */
	e.spec = "t.nothing@2,t.step";
	o = run_child(from_env, &e, 10);
	assert_true(killed(&o));
	assert_int_equal(o.reached, 1);
	/* Another point's count is its own. */
	e.spec = "t.other@5";
	o = run_child(from_env, &e, 10);
	assert_true(killed(&o));
	/* t.other is hit twice before each t.step: its 5th hit comes after
	 * two t.step hits, before the third is reported. */
	assert_int_equal(o.reached, 2);
	/* An empty value arms nothing. */
	e.spec = "";
	o = run_child(from_env, &e, 10);
	assert_true(exited_ok(&o));
}

static void test_env_malformed(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"t.step@0", "t.step@-1", "t.step@", "t.step@x", "t.step@1x",
		"t.step@+1", "t.step@ 1", "t.step@1@2", "@2", "t.step@1000000001",
		"t.step@99999999999999999999",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mk_failpoint_reset();
		setenv("MKFS_FAILPOINTS", bad[i], 1);
		unsetenv("MKFS_FAILPOINT_TRACE");
		if (mk_failpoint_init_env())
			print_error("accepted: %s\n", bad[i]);
		assert_false(mk_failpoint_init_env());
		/* Nothing armed: a hit costs nothing and kills nothing. */
		assert_false(atomic_load(&mk_failpoints_active));
	}
	/* A good point before a bad one is not left armed either. */
	mk_failpoint_reset();
	setenv("MKFS_FAILPOINTS", "t.step@1,t.other@0", 1);
	assert_false(mk_failpoint_init_env());
	assert_false(atomic_load(&mk_failpoints_active));
	MK_FAILPOINT("t.step");   /* would kill this test if armed */
	unsetenv("MKFS_FAILPOINTS");
	mk_failpoint_reset();
}

static void test_trace_file(void **state)
{
	(void)state;
	char path[] = "/tmp/mk-test-failpoint-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	/* Traced, nothing armed: every hit listed, in order. */
	env e = { NULL, path };
	outcome o = run_child(from_env, &e, 2);
	assert_true(exited_ok(&o));
	char buf[256] = { 0 };
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	assert_string_equal(buf, "t.other\nt.other\nt.step\n"
				 "t.other\nt.other\nt.step\n");
	/* Traced and armed: the fatal hit is in the trace too. */
	assert_int_equal(truncate(path, 0), 0);
	e.spec = "t.step@1";
	o = run_child(from_env, &e, 5);
	assert_true(killed(&o));
	memset(buf, 0, sizeof(buf));
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_string_equal(buf, "t.other\nt.other\nt.step\n");
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dies_at_nth_hit),
		cmocka_unit_test(test_unarmed_and_short_runs_live),
		cmocka_unit_test(test_arm_limits),
		cmocka_unit_test(test_env_arms),
		cmocka_unit_test(test_env_malformed),
		cmocka_unit_test(test_trace_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
