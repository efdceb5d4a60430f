/*
 * bkafka.c — one librdkafka producer and consumer, timed, against a broker
 * list or librdkafka's own mock cluster (bench/kafka.sh; issue 26 point 8).
 *
 *     bkafka produce BROKERS|mock TOPIC COUNT ACKS
 *     bkafka consume BROKERS TOPIC COUNT
 *     bkafka both mock TOPIC COUNT ACKS     (a mock cluster lives only as
 *                                            long as its process)
 *
 * produce: COUNT records of 100 bytes (99 characters and a newline's
 * place, as bench's rows) to partition 0, acks ACKS, librdkafka's
 * defaults otherwise (linger.ms 5, batch.size 1 MB); the clock runs from
 * the first produce call to the end of rd_kafka_flush. consume: partition
 * 0 from offset 0 until COUNT records came; the clock from the assignment
 * to the last record. Each prints "mode=M records=N secs=S mbps=R".
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECORD 100

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bkafka: %s: %s\n", what, why);
	exit(1);
}

static rd_kafka_conf_t *conf_for(const char *brokers)
{
	char err[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof(err)))
		die("bootstrap.servers", err);
	return conf;
}

static void set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char err[512];
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)))
		die(k, err);
}

static int failed;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	if (m->err && !failed++)
		fprintf(stderr, "bkafka: delivery: %s\n", rd_kafka_err2str(m->err));
}

static void report(const char *mode, long n, double secs)
{
	printf("mode=%s records=%ld secs=%.6f mbps=%.1f\n", mode, n, secs,
	       (double)n * RECORD / secs / 1e6);
}

static void produce(const char *brokers, const char *topic, long n,
		    const char *acks)
{
	rd_kafka_conf_t *conf = conf_for(brokers);
	set(conf, "acks", acks);
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	char err[512];
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk)
		die("producer", err);
	char rec[RECORD];
	memset(rec, 'x', sizeof(rec));
	double t0 = now();
	for (long i = 0; i < n; i++) {
		for (;;) {
			rd_kafka_resp_err_t e = rd_kafka_producev(
				rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
				RD_KAFKA_V_VALUE(rec, RECORD - 1),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
			if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
				if (e)
					die("produce", rd_kafka_err2str(e));
				break;
			}
			rd_kafka_poll(rk, 10);
		}
		rd_kafka_poll(rk, 0);
	}
	if (rd_kafka_flush(rk, 120000))
		die("flush", "timed out");
	double secs = now() - t0;
	if (failed)
		die("produce", "deliveries failed");
	report("produce", n, secs);
	rd_kafka_destroy(rk);
}

static void consume(const char *brokers, const char *topic, long n)
{
	rd_kafka_conf_t *conf = conf_for(brokers);
	set(conf, "group.id", "bkafka");        /* assign() needs none used */
	set(conf, "enable.auto.commit", "false");
	set(conf, "auto.offset.reset", "earliest");
	char err[512];
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk)
		die("consumer", err);
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = 0;
	double t0 = now();
	if (rd_kafka_assign(rk, parts))
		die("assign", "failed");
	long got = 0;
	while (got < n) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 1000);
		if (!m)
			continue;
		if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
			die("consume", rd_kafka_message_errstr(m));
		if (!m->err) {
			if (!got && m->offset != 0)
				fprintf(stderr, "bkafka: first offset %lld\n",
					(long long)m->offset);
			got++;
		}
		rd_kafka_message_destroy(m);
	}
	double secs = now() - t0;
	report("consume", got, secs);
	rd_kafka_topic_partition_list_destroy(parts);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: bkafka produce|consume|both BROKERS|mock TOPIC COUNT [ACKS]\n");
		return 2;
	}
	const char *mode = argv[1], *brokers = argv[2], *topic = argv[3];
	long n = atol(argv[4]);
	const char *acks = argc > 5 ? argv[5] : "1";
	rd_kafka_t *host = NULL;
	rd_kafka_mock_cluster_t *mc = NULL;
	if (!strcmp(brokers, "mock")) {
		char err[512];
		host = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof(err));
		if (!host || !(mc = rd_kafka_mock_cluster_new(host, 1)))
			die("mock cluster", err);
		rd_kafka_mock_topic_create(mc, topic, 1, 1);
		brokers = rd_kafka_mock_cluster_bootstraps(mc);
	}
	if (!strcmp(mode, "produce") || !strcmp(mode, "both"))
		produce(brokers, topic, n, acks);
	if (!strcmp(mode, "consume") || !strcmp(mode, "both"))
		consume(brokers, topic, n);
	if (mc)
		rd_kafka_mock_cluster_destroy(mc);
	if (host)
		rd_kafka_destroy(host);
	return 0;
}
