#include "partitioner.h"

#include <assert.h>
#include <zlib.h>

int mk_partition_for_key(mk_bytes key, int npartitions)
{
	assert(key.len >= 0 && npartitions > 0);
	uLong crc = crc32(0L, Z_NULL, 0);
	if (key.len)
		crc = crc32(crc, key.ptr, (uInt)key.len);
	return (int)(crc % (uLong)npartitions);
}
