/*
 * partitioner.h — where a record of a topic-level append goes.
 *
 * Keyed records: crc32(key) mod the partition count, so the same key
 * always lands on the same partition, across restarts. Keyless records
 * stick to one partition until its batch closes, then move to the next
 * (Kafka's sticky partitioner, with round-robin succession).
 */
#ifndef MK_PARTITIONER_H
#define MK_PARTITIONER_H

#include <stdint.h>

#include "codec.h"

/* The partition of a keyed record (key not null). */
int mk_partition_for_key(mk_bytes key, int npartitions);

#endif
