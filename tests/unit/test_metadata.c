/*
 * test_metadata.c — the metadata file's parser (core/replication/metadata.c): a good
 * file reads back field by field; every integer is strict (core/base/parse.h),
 * so `broker x online` is refused instead of loading as broker 0; every
 * token is accounted for; and a failed load leaves nothing to free.
 * The rebuild from the directories (mk_metadata_rebuild) decides leaders,
 * epochs, ISRs, replicas and producer ids from the logs, refuses a gap,
 * and its file loads; an open refuses data no topic owns and removes only
 * what holds no batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <zlib.h>

#include "codec.h"
#include "fileio.h"
#include "log.h"
#include "metadata.h"
#include "testlib.h"

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

	/* A version-1 or -2 file names a data directory of MKF2 segments:
	 * refused by name, left as it is. */
	assert_int_equal(mk_file_replace(path.buf, good, strlen(good)), MK_OK);
	mk_strbuf_reset(&why);
	assert_int_equal(mk_metadata_load(dir, &md, &why), MK_INVALID_CONFIG);
	assert_non_null(strstr(why.buf, "minikafka-metadata 1: this data directory holds segments in the MKF2 batch format"));
	assert_non_null(strstr(why.buf, path.buf));

	/* Version 3: Kafka's RecordBatch v2, with its checksum line. */
	mk_strbuf v3 = MK_STRBUF_INIT;
	mk_strbuf_addf(&v3, "minikafka-metadata 3\n%s", strchr(good, '\n') + 1);
	mk_strbuf_addf(&v3, "checksum %08lx\n",
		       crc32(0L, (const Bytef *)v3.buf, (uInt)v3.len));
	assert_int_equal(mk_file_replace(path.buf, v3.buf, v3.len), MK_OK);
	mk_strbuf_release(&v3);
	mk_strbuf_reset(&why);
	assert_int_equal(mk_metadata_load(dir, &md, &why), MK_OK);
	assert_int_equal(md.version, 3);
	assert_true(md.present);
	assert_int_equal(md.nbrokers, 2);
	mk_metadata_free(&md);
	mk_remove_tree(dir);
	mk_strbuf_release(&why);
	mk_strbuf_release(&path);
}

/* ---- the rebuild from the directories ------------------------------------ */

/* ROOT/broker-B/ENTRY with one batch per epoch (pid on the last, -1: none),
 * or an empty directory when n is 0. */
static void write_log(const char *root, int broker, const char *entry,
		      const int32_t *epochs, int n, int64_t pid)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/broker-%d/%s", root, broker, entry);
	assert_int_equal(mk_mkdirs(dir), MK_OK);
	if (n == 0)
		return;
	mk_log *log;
	assert_int_equal(mk_log_open(dir, NULL, &log, NULL), MK_OK);
	for (int i = 0; i < n; i++) {
		mk_batch_meta meta = { 0, 0, epochs[i], i == n - 1 ? pid : -1,
				       i == n - 1 && pid >= 0 ? 0 : -1,
				       i == n - 1 && pid >= 0 ? 0 : -1, 0, false, 0 };
		mk_batch_builder b;
		mk_builder_init(&b, &meta);
		mk_builder_add(&b, 5000 + i, MK_BYTES_NULL, mk_bytes_of("v", 1), NULL, 0);
		mk_builder_finish(&b);
		int64_t base;
		assert_int_equal(mk_log_append_leader(log, (uint8_t *)b.frame.buf,
						      b.frame.len, epochs[i], &base), MK_OK);
		mk_builder_release(&b);
	}
	mk_log_close(log);
}

static const mk_metadata_topic *topic_of(const mk_metadata *md, const char *name)
{
	const mk_metadata_topic *t = mk_metadata_find(md, name);
	assert_non_null(t);
	return t;
}

static void assert_ids(const int *ids, int n, const char *want)
{
	char got[64] = "";
	for (int i = 0; i < n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d",
			 i ? "," : "", ids[i]);
	assert_string_equal(got, want);
}

/* Leaders by newest epoch then longest log, the ISR level with the leader,
 * replicas in create-topic's order (the missing one filled in), internal topics
 * compacted, next_producer_id above every pid, the clock at the newest
 * timestamp; the file the open writes loads. */
static void test_rebuild_decisions(void **state)
{
	(void)state;
	char root[64];
	tl_tmpdir(root, sizeof(root), "rebuild");
	write_log(root, 1, "t-0", (int32_t[]){ 0, 0 }, 2, -1);
	write_log(root, 2, "t-0", (int32_t[]){ 0, 1 }, 2, -1);
	write_log(root, 3, "t-0", (int32_t[]){ 0, 1, 1 }, 3, 41);
	write_log(root, 1, "t-1", (int32_t[]){ 2 }, 1, -1);
	write_log(root, 3, "t-1", (int32_t[]){ 2 }, 1, -1);
	write_log(root, 2, "__consumer_offsets-0", NULL, 0, -1);
	char junk[128];
	snprintf(junk, sizeof(junk), "%s/broker-1/t-7", root);
	assert_int_equal(mk_file_replace(junk, "x", 1), MK_OK);  /* a file */

	mk_meta_dirs dirs;
	mk_metadata_scan_dirs(root, &dirs);
	assert_int_equal(dirs.nbrokers, 3);
	assert_int_equal(dirs.n, 7);
	size_t ndata = 0;
	for (size_t i = 0; i < dirs.n; i++) {
		ndata += dirs.v[i].data;
		if (!strcmp(dirs.v[i].entry, "t-7"))
			assert_null(dirs.v[i].topic);
	}
	assert_int_equal(ndata, 5);   /* not the empty one, not the file */

	mk_config cfg;
	tl_config(&cfg, 3);
	mk_metadata md;
	memset(&md, 0, sizeof(md));
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_metadata_rebuild(root, &cfg, &dirs, &md, NULL, &why), MK_OK);
	assert_int_equal(md.ntopics, 2);
	const mk_metadata_topic *t = topic_of(&md, "t");
	assert_int_equal(t->npartitions, 2);
	assert_int_equal(t->rf, 3);
	assert_int_equal(t->noverrides, 0);
	const mk_partition_state *p0 = &t->parts[0], *p1 = &t->parts[1];
	assert_ids(p0->brokers, p0->nreplicas, "1,2,3");
	assert_int_equal(p0->leader, 3);       /* epoch 1 and the longest */
	assert_int_equal(p0->leader_epoch, 1);
	assert_ids(p0->isr, p0->nisr, "3");
	/* 2 filled in; create-topic's order for partition 1 */
	assert_ids(p1->brokers, p1->nreplicas, "2,3,1");
	assert_int_equal(p1->leader, 3);       /* a tie: the earlier in the list */
	assert_int_equal(p1->leader_epoch, 2);
	assert_ids(p1->isr, p1->nisr, "3,1");
	const mk_metadata_topic *o = topic_of(&md, "__consumer_offsets");
	assert_int_equal(o->npartitions, 1);
	assert_int_equal(o->rf, 1);
	assert_int_equal(o->noverrides, 1);
	assert_string_equal(o->overrides[0], "cleanup.policy=compact");
	assert_int_equal(o->parts[0].leader, 2);
	assert_int_equal(md.next_producer_id, 42);
	assert_true(md.clock_ms >= 5000);
	mk_metadata_free(&md);
	mk_meta_dirs_free(&dirs);

	/* The open with the option writes a file the normal loader reads. */
	mk_cluster *c = NULL;
	mk_open_options oo = { .rebuild_metadata = true };
	assert_int_equal(mk_cluster_open_with(root, &cfg, &oo, &c, &why), MK_OK);
	assert_int_equal(mk_cluster_close(c), MK_OK);
	assert_int_equal(mk_metadata_load(root, &md, &why), MK_OK);
	assert_true(md.present);
	t = topic_of(&md, "t");
	assert_int_equal(t->parts[0].leader, 3);
	assert_int_equal(md.next_producer_id, 42);
	mk_metadata_free(&md);
	snprintf(junk, sizeof(junk), "%s/broker-3/t-0/00000000000000000000.log", root);
	struct stat st;
	assert_int_equal(stat(junk, &st), 0);
	assert_true(st.st_size > 0);
	mk_strbuf_release(&why);
	tl_rmtree(root);
}

/* A partition with no directory anywhere refuses the rebuild before any
 * log is opened. */
static void test_rebuild_gap(void **state)
{
	(void)state;
	char root[64];
	tl_tmpdir(root, sizeof(root), "rebuild-gap");
	write_log(root, 1, "a-0", NULL, 0, -1);    /* empty: an open would fill it */
	write_log(root, 1, "g-0", (int32_t[]){ 0 }, 1, -1);
	write_log(root, 1, "g-2", (int32_t[]){ 0 }, 1, -1);
	mk_meta_dirs dirs;
	mk_metadata_scan_dirs(root, &dirs);
	mk_config cfg;
	tl_config(&cfg, 1);
	mk_metadata md;
	memset(&md, 0, sizeof(md));
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_metadata_rebuild(root, &cfg, &dirs, &md, NULL, &why),
			 MK_INVALID_CONFIG);
	assert_non_null(strstr(why.buf, "none for g-1"));
	assert_int_equal(md.ntopics, 0);
	char a0[128];
	snprintf(a0, sizeof(a0), "%s/broker-1/a-0", root);
	assert_int_equal(rmdir(a0), 0);            /* no log of a was opened */
	mk_metadata_free(&md);
	mk_meta_dirs_free(&dirs);
	mk_strbuf_release(&why);
	tl_rmtree(root);
}

/* Data no topic owns refuses the open, changing nothing; the option adds
 * its topic; what holds no batch is removed. */
static void test_open_unknown_dirs(void **state)
{
	(void)state;
	char root[64], path[160];
	tl_tmpdir(root, sizeof(root), "unknown-dirs");
	mk_config cfg;
	tl_config(&cfg, 2);
	mk_cluster *c = tl_cluster_open(root, &cfg);
	assert_int_equal(mk_cluster_close(c), MK_OK);
	write_log(root, 2, "x-0", (int32_t[]){ 0 }, 1, -1);
	write_log(root, 1, "y-0", NULL, 0, -1);          /* no batch */
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(mk_cluster_open(root, &cfg, &c, &why), MK_INVALID_CONFIG);
	assert_non_null(strstr(why.buf, "no topic in"));
	assert_non_null(strstr(why.buf, "broker-2/x-0"));
	snprintf(path, sizeof(path), "%s/broker-1/y-0", root);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);            /* nothing changed */

	/* Without a metadata file: the line names what was found. */
	snprintf(path, sizeof(path), "%s/metadata", root);
	char *saved;
	mk_strbuf text = MK_STRBUF_INIT;
	bool missing;
	assert_int_equal(mk_file_read(path, &text, &missing), MK_OK);
	saved = strdup(text.buf);
	assert_int_equal(unlink(path), 0);
	mk_strbuf_reset(&why);
	assert_int_equal(mk_cluster_open(root, &cfg, &c, &why), MK_INVALID_CONFIG);
	assert_non_null(strstr(why.buf, "metadata is missing, but 1 partition directory under broker-2 holds data"));
	assert_non_null(strstr(why.buf, "-o rebuild_metadata"));
	assert_int_equal(mk_file_replace(path, saved, strlen(saved)), MK_OK);
	free(saved);
	mk_strbuf_release(&text);

	mk_open_options oo = { .rebuild_metadata = true };
	assert_int_equal(mk_cluster_open_with(root, &cfg, &oo, &c, &why), MK_OK);
	mk_topic *t = mk_cluster_topic(c, "x");
	assert_non_null(t);
	mk_topic_put(t);
	assert_null(mk_cluster_topic(c, "y"));          /* no batch: swept */
	assert_int_equal(mk_cluster_close(c), MK_OK);
	snprintf(path, sizeof(path), "%s/broker-1/y-0", root);
	assert_int_not_equal(stat(path, &st), 0);
	mk_strbuf_release(&why);
	tl_rmtree(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),
		cmocka_unit_test(test_strict_integers),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_missing_partition),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_rebuild_decisions),
		cmocka_unit_test(test_rebuild_gap),
		cmocka_unit_test(test_open_unknown_dirs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
