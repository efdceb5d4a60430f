/*
 * fuzz_metadata.c — libFuzzer target for the metadata file's parser
 * (core/replication/metadata.c, mk_metadata_parse).
 *
 * The input (cut at its first NUL) is a metadata file. A refusal must be
 * MK_INVALID_CONFIG with a reason and leave nothing behind (the outputs
 * empty). An accepted file must hold only what the format allows: broker
 * ids >= 0 and at most MK_MAX_BROKERS of them, topics with valid names,
 * 1..1024 partitions and a replication factor in 1..MK_MAX_BROKERS, every
 * partition present with a leader of -1 or >= 0, an epoch >= 0, 1..16
 * replicas and 0..16 ISR members, all ids >= 0; a clock and a next producer
 * id >= 0; producers with ids >= 0 and epochs in 0..INT16_MAX; each
 * broker, topic and producer once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata.h"
#include "topic_name.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_metadata: check failed: %s (line %d)\n", \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ids(const int *ids, int n, int lo, int hi)
{
	CHECK(n >= lo && n <= hi);
	for (int i = 0; i < n; i++)
		CHECK(ids[i] >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	mk_metadata md;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_err err = mk_metadata_parse(text, &md, &why);
	if (err) {
		CHECK(err == MK_INVALID_CONFIG);
		CHECK(why.len > 0);
		CHECK(md.ntopics == 0 && md.topics == NULL);
		CHECK(md.nproducers == 0 && md.producers == NULL);
		goto out;
	}
	CHECK(md.present);
	check_ids(md.broker_ids, md.nbrokers, 0, MK_MAX_BROKERS);
	for (int i = 0; i < md.nbrokers; i++)
		for (int j = 0; j < i; j++)
			CHECK(md.broker_ids[i] != md.broker_ids[j]);
	CHECK(md.clock_ms >= 0 && md.next_producer_id >= 0);
	for (size_t i = 0; i < md.ntopics; i++) {
		const mk_metadata_topic *t = &md.topics[i];
		CHECK(mk_topic_name_valid(t->name));
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(md.topics[j].name, t->name) != 0);
		CHECK(t->npartitions >= 1 && t->npartitions <= 1024);
		CHECK(t->rf >= 1 && t->rf <= MK_MAX_BROKERS);
		for (size_t k = 0; k < t->noverrides; k++)
			CHECK(t->overrides[k] && t->overrides[k][0]);
		for (int p = 0; p < t->npartitions; p++) {
			const mk_partition_state *st = &t->parts[p];
			CHECK(st->leader >= -1);
			CHECK(st->leader_epoch >= 0);
			check_ids(st->brokers, st->nreplicas, 1, MK_MAX_BROKERS);
			check_ids(st->isr, st->nisr, 0, MK_MAX_BROKERS);
		}
	}
	for (size_t i = 0; i < md.nproducers; i++) {
		CHECK(mk_topic_name_valid(md.producers[i].name));
		CHECK(md.producers[i].id >= 0 && md.producers[i].epoch >= 0);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(md.producers[i].name, md.producers[j].name));
	}
	mk_metadata_free(&md);
out:
	mk_strbuf_release(&why);
	free(text);
	return 0;
}
