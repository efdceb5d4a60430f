/*
 * bstamp — what it costs the leader to stamp a batch with its base offset
 * and leader epoch, before (frame version 1) and after (version 2).
 *
 * Version 1 kept both fields inside the CRC'd payload, so the leader's
 * mk_frame_assign patched the CRC for the 12 bytes it changed: zlib's
 * crc32 of the XOR difference, carried over the rest of the payload with
 * crc32_combine. Version 2 (Kafka's v2 layout) puts them before the CRC'd
 * region, and stamping is two stores. Both are timed here in the same run,
 * on the same frames, as the log's append path does them: the header check
 * (mk_frame_decode_header without the CRC) and then the stamp. The v1 patch
 * is reproduced below from the old codec (it is no longer in core).
 *
 * The scale is building the frame (builder: records and one CRC pass),
 * which every append pays anyway: the rows give ns per stamp and that as a
 * share of the build.
 *
 * Usage: bstamp [iterations]   (default 200000 stamps per row)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "codec.h"
#include "parse.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The v1 CRC fix-up of the 12 bytes at payload offset `at` (3, in v1). */
static uint32_t v1_crc_patch(uint32_t crc, const uint8_t *payload,
			     size_t plen, size_t at, const uint8_t *old,
			     size_t n)
{
	uint8_t d[16];
	static const uint8_t zero[16];
	for (size_t i = 0; i < n; i++)
		d[i] = old[i] ^ payload[at + i];
	uLong lin = crc32(crc32(0L, Z_NULL, 0), d, (uInt)n) ^
		    crc32(crc32(0L, Z_NULL, 0), zero, (uInt)n);
	return crc ^ (uint32_t)crc32_combine(lin, 0, (z_off_t)(plen - at - n));
}

/* v1's assign: the same 12 bytes rewritten, inside the payload, and the
 * CRC patched. Run on a v2 frame's payload (same length, same work). */
static void v1_assign(uint8_t *frame, size_t len, int64_t base, int32_t epoch)
{
	uint8_t *pl = frame + MK_FRAME_HEADER;
	size_t plen = len - MK_FRAME_HEADER, at = 3;
	uint8_t old[12];
	memcpy(old, pl + at, sizeof(old));
	mk_store_be64(pl + at, (uint64_t)base);
	mk_store_be32(pl + at + 8, (uint32_t)epoch);
	mk_store_be32(frame + MK_FRAME_OFF_CRC,
		      v1_crc_patch(mk_load_be32(frame + MK_FRAME_OFF_CRC), pl,
				   plen, at, old, sizeof(old)));
}

static volatile uint64_t sink;

static void build(mk_batch_builder *b, const mk_batch_meta *m, int n,
		  const char *value)
{
	mk_builder_reset(b, m);
	for (int i = 0; i < n; i++)
		mk_builder_add(b, 1000 + i, MK_BYTES_NULL,
			       mk_bytes_of(value, 99), NULL, 0);
	mk_builder_finish(b);
}

static void row(int records, int64_t iters)
{
	char value[100];
	memset(value, 'x', sizeof(value));
	mk_batch_meta m = { 0, 0, 0, -1, -1, -1, 0, false, 0 };
	mk_batch_builder b;
	mk_builder_init(&b, &m);

	int64_t builds = iters / records + 10;
	double t0 = now_ns();
	for (int64_t i = 0; i < builds; i++)
		build(&b, &m, records, value);
	double build_ns = (now_ns() - t0) / builds;

	uint8_t *f = (uint8_t *)b.frame.buf;
	size_t len = b.frame.len;
	double stamp_ns[2];
	for (int v = 0; v < 2; v++) {
		t0 = now_ns();
		for (int64_t i = 0; i < iters; i++) {
			mk_batch_view bv;
			if (mk_frame_decode_header(f, len, 0, false, &bv, NULL))
				abort();
			if (v == 0)
				v1_assign(f, len, i, (int32_t)(i & 7));
			else
				mk_frame_assign(f, len, i, (int32_t)(i & 7));
			sink += f[MK_FRAME_OFF_CRC];
		}
		stamp_ns[v] = (now_ns() - t0) / iters;
	}
	/* The v2 stamp must leave a frame that decodes. */
	mk_batch_view bv;
	build(&b, &m, records, value);
	mk_frame_assign((uint8_t *)b.frame.buf, b.frame.len, 77, 3);
	if (mk_frame_decode((uint8_t *)b.frame.buf, b.frame.len, 0, &bv, NULL))
		abort();
	printf("%5d x 100 B (%7zu B frame) | build %9.0f ns | "
	       "stamp v1 %6.1f ns (%.4f of build) | stamp v2 %6.1f ns "
	       "(%.4f of build) | v2/v1 %.3f\n",
	       records, len, build_ns, stamp_ns[0], stamp_ns[0] / build_ns,
	       stamp_ns[1], stamp_ns[1] / build_ns,
	       stamp_ns[1] / stamp_ns[0]);
	mk_builder_release(&b);
}

int main(int argc, char **argv)
{
	int64_t iters = 200000;
	if (argc > 1 && !mk_parse_range(argv[1], 1, INT32_MAX, &iters)) {
		fprintf(stderr, "usage: bstamp [iterations]\n");
		return 2;
	}
	row(1, iters);
	row(10, iters);
	row(1310, iters);
	return 0;
}
