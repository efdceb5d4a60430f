/*
 * partitioner.c — a key's partition: Kafka's murmur2 (the Java client's
 * default partitioner) or zlib's CRC-32, mod the partition count.
 */
#include "partitioner.h"

#include <assert.h>
#include <zlib.h>

/* Little-endian 32-bit word at p. */
static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/*
 * Austin Appleby's MurmurHash2 with Kafka's seed, as Utils.murmur2 writes
 * it: Java's int arithmetic is unsigned arithmetic mod 2^32, and its
 * `>>>` a logical shift, so uint32_t gives the same bits.
 */
uint32_t mk_murmur2(const uint8_t *data, size_t len)
{
	const uint32_t m = 0x5bd1e995u;
	uint32_t h = 0x9747b28cu ^ (uint32_t)len;
	size_t i = 0;
	for (; i + 4 <= len; i += 4) {
		uint32_t k = le32(data + i) * m;
		k ^= k >> 24;
		h = h * m ^ k * m;
	}
	switch (len - i) {
	case 3:
		h ^= (uint32_t)data[i + 2] << 16;
		/* fall through */
	case 2:
		h ^= (uint32_t)data[i + 1] << 8;
		/* fall through */
	case 1:
		h ^= data[i];
		h *= m;
	}
	h ^= h >> 13;
	h *= m;
	h ^= h >> 15;
	return h;
}

int mk_partition_for_key(mk_bytes key, int npartitions, mk_partitioner how)
{
	assert(key.len >= 0 && npartitions > 0);
	uint32_t h;
	if (how == MK_PARTITIONER_CRC32)
		h = (uint32_t)crc32(crc32(0L, Z_NULL, 0), key.ptr, (uInt)key.len);
	else    /* Utils.toPositive: the sign bit cleared, not negated */
		h = mk_murmur2(key.ptr, (size_t)key.len) & 0x7fffffffu;
	return (int)(h % (uint32_t)npartitions);
}
