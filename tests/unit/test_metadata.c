/*
 * test_metadata.c — the metadata file's parser (core/replication/metadata.c): a good
 * file reads back field by field; every integer is strict (core/base/parse.h),
 * so `broker x online` is refused instead of loading as broker 0; every
 * token is accounted for; and a failed load leaves nothing to free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fileio.h"
#include "metadata.h"

static const char good[] =
	"minikafka-metadata 1\n"
	"broker 1 online\n"
	"broker 2 offline\n"
	"topic t 2 2 retention.ms=1000\n"
	"partition t 0 leader=1 epoch=3 replicas=1,2 isr=1\n"
	"partition t 1 leader=none epoch=0 replicas=2,1 isr=2\n"
	"clock 12345\n"
	"next_producer_id 7\n"
	"producer p 6 2\n";

/* Parse a copy of text (the parser cuts it in place). */
static mk_err parse(const char *text, mk_metadata *md, mk_strbuf *why)
{
	char *copy = strdup(text);
	assert_non_null(copy);
	mk_err err = mk_metadata_parse(copy, md, why);
	free(copy);
	return err;
}

static void test_good_file(void **state)
{
	(void)state;
	mk_metadata md;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(parse(good, &md, &why), MK_OK);
	assert_true(md.present);
	assert_int_equal(md.nbrokers, 2);
	assert_int_equal(md.broker_ids[0], 1);
	assert_true(md.broker_online[0]);
	assert_int_equal(md.broker_ids[1], 2);
	assert_false(md.broker_online[1]);
	assert_int_equal(md.ntopics, 1);
	assert_string_equal(md.topics[0].name, "t");
	assert_int_equal(md.topics[0].npartitions, 2);
	assert_int_equal(md.topics[0].rf, 2);
	assert_int_equal(md.topics[0].noverrides, 1);
	assert_string_equal(md.topics[0].overrides[0], "retention.ms=1000");
	mk_partition_state *p0 = &md.topics[0].parts[0];
	assert_int_equal(p0->leader, 1);
	assert_int_equal(p0->leader_epoch, 3);
	assert_int_equal(p0->nreplicas, 2);
	assert_int_equal(p0->brokers[1], 2);
	assert_int_equal(p0->nisr, 1);
	mk_partition_state *p1 = &md.topics[0].parts[1];
	assert_int_equal(p1->leader, -1);
	assert_int_equal(p1->nisr, 1);
	assert_int_equal(md.clock_ms, 12345);
	assert_int_equal(md.next_producer_id, 7);
	assert_int_equal(md.nproducers, 1);
	assert_string_equal(md.producers[0].name, "p");
	assert_int_equal(md.producers[0].id, 6);
	assert_int_equal(md.producers[0].epoch, 2);
	mk_metadata_free(&md);
	mk_strbuf_release(&why);
}

/* Replace the line starting with `prefix` in the good file by `line`. */
static char *with_line(const char *prefix, const char *line)
{
	mk_strbuf sb = MK_STRBUF_INIT;
	const char *p = good;
	bool replaced = false;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = (size_t)(nl - p) + 1;
		if (!replaced && !strncmp(p, prefix, strlen(prefix))) {
			mk_strbuf_addstr(&sb, line);
			mk_strbuf_addch(&sb, '\n');
			replaced = true;
		} else {
			mk_strbuf_add(&sb, p, n);
		}
		p += n;
	}
	assert_true(replaced);
	return mk_strbuf_detach(&sb, NULL);
}

static void expect_refused(const char *prefix, const char *line,
			   const char *kind)
{
	char *text = with_line(prefix, line);
	mk_metadata md;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = parse(text, &md, &why);
	if (err != MK_INVALID_CONFIG)
		print_error("accepted: %s\n", line);
	assert_int_equal(err, MK_INVALID_CONFIG);
	char want[128];
	snprintf(want, sizeof(want), "malformed metadata line starting '%s'",
		 kind);
	assert_non_null(strstr(why.buf, want));
	/* Nothing is left to free. */
	assert_int_equal(md.ntopics, 0);
	assert_null(md.topics);
	assert_null(md.producers);
	mk_strbuf_release(&why);
	free(text);
}

static void test_strict_integers(void **state)
{
	(void)state;
	/* The atoi days: "x" was broker 0. */
	expect_refused("broker 1", "broker x online", "broker");
	expect_refused("broker 1", "broker 1x online", "broker");
	expect_refused("broker 1", "broker -1 online", "broker");
	expect_refused("broker 1", "broker +1 online", "broker");
	expect_refused("broker 1", "broker 99999999999 online", "broker");
	expect_refused("broker 1", "broker 1 onlin", "broker");
	expect_refused("broker 1", "broker 1 online extra", "broker");
	expect_refused("broker 1", "broker 1", "broker");
	/* the header only as the first line */
	expect_refused("broker 2", "minikafka-metadata 1", "minikafka-metadata");
	expect_refused("clock", "clock -1", "clock");
	expect_refused("clock", "clock 1e3", "clock");
	expect_refused("clock", "clock 9223372036854775808", "clock");
	expect_refused("next_producer_id", "next_producer_id 0x10",
		       "next_producer_id");
	expect_refused("producer", "producer p 6 32768", "producer");
	expect_refused("producer", "producer p six 2", "producer");
	expect_refused("producer", "producer p 6 2 1", "producer");
	expect_refused("topic", "topic t 0 2", "topic");
	expect_refused("topic", "topic t 1025 2", "topic");
	expect_refused("topic", "topic t 2 two", "topic");
	expect_refused("topic", "topic t 2 17", "topic");
	expect_refused("partition t 0", "partition t x leader=1 epoch=3 replicas=1,2 isr=1",
		       "partition");
	expect_refused("partition t 0", "partition t 2 leader=1 epoch=3 replicas=1,2 isr=1",
		       "partition");
	expect_refused("partition t 0", "partition t 0 leader=one epoch=3 replicas=1,2 isr=1",
		       "partition");
	expect_refused("partition t 0", "partition t 0 leader=1 epoch=-7 replicas=1,2 isr=1",
		       "partition");
	expect_refused("partition t 0", "partition t 0 leader=1 epoch=3 replicas=1,,2 isr=1",
		       "partition");
	expect_refused("partition t 0", "partition t 0 leader=1 epoch=3 replicas=1,2, isr=1",
		       "partition");
	expect_refused("partition t 0", "partition t 0 leader=1 epoch=3 replicas=1,x isr=1",
		       "partition");
	expect_refused("partition t 0", "partition t 0 leader=1 epoch=3 replicas= isr=1",
		       "partition");
	expect_refused("partition t 0", "partition t 0 leader=1 epoch=3 replicas=1,2 isr=1 x=1",
		       "partition");
	expect_refused("partition t 0", "frobnicate 1", "frobnicate");
}

/* Each broker, producer and partition has one line. */
static void test_duplicates(void **state)
{
	(void)state;
	expect_refused("broker 2", "broker 1 offline", "broker");
	expect_refused("producer", "producer p 6 2\nproducer p 7 0", "producer");
	expect_refused("partition t 1",
		       "partition t 0 leader=2 epoch=4 replicas=2,1 isr=2",
		       "partition");
	expect_refused("topic", "topic t 2 2\ntopic t 1 1", "topic");
}

/* A partition line missing: the load says which. */
static void test_missing_partition(void **state)
{
	(void)state;
	char *text = with_line("partition t 1", "");
	mk_metadata md;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(parse(text, &md, &why), MK_INVALID_CONFIG);
	assert_string_equal(why.buf, "metadata lacks partition t-1");
	assert_null(md.topics);
	mk_strbuf_release(&why);
	free(text);
}

/* Through the file: a missing one is no error; a bad one names itself. */
static void test_load_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/mk-test-metadata-XXXXXX";
	assert_non_null(mkdtemp(dir));
	mk_metadata md;
	mk_strbuf why = MK_STRBUF_INIT, path = MK_STRBUF_INIT;
	assert_int_equal(mk_metadata_load(dir, &md, &why), MK_OK);
	assert_false(md.present);
	mk_metadata_free(&md);

	mk_strbuf_addf(&path, "%s/metadata", dir);
	char *text = with_line("broker 1", "broker x online");
	assert_int_equal(mk_file_replace(path.buf, text, strlen(text)), MK_OK);
	assert_int_equal(mk_metadata_load(dir, &md, &why), MK_INVALID_CONFIG);
	assert_non_null(strstr(why.buf, "'broker'"));
	assert_non_null(strstr(why.buf, path.buf));
	free(text);

	assert_int_equal(mk_file_replace(path.buf, good, strlen(good)), MK_OK);
	mk_strbuf_reset(&why);
	assert_int_equal(mk_metadata_load(dir, &md, &why), MK_OK);
	assert_true(md.present);
	assert_int_equal(md.nbrokers, 2);
	mk_metadata_free(&md);
	mk_remove_tree(dir);
	mk_strbuf_release(&why);
	mk_strbuf_release(&path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),
		cmocka_unit_test(test_strict_integers),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_missing_partition),
		cmocka_unit_test(test_load_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
