/*
 * fuzz_control.c — libFuzzer target for the control files' line parsers
 * (fs/nodes.c: /ctl, /clock, /topics/T/config, /brokers/fetch,
 * /brokers/B/{fetch,crash,restart,promote}, /producers/P/init), called
 * through the node table without a mount, as tests/unit/test_nodes.c does.
 *
 * A cluster of two brokers on the manual clock, with topic t (2
 * partitions, replication factor 2) and producer p, lives in a scratch
 * data directory (under /dev/shm when there is one, so that metadata
 * fsyncs cost little). The first input byte picks the control file, the
 * rest is what is written to it. Every refusal must say why; whatever was
 * written, the cluster must still resolve and answer a read of t's first
 * partition afterwards. The commands change the cluster (topics come and
 * go, brokers crash and restart, the clock moves), so it is thrown away
 * and made again every RESET_EVERY inputs to keep the state and the disk
 * small.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "fileio.h"
#include "nodes.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_control: check failed: %s (line %d)\n", \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

#define RESET_EVERY 200

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const files[] = {
	"/ctl", "/clock", "/topics/t/config", "/brokers/fetch",
	"/brokers/1/fetch", "/brokers/2/fetch", "/brokers/1/crash",
	"/brokers/2/crash", "/brokers/1/restart", "/brokers/2/restart",
	"/brokers/1/promote", "/brokers/2/promote", "/producers/p/init",
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static char dir[128];
static mk_cluster *cluster;
static mkfs fs;
static int runs;

static void make_cluster(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof(dir), "%s/mk-fuzz-control-XXXXXX", base);
	CHECK(mkdtemp(dir));
	mk_config cfg;
	mk_config_defaults(&cfg);
	cfg.nbrokers = 2;
	cfg.broker_ids[0] = 1;
	cfg.broker_ids[1] = 2;
	cfg.manual_clock = 1;
	CHECK(mk_cluster_open(dir, &cfg, &cluster, NULL) == MK_OK);
	CHECK(mk_cluster_create_topic(cluster, "t", 2, 2, NULL, 0, NULL) ==
	      MK_OK);
	CHECK(mk_cluster_producer_create(cluster, "p", NULL) == MK_OK);
	memset(&fs, 0, sizeof(fs));
	fs.cluster = cluster;
	fs.readme = (char *)"readme\n";
}

static void drop_cluster(void)
{
	mk_cluster_close(cluster);
	cluster = NULL;
	mk_remove_tree(dir);
}

/* libFuzzer ends with exit(): leave no data directory behind. */
static void at_exit(void)
{
	if (cluster)
		drop_cluster();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 4096)
		return 0;
	if (cluster && runs++ % RESET_EVERY == RESET_EVERY - 1)
		drop_cluster();
	if (!cluster) {
		if (runs <= 1)
			atexit(at_exit);
		make_cluster();
	}

	const char *path = files[data[0] % NFILES];
	node_ref ref;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_resolve(&fs, path, &ref, NULL);
	if (err) {
		/* Only t's config can be gone (t deleted by an earlier run). */
		CHECK(!strcmp(path, "/topics/t/config"));
		mk_strbuf_release(&why);
		return 0;
	}
	/* As the serving layer's job runs it (fs/ops.c). */
	mk_coord_call call = { 0 };
	size_t done = 0;
	err = mk_node_control(&fs, &ref, (const char *)data + 1, size - 1,
			      &done, &call, &why);
	while (!err && (err = mk_coord_call_wait(&call, &why)) == MK_OK &&
	       done < size - 1)
		err = mk_node_control(&fs, &ref, (const char *)data + 1, size - 1,
				      &done, &call, &why);
	if (err)
		CHECK(why.len > 0);   /* every refusal says why */
	mk_node_ref_release(&ref);

	/* The cluster still answers. */
	if (mk_resolve(&fs, "/topics/t/0/leo", &ref, NULL) == MK_OK) {
		mk_strbuf out = MK_STRBUF_INIT;
		mk_strbuf_reset(&why);
		CHECK(ref.def->read(&fs, &ref, &out, &why) == MK_OK);
		mk_strbuf_release(&out);
		mk_node_ref_release(&ref);
	}
	mk_strbuf_release(&why);
	return 0;
}
