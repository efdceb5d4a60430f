/* Configuration: defaults, INI loading, validation, topic overrides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "config.h"

static char *write_ini(const char *text)
{
	char *path = strdup("/tmp/mk-config-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static mk_err load(const char *text, mk_config *cfg, mk_strbuf *why)
{
	char *path = write_ini(text);
	mk_config_defaults(cfg);
	mk_err err = mk_config_load(cfg, path, why);
	unlink(path);
	free(path);
	return err;
}

static void defaults_match_spec(void **state)
{
	(void)state;
	mk_config c;
	mk_config_defaults(&c);
	assert_int_equal(c.nbrokers, 1);
	assert_int_equal(c.broker_ids[0], 1);
	assert_int_equal(c.num_partitions, 1);
	assert_int_equal(c.log.segment_bytes, 1048576);
	assert_int_equal(c.log.index_interval_bytes, 4096);
	assert_int_equal(c.log.message_max_bytes, 1048588);
	assert_int_equal(c.acks, -1);
	assert_int_equal(c.request_timeout_ms, 30000);
	assert_int_equal(c.replica_lag_time_max_ms, 10000);
	assert_int_equal(c.truncation, MK_TRUNCATE_EPOCH);
	assert_false(c.manual_clock);
}

static void loads_every_section(void **state)
{
	(void)state;
	mk_config c;
	mk_strbuf why = MK_STRBUF_INIT;
	assert_int_equal(load("[cluster]\nbrokers = 1, 2,3\nmin.insync.replicas = 2\n"
			      "default.replication.factor = 3\nclock = manual ; comment\n"
			      "unclean.leader.election.enable = true\n"
			      "[replication]\nmode = auto\ntruncation = hw\nfetch.interval.ms = 5\n"
			      "[log]\nsegment.bytes = 4096\ncleanup.policy = compact,delete\n"
			      "retention.ms = 60000\n"
			      "[producer]\nacks = 1\nlinger.ms = 7\nbatch.size = 100\n"
			      "[group]\nsession.timeout.ms = 500\n", &c, &why), MK_OK);
	assert_int_equal(c.nbrokers, 3);
	assert_int_equal(c.broker_ids[2], 3);
	assert_int_equal(c.log.min_insync_replicas, 2);
	assert_int_equal(c.default_replication_factor, 3);
	assert_true(c.manual_clock);
	assert_true(c.log.unclean_leader_election);
	assert_true(c.auto_replication);
	assert_int_equal(c.truncation, MK_TRUNCATE_HW);
	assert_int_equal(c.fetch_interval_ms, 5);
	assert_int_equal(c.log.segment_bytes, 4096);
	assert_int_equal(c.log.cleanup_policy, MK_CLEANUP_COMPACT | MK_CLEANUP_DELETE);
	assert_int_equal(c.log.retention_ms, 60000);
	assert_int_equal(c.acks, 1);
	assert_int_equal(c.linger_ms, 7);
	assert_int_equal(c.batch_size, 100);
	assert_int_equal(c.session_timeout_ms, 500);
	mk_strbuf_release(&why);
}

static void rejects_bad_input(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"[cluster]\nbrokers = \n",
		"[cluster]\nbrokers = 1,1\n",
		"[cluster]\nbrokers = a\n",
		"[cluster]\nnum.partitions = 0\n",
		"[cluster]\nclock = sundial\n",
		"[cluster]\nunknown.key = 1\n",
		"[log]\nsegment.bytes = 12x\n",
		"[log]\nretention.ms = -2\n",
		"[log]\ncleanup.policy = shred\n",
		"[producer]\nacks = 2\n",
		"[replication]\ntruncation = never\n",
		"[cluster]\ndefault.replication.factor = 2\n",
		"[cluster]\nmin.insync.replicas = 3\nbrokers = 1,2\n",
		"[cluster]\nunclean.leader.election.enable = maybe\n",
		"[network]\nlisteners = 127.0.0.1\n",
		"[network]\nlisteners = :9092\n",
		"[network]\nlisteners = 127.0.0.1:65536\n",
		"[network]\nlisteners = SSL://127.0.0.1:9093\n",
		"[network]\nlisteners = SASL_PLAINTEXT://host:9093\n",
		"[network]\nlisteners = a b:9092\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mk_config c;
		mk_strbuf why = MK_STRBUF_INIT;
		assert_int_equal(load(bad[i], &c, &why), MK_INVALID_CONFIG);
		assert_true(why.len > 0);     /* one clear line says why */
		assert_null(strchr(why.buf, '\n'));
		mk_strbuf_release(&why);
	}
}

static void missing_file_is_an_error(void **state)
{
	(void)state;
	mk_config c;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_config_defaults(&c);
	assert_int_equal(mk_config_load(&c, "/nonexistent/minikafka.ini", &why),
			 MK_INVALID_CONFIG);
	assert_non_null(strstr(why.buf, "/nonexistent/minikafka.ini"));
	mk_strbuf_release(&why);
}

static void format_round_trips(void **state)
{
	(void)state;
	mk_config c, d;
	mk_strbuf text = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	assert_int_equal(load("[cluster]\nbrokers = 4,5\n[producer]\nacks = 0\n"
			      "[log]\ncleanup.policy = compact\n", &c, &why), MK_OK);
	mk_config_format(&c, &text);
	assert_non_null(strstr(text.buf, "brokers = 4,5\n"));
	assert_non_null(strstr(text.buf, "acks = 0\n"));
	assert_int_equal(load(text.buf, &d, &why), MK_OK);
	assert_int_equal(d.nbrokers, 2);
	assert_int_equal(d.acks, 0);
	assert_int_equal(d.log.cleanup_policy, MK_CLEANUP_COMPACT);
	mk_strbuf_release(&text);
	mk_strbuf_release(&why);
}

static void listeners(void **state)
{
	(void)state;
	mk_config c, d;
	mk_strbuf text = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_config_defaults(&c);
	assert_string_equal(c.listen_host, "127.0.0.1");   /* the default */
	assert_int_equal(c.listen_port, 9092);
	assert_false(c.listen_off);
	assert_int_equal(load("[network]\nlisteners = PLAINTEXT://localhost:0\n", &c, &why), MK_OK);
	assert_string_equal(c.listen_host, "localhost");
	assert_int_equal(c.listen_port, 0);
	mk_config_format(&c, &text);
	assert_non_null(strstr(text.buf, "[network]\nlisteners = localhost:0\n"));
	assert_int_equal(load(text.buf, &d, &why), MK_OK);
	assert_int_equal(d.listen_port, 0);
	assert_int_equal(load("[network]\nlisteners = off\n", &c, &why), MK_OK);
	assert_true(c.listen_off);
	assert_int_equal(mk_config_set(&c, "network:listeners", "0.0.0.0:19092", &why), MK_OK);
	assert_false(c.listen_off);
	assert_int_equal(c.listen_port, 19092);
	assert_int_equal(mk_config_set(&c, "network:listeners", "SSL://x:1", &why), MK_INVALID_CONFIG);
	assert_non_null(strstr(why.buf, "only PLAINTEXT"));
	assert_int_equal(c.listen_port, 19092);     /* refused: nothing changed */
	mk_strbuf_release(&text);
	mk_strbuf_release(&why);
}

static void topic_overrides(void **state)
{
	(void)state;
	mk_config c;
	mk_topic_config tc;
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_config_defaults(&c);
	mk_topic_config_init(&tc, &c);
	assert_int_equal(mk_topic_config_set(&tc, "segment.bytes", "2048", &why), MK_OK);
	assert_int_equal(mk_topic_config_set(&tc, "unclean.leader.election.enable", "true", &why), MK_OK);
	assert_int_equal(mk_topic_config_set(&tc, "acks", "1", &why), MK_INVALID_CONFIG);
	assert_int_equal(mk_topic_config_set(&tc, "segment.bytes", "1", &why), MK_INVALID_CONFIG);
	assert_int_equal(tc.segment_bytes, 2048);   /* a refused value changes nothing */
	mk_topic_config_format_overrides(&tc, &out);
	assert_string_equal(out.buf, "unclean.leader.election.enable=true segment.bytes=2048");
	/* Cluster defaults move non-overridden keys only. */
	c.log.segment_bytes = 99999;
	c.log.retention_ms = 5;
	mk_topic_config_rebase(&tc, &c);
	assert_int_equal(tc.segment_bytes, 2048);
	assert_int_equal(tc.retention_ms, 5);
	mk_strbuf_reset(&out);
	mk_topic_config_format(&tc, &out);
	assert_non_null(strstr(out.buf, "retention.ms=5\n"));
	assert_non_null(strstr(out.buf, "min.insync.replicas=1\n"));
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

/* Deadlines saturate: a huge timeout never wraps into the past. */
static void deadlines_saturate(void **state)
{
	(void)state;
	assert_int_equal(mk_deadline(5, 10), 15);
	assert_int_equal(mk_deadline(INT64_MAX - 5, 10), INT64_MAX);
	assert_int_equal(mk_deadline(1000, INT64_MAX), INT64_MAX);
	assert_int_equal(mk_deadline(-3, 0), -3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_match_spec),
		cmocka_unit_test(loads_every_section),
		cmocka_unit_test(rejects_bad_input),
		cmocka_unit_test(missing_file_is_an_error),
		cmocka_unit_test(format_round_trips),
		cmocka_unit_test(listeners),
		cmocka_unit_test(topic_overrides),
		cmocka_unit_test(deadlines_saturate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
