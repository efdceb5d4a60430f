/*
 * partitioner.h — where a record of a topic-level append goes.
 *
 * Keyed records: a hash of the key mod the partition count, so the same
 * key always lands on the same partition, across restarts. The hash is
 * the producer's `partitioner` setting: murmur2 (the default), the Java
 * client's default partitioner (toPositive(Utils.murmur2(key)) mod n, so
 * a key lands where a Java or kafka-python producer would put it), or
 * crc32 (zlib's CRC-32 of the key mod n, what this project used before).
 * Keyless records stick to one partition until its batch closes, then
 * move to the next (Kafka's sticky partitioner, with round-robin
 * succession).
 *
 * Pure functions; no state, no locks.
 */
#ifndef MK_PARTITIONER_H
#define MK_PARTITIONER_H

#include <stdint.h>

#include "codec.h"

typedef enum {
	MK_PARTITIONER_MURMUR2 = 0,
	MK_PARTITIONER_CRC32 = 1,
} mk_partitioner;

/* Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2): the
 * 32-bit value Java's int holds, as unsigned. */
uint32_t mk_murmur2(const uint8_t *data, size_t len);

/* The partition of a keyed record (key not null) by the given hash. */
int mk_partition_for_key(mk_bytes key, int npartitions, mk_partitioner how);

#endif
