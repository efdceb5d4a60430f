/* The node table and path resolution of fs/, without a mount. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cluster.h"
#include "errno_map.h"
#include "nodes.h"
#include "testlib_fs.h"

typedef tl_fs fixture;

static int setup(void **state)
{
	mk_config cfg;
	tl_config(&cfg, 2);
	cfg.manual_clock = 0;    /* control_commands: /clock refuses +N */
	fixture *f = tl_fs_open("nodes", &cfg, 0);
	tl_create_topic(f->c, "t", 3, 1, NULL, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	tl_fs_close(*state);
	return 0;
}

static mk_err resolve(fixture *f, const char *path, node_ref *ref)
{
	return mk_resolve(&f->fs, path, ref, NULL);
}

static void resolves_the_tree(void **state)
{
	fixture *f = *state;
	static const char *const ok[] = {
		"/", "/README", "/ctl", "/topics", "/topics/t", "/topics/t/config",
		"/topics/t/append", "/topics/t/append:key=a", "/topics/t/2",
		"/topics/t/0/leo", "/topics/t/0/records", "/topics/t/0/records@-3:tsv",
		"/topics/t/0/append:acks=1", "/topics/t/0/segments",
		"/topics/t/0/segments/00000000000000000000.log",
		"/brokers/2/promote", "/brokers/fetch", "//topics//t/",
		"/topics/t/0/batches", "/topics/t/0/batches@3:json", "/topics/t/0/epochs",
		"/topics/t/0/segments/00000000000000000000.index:txt",
		/* Kafka's three files a segment. */
		"/topics/t/0/segments/00000000000000000000.timeindex",
		"/topics/t/0/segments/00000000000000000000.timeindex:txt",
		"/brokers/1/logs", "/brokers/1/logs/t", "/brokers/1/logs/t/0",
		"/brokers/1/logs/t/2/hw", "/brokers/2/logs/t/1/records@0:tsv",
		"/brokers/2/logs/t/1/epochs", "/brokers/2/logs/t/1/batches:max=1",
		"/brokers/2/logs/t/1/segments/00000000000000000000.log",
		"/brokers/2/logs/t/1/segments/00000000000000000000.index:txt",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		node_ref ref;
		mk_err err = resolve(f, ok[i], &ref);
		if (err)
			fail_msg("%s did not resolve", ok[i]);
		mk_node_ref_release(&ref);
	}
}

static void refuses_what_does_not_exist(void **state)
{
	fixture *f = *state;
	static const char *const bad[] = {
		"/nope", "/topics/u", "/topics/t/3", "/topics/t/00", "/topics/t/-1",
		"/topics/t/0/leo/x", "/topics/..", "/topics/t/0/recordsX",
		"/brokers/3", "/brokers/01", "/topics/t/0/segments/00000000000000000001.log",
		"/README/x", "/topics/t/-0", "/topics/t/\t1", "/topics/t/ 1",
		"/brokers/-0", "/brokers/+1",
		"/brokers/2/logs/t/0", "/brokers/2/logs/t/0/leo", "/brokers/1/logs/t/1",
		"/brokers/1/logs/t/0/append", "/brokers/1/logs/t/0/state",
		"/brokers/1/logs/t/0/isr", "/brokers/1/logs/u",
		"/topics/t/0/segments/00000000000000000000.log:txt",
		"/topics/t/0/segments/00000000000000000000.index:tx",
		"/topics/t/0/segments/00000000000000000000.txnindex",
		"/topics/t/0/segments/00000000000000000001.timeindex",
		"/topics/t/0/batchesX",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		node_ref ref;
		mk_err err = resolve(f, bad[i], &ref);
		if (err != MK_UNKNOWN_TOPIC_OR_PARTITION)
			fail_msg("%s resolved (or failed oddly: %s)", bad[i], mk_err_name(err));
		assert_null(ref.topic);
	}
}

static void add_name(void *arg, const char *name, bool dir)
{
	(void)dir;
	mk_strbuf *out = arg;
	mk_strbuf_addf(out, "%s ", name);
}

static void lists_children_but_not_parameters(void **state)
{
	fixture *f = *state;
	node_ref ref;
	mk_strbuf names = MK_STRBUF_INIT;
	assert_int_equal(resolve(f, "/topics/t/0", &ref), MK_OK);
	mk_node_list(&f->fs, &ref, add_name, &names);
	mk_node_ref_release(&ref);
	assert_string_equal(names.buf, "append records leo hw lso log_start_offset leader "
			    "leader_epoch replicas isr isr_shrinks isr_expands state delete-records segments epochs batches ");
	mk_strbuf_reset(&names);
	/* A replica's own directory keeps the rows that make sense for one log. */
	assert_int_equal(resolve(f, "/brokers/2/logs/t/1", &ref), MK_OK);
	mk_node_list(&f->fs, &ref, add_name, &names);
	mk_node_ref_release(&ref);
	assert_string_equal(names.buf, "records leo hw log_start_offset leader_epoch "
			    "segments epochs batches ");
	mk_strbuf_reset(&names);
	assert_int_equal(resolve(f, "/brokers/2/logs/t", &ref), MK_OK);
	mk_node_list(&f->fs, &ref, add_name, &names);
	mk_node_ref_release(&ref);
	assert_string_equal(names.buf, "1 ");
	mk_strbuf_reset(&names);
	assert_int_equal(resolve(f, "/topics/t", &ref), MK_OK);
	mk_node_list(&f->fs, &ref, add_name, &names);
	mk_node_ref_release(&ref);
	assert_string_equal(names.buf, "config append 0 1 2 ");
	mk_strbuf_release(&names);
}

static mk_err control(fixture *f, const char *path, const char *text)
{
	node_ref ref;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = resolve(f, path, &ref);
	if (!err)
		err = tl_fs_control(&f->fs, &ref, text, strlen(text), &why);
	if (err)
		assert_true(why.len > 0);   /* every refusal says why */
	mk_node_ref_release(&ref);
	mk_strbuf_release(&why);
	return err;
}

/* Which /ctl writes run as jobs (off the workers): any of their lines
 * that waits for a coordinator makes the whole write one. */
static void ctl_writes_that_wait(void **state)
{
	fixture *f = *state;
	node_ref ref;
	assert_int_equal(resolve(f, "/ctl", &ref), MK_OK);
	static const char *const yes[] = { "expire-members\n", "  expire-transactions",
					   "replicate\nexpire-members\n", "flush\r\nexpire-members\r\n" };
	static const char *const no[] = { "replicate\n", "expire-membersx\n", "create-topic expire-members\n", "" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(mk_node_write_waits(&ref, yes[i], strlen(yes[i])));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(mk_node_write_waits(&ref, no[i], strlen(no[i])));
	mk_node_ref_release(&ref);
}

static void control_commands(void **state)
{
	fixture *f = *state;
	assert_int_equal(control(f, "/ctl", "create-topic u partitions=2 segment.bytes=1000\n"), MK_OK);
	mk_topic *t = mk_cluster_topic(f->c, "u");
	assert_non_null(t);
	assert_int_equal(t->npartitions, 2);
	assert_int_equal(t->cfg.segment_bytes, 1000);
	mk_topic_put(t);
	assert_int_equal(control(f, "/ctl", "create-topic u"), MK_TOPIC_ALREADY_EXISTS);
	assert_int_equal(control(f, "/ctl", "create-topic bad/name"), MK_INVALID_TOPIC_EXCEPTION);
	assert_int_equal(control(f, "/ctl", "create-topic v partitions=0"), MK_INVALID_REQUEST);
	assert_int_equal(control(f, "/ctl", "create-topic v replication.factor=3"), MK_INVALID_REQUEST);
	assert_int_equal(control(f, "/ctl", "create-topic v bogus=1"), MK_INVALID_CONFIG);
	assert_null(mk_cluster_topic(f->c, "v"));   /* nothing was created */
	assert_int_equal(control(f, "/ctl", "frobnicate"), MK_INVALID_REQUEST);
	assert_int_equal(control(f, "/ctl", "delete-topic nope"), MK_UNKNOWN_TOPIC_OR_PARTITION);
	assert_int_equal(control(f, "/ctl", "delete-topic u\n"), MK_OK);
	assert_null(mk_cluster_topic(f->c, "u"));
	assert_int_equal(control(f, "/ctl", "flush\nreplicate\n"), MK_OK);
	assert_int_equal(control(f, "/clock", "+5"), MK_INVALID_REQUEST);   /* system clock */
	assert_int_equal(control(f, "/brokers/1/fetch", "now"), MK_INVALID_REQUEST);
	assert_int_equal(control(f, "/brokers/1/fetch", "1"), MK_OK);
	/* The input once left at the repository root as a libFuzzer crash
	 * file (fuzz_control: byte 4, /brokers/1/fetch, nothing written;
	 * corpus control/c10): the no-argument form, a fetch round. */
	assert_int_equal(control(f, "/brokers/1/fetch", ""), MK_OK);
	assert_int_equal(control(f, "/brokers/1/promote", "t"), MK_INVALID_REQUEST);
	assert_int_equal(control(f, "/brokers/1/promote", "t/9"), MK_UNKNOWN_TOPIC_OR_PARTITION);
	assert_int_equal(control(f, "/brokers/1/crash", "soft"), MK_INVALID_REQUEST);
	assert_int_equal(control(f, "/brokers/2/restart", ""), MK_INVALID_REQUEST);   /* online */
	assert_int_equal(control(f, "/topics/t/config", "retention.ms=5\nsegment.bytes=nope"),
			 MK_INVALID_CONFIG);
}

static void every_code_has_an_errno(void **state)
{
	(void)state;
	assert_int_equal(mk_errno(MK_OK), 0);
	for (int e = 1; e < MK_ERR__COUNT; e++)
		assert_true(mk_errno((mk_err)e) > 0);
	assert_int_equal(mk_errno(MK_NOT_ENOUGH_REPLICAS), EAGAIN);
	assert_int_equal(mk_errno(MK_NOT_ENOUGH_REPLICAS_AFTER_APPEND), EREMOTEIO);
	assert_int_equal(mk_errno(MK_OFFSET_OUT_OF_RANGE), ERANGE);
	assert_int_equal(mk_errno(MK_MESSAGE_TOO_LARGE), EMSGSIZE);
	assert_int_equal(mk_errno(MK_INELIGIBLE_REPLICA), EPERM);
	assert_int_equal(mk_errno(MK_OUT_OF_ORDER_SEQUENCE_NUMBER), EPROTO);
	assert_int_equal(mk_errno(MK_PRODUCER_FENCED), ESTALE);
	assert_string_equal(mk_err_name(MK_NOT_ENOUGH_REPLICAS), "NOT_ENOUGH_REPLICAS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(resolves_the_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(refuses_what_does_not_exist, setup, teardown),
		cmocka_unit_test_setup_teardown(lists_children_but_not_parameters, setup, teardown),
		cmocka_unit_test_setup_teardown(ctl_writes_that_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(control_commands, setup, teardown),
		cmocka_unit_test(every_code_has_an_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
