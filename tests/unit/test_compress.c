/*
 * test_compress.c — Kafka's compression codecs: names and configuration
 * words, round trips of every codec (empty, small, 1 MiB compressible and
 * incompressible, every level range), the bytes of each format as Kafka's
 * writers lay them out, what the readers accept besides (raw snappy
 * blocks, concatenated streams, Java's gzip header), damage (every cut,
 * every flipped byte: refused or decoded, never a crash; the damage a
 * format can see: refused), the bound (exact, and bombs of 64 MiB of
 * zeros refused at 1 MiB with little memory), and calls from several
 * threads at once.
 *
 * Compressed input is decoded from exactly sized heap copies, so that
 * AddressSanitizer and valgrind see any read past the end. Bombs are
 * built by streaming a small buffer of zeros through each library, so
 * that no 64 MiB buffer is ever resident and the peak resident size
 * measures the decoder alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "compress.h"

/* The codecs that compress, and all of them. */
static const int zcodecs[] = { MK_COMPRESS_GZIP, MK_COMPRESS_SNAPPY,
			       MK_COMPRESS_LZ4, MK_COMPRESS_ZSTD };
static const int codecs[] = { MK_COMPRESS_NONE, MK_COMPRESS_GZIP,
			      MK_COMPRESS_SNAPPY, MK_COMPRESS_LZ4,
			      MK_COMPRESS_ZSTD };
#define NZ (sizeof zcodecs / sizeof zcodecs[0])
#define NC (sizeof codecs / sizeof codecs[0])

#define MIB (1024u * 1024)

/* ---- helpers ------------------------------------------------------------- */

/* Text of words: compressible, as records are. */
static void text(mk_strbuf *sb, size_t n, uint32_t seed)
{
	static const char *const words[] = {
		"order", "id", "=", "customer", "total", "42", "EUR", "shipped",
		"pending", ",", "{", "}", "\"sku\":", "7731", "kafka", "\n",
	};
	while (sb->len < n) {
		seed = seed * 1103515245u + 12345u;
		mk_strbuf_addstr(sb, words[(seed >> 16) % 16]);
	}
	mk_strbuf_setlen(sb, n);
}

/* Pseudo-random bytes (xorshift): incompressible. */
static void noise(mk_strbuf *sb, size_t n, uint64_t seed)
{
	mk_strbuf_grow(sb, n);
	for (size_t i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		sb->buf[sb->len + i] = (char)(seed >> 24);
	}
	mk_strbuf_setlen(sb, sb->len + n);
}

static void compress_ok(int codec, int level, const void *in, size_t len,
			mk_strbuf *out)
{
	assert_int_equal(mk_compress(codec, level, in, len, out), MK_OK);
}

/* mk_decompress of an exactly sized heap copy of p[0..n). */
static mk_err decode(int codec, const void *p, size_t n, size_t max,
		     mk_strbuf *out, mk_strbuf *why)
{
	uint8_t *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	if (n)
		memcpy(copy, p, n);
	mk_err err = mk_decompress(codec, copy, n, max, out, why);
	free(copy);
	return err;
}

/* Decompress what must decode, to exactly want. */
static void expect_decodes(int codec, const void *p, size_t n,
			   const void *want, size_t want_len)
{
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_err err = decode(codec, p, n, want_len, &out, &why);
	if (err)
		fail_msg("%s: %s: %s", mk_compress_name(codec),
			 mk_err_name(err), why.buf);
	assert_int_equal(out.len, want_len);
	if (want_len)
		assert_memory_equal(out.buf, want, want_len);
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

/* Decompress what must be refused with err, leaving out as it was (it
 * holds a prefix) and giving a reason that names the codec. */
static void expect_refused(int codec, const void *p, size_t n, size_t max,
			   mk_err want)
{
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_strbuf_addstr(&out, "prefix");
	mk_err err = decode(codec, p, n, max, &out, &why);
	if (err != want)
		fail_msg("%s, %zu bytes: %s, not %s (%s)",
			 mk_compress_name(codec), n, mk_err_name(err),
			 mk_err_name(want), why.buf);
	assert_string_equal(out.buf, "prefix");
	assert_non_null(strstr(why.buf, mk_compress_name(codec)));
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

static void round_trip(int codec, int level, const void *in, size_t len)
{
	mk_strbuf z = MK_STRBUF_INIT;
	compress_ok(codec, level, in, len, &z);
	expect_decodes(codec, z.buf, z.len, in, len);
	mk_strbuf_release(&z);
}

/* ---- names, levels ------------------------------------------------ */

static void test_names(void **state)
{
	(void)state;
	static const char *const lower[] = { "none", "gzip", "snappy", "lz4",
					     "zstd" };
	for (int c = 0; c < MK_COMPRESS_COUNT; c++) {
		assert_true(mk_compress_known(c));
		assert_string_equal(mk_compress_name(c), lower[c]);
	}
	assert_int_equal(MK_COMPRESS_GZIP, 1);
	assert_int_equal(MK_COMPRESS_SNAPPY, 2);
	assert_int_equal(MK_COMPRESS_LZ4, 3);
	assert_int_equal(MK_COMPRESS_ZSTD, 4);
	assert_int_equal(MK_COMPRESS_ID_MASK, 7);
	for (int c = 5; c <= 8; c++) {
		assert_false(mk_compress_known(c));
		assert_string_equal(mk_compress_name(c), "unknown");
	}
	assert_false(mk_compress_known(-1));
	assert_string_equal(mk_compress_name(-1), "unknown");
}

static void test_levels(void **state)
{
	(void)state;
	static const struct {
		int codec, level;
		mk_err want;
	} cases[] = {
		{ MK_COMPRESS_GZIP, 1, MK_OK },
		{ MK_COMPRESS_GZIP, 9, MK_OK },
		{ MK_COMPRESS_GZIP, 0, MK_INVALID_CONFIG },
		{ MK_COMPRESS_GZIP, 10, MK_INVALID_CONFIG },
		{ MK_COMPRESS_LZ4, 0, MK_OK },
		{ MK_COMPRESS_LZ4, 17, MK_OK },
		{ MK_COMPRESS_LZ4, 18, MK_INVALID_CONFIG },
		{ MK_COMPRESS_LZ4, -2, MK_INVALID_CONFIG },
		{ MK_COMPRESS_ZSTD, 22, MK_OK },
		{ MK_COMPRESS_ZSTD, -7, MK_OK },
		{ MK_COMPRESS_ZSTD, 23, MK_INVALID_CONFIG },
		{ MK_COMPRESS_SNAPPY, 5, MK_OK },     /* no level: ignored */
		{ MK_COMPRESS_NONE, 5, MK_OK },
		{ 5, MK_COMPRESS_LEVEL_DEFAULT, MK_INVALID_REQUEST },
		{ -1, MK_COMPRESS_LEVEL_DEFAULT, MK_INVALID_REQUEST },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mk_strbuf why = MK_STRBUF_INIT;
		assert_int_equal(mk_compress_check_level(cases[i].codec,
							 cases[i].level, &why),
				 cases[i].want);
		assert_true((why.len > 0) == (cases[i].want != MK_OK));
		mk_strbuf_release(&why);
		mk_strbuf z = MK_STRBUF_INIT;
		mk_strbuf_addstr(&z, "prefix");
		assert_int_equal(mk_compress(cases[i].codec, cases[i].level,
					     (const uint8_t *)"abc", 3, &z),
				 cases[i].want);
		if (cases[i].want)
			assert_string_equal(z.buf, "prefix");
		mk_strbuf_release(&z);
	}
	for (size_t c = 0; c < NC; c++)
		assert_int_equal(mk_compress_check_level(
				 codecs[c], MK_COMPRESS_LEVEL_DEFAULT, NULL),
				 MK_OK);
}

/* ---- round trips --------------------------------------------------------- */

static void test_round_trip_empty(void **state)
{
	(void)state;
	for (size_t c = 0; c < NC; c++) {
		round_trip(codecs[c], MK_COMPRESS_LEVEL_DEFAULT, NULL, 0);
		round_trip(codecs[c], MK_COMPRESS_LEVEL_DEFAULT, "", 0);
	}
	/* snappy's empty stream is the xerial header alone, as
	 * SnappyOutputStream closes one. */
	mk_strbuf z = MK_STRBUF_INIT;
	compress_ok(MK_COMPRESS_SNAPPY, -1, NULL, 0, &z);
	assert_int_equal(z.len, 16);
	mk_strbuf_release(&z);
}

static void test_round_trip_small(void **state)
{
	(void)state;
	static const char *const inputs[] = { "x", "hello kafka",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
	for (size_t c = 0; c < NC; c++)
		for (size_t i = 0; i < 3; i++)
			round_trip(codecs[c], -1, inputs[i], strlen(inputs[i]));
}

static void test_round_trip_1mib(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT, r = MK_STRBUF_INIT;
	text(&t, MIB, 1);
	noise(&r, MIB, 88172645463325252ull);
	for (size_t c = 0; c < NC; c++) {
		round_trip(codecs[c], -1, t.buf, t.len);
		round_trip(codecs[c], -1, r.buf, r.len);
	}
	/* The compressing codecs do compress text. */
	for (size_t c = 0; c < NZ; c++) {
		mk_strbuf z = MK_STRBUF_INIT;
		compress_ok(zcodecs[c], -1, t.buf, t.len, &z);
		assert_true(z.len < t.len / 2);
		mk_strbuf_release(&z);
	}
	mk_strbuf_release(&t);
	mk_strbuf_release(&r);
}

static void test_round_trip_levels(void **state)
{
	(void)state;
	static const struct {
		int codec, level;
	} cases[] = {
		{ MK_COMPRESS_GZIP, 1 }, { MK_COMPRESS_GZIP, 9 },
		{ MK_COMPRESS_LZ4, 1 }, { MK_COMPRESS_LZ4, 9 },
		{ MK_COMPRESS_LZ4, 17 }, { MK_COMPRESS_ZSTD, -5 },
		{ MK_COMPRESS_ZSTD, 1 }, { MK_COMPRESS_ZSTD, 19 },
	};
	mk_strbuf t = MK_STRBUF_INIT;
	text(&t, 100000, 2);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		round_trip(cases[i].codec, cases[i].level, t.buf, t.len);
	mk_strbuf_release(&t);
}

/* Compression and decompression append; a failure leaves what was there. */
static void test_appends(void **state)
{
	(void)state;
	for (size_t c = 0; c < NC; c++) {
		mk_strbuf z = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
		mk_strbuf_addstr(&z, "head");
		compress_ok(codecs[c], -1, "payload", 7, &z);
		assert_memory_equal(z.buf, "head", 4);
		mk_strbuf_addstr(&out, "before:");
		assert_int_equal(mk_decompress(codecs[c],
					       (const uint8_t *)z.buf + 4,
					       z.len - 4, 7, &out, NULL),
				 MK_OK);
		assert_string_equal(out.buf, "before:payload");
		mk_strbuf_release(&z);
		mk_strbuf_release(&out);
	}
}

/* ---- the formats --------------------------------------------------------- */

static void test_format_gzip(void **state)
{
	(void)state;
	mk_strbuf z = MK_STRBUF_INIT;
	compress_ok(MK_COMPRESS_GZIP, -1, "records", 7, &z);
	const uint8_t *p = (const uint8_t *)z.buf;
	assert_int_equal(p[0], 0x1f);
	assert_int_equal(p[1], 0x8b);
	assert_int_equal(p[2], 8);                      /* deflate */
	/* The trailer: CRC-32 and size, little-endian. */
	uint32_t crc = (uint32_t)crc32(0, (const Bytef *)"records", 7);
	assert_int_equal(p[z.len - 8] | p[z.len - 7] << 8 |
			 p[z.len - 6] << 16 | (uint32_t)p[z.len - 5] << 24, crc);
	assert_int_equal(p[z.len - 4], 7);
	mk_strbuf_release(&z);
}

/* As Java's GZIPOutputStream writes: a 10-byte header of its own (OS 0),
 * raw deflate, CRC-32 and size. */
static void test_gzip_java_header(void **state)
{
	(void)state;
	static const uint8_t header[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0 };
	mk_strbuf t = MK_STRBUF_INIT, z = MK_STRBUF_INIT;
	text(&t, 5000, 3);
	mk_strbuf_add(&z, header, sizeof header);
	z_stream s;
	memset(&s, 0, sizeof s);
	assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, -15, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	mk_strbuf_grow(&z, deflateBound(&s, t.len));
	s.next_in = (Bytef *)t.buf;
	s.avail_in = (uInt)t.len;
	s.next_out = (Bytef *)z.buf + z.len;
	s.avail_out = (uInt)(z.alloc - z.len - 1);
	assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
	mk_strbuf_setlen(&z, z.len + s.total_out);
	deflateEnd(&s);
	uint32_t crc = (uint32_t)crc32(0, (const Bytef *)t.buf, (uInt)t.len);
	for (int i = 0; i < 4; i++)
		mk_strbuf_addch(&z, (int)(crc >> (8 * i)) & 0xff);
	for (int i = 0; i < 4; i++)
		mk_strbuf_addch(&z, (int)(t.len >> (8 * i)) & 0xff);
	expect_decodes(MK_COMPRESS_GZIP, z.buf, z.len, t.buf, t.len);
	mk_strbuf_release(&t);
	mk_strbuf_release(&z);
}

/* The xerial header, then one block per 32 KiB of input. */
static void test_format_xerial(void **state)
{
	(void)state;
	static const uint8_t header[16] = { 0x82, 'S', 'N', 'A', 'P', 'P',
					    'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1 };
	mk_strbuf t = MK_STRBUF_INIT, z = MK_STRBUF_INIT;
	text(&t, 100 * 1024, 4);
	compress_ok(MK_COMPRESS_SNAPPY, -1, t.buf, t.len, &z);
	assert_memory_equal(z.buf, header, 16);
	size_t pos = 16, blocks = 0, total = 0;
	while (pos < z.len) {
		const uint8_t *p = (const uint8_t *)z.buf + pos;
		uint32_t n = mk_load_be32(p);
		size_t ulen;
		assert_int_equal(snappy_uncompressed_length((const char *)p + 4,
							    n, &ulen),
				 SNAPPY_OK);
		assert_int_equal(ulen, blocks < 3 ? 32768 : 4096);
		total += ulen;
		pos += 4 + n;
		blocks++;
	}
	assert_int_equal(pos, z.len);
	assert_int_equal(blocks, 4);
	assert_int_equal(total, t.len);
	mk_strbuf_release(&t);
	mk_strbuf_release(&z);
}

/* KafkaLZ4BlockOutputStream's frame: FLG version 1 and independent
 * blocks (0x60), BD 64 KiB (0x40), no content size; the header checksum
 * right (the decoder checks it). */
static void test_format_lz4(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT, z = MK_STRBUF_INIT;
	text(&t, 200000, 5);
	compress_ok(MK_COMPRESS_LZ4, -1, t.buf, t.len, &z);
	const uint8_t *p = (const uint8_t *)z.buf;
	assert_int_equal(mk_load_be32(p), 0x04224d18);  /* 0x184D2204 LE */
	assert_int_equal(p[4], 0x60);
	assert_int_equal(p[5], 0x40);
	/* The end mark: a zero block size, no content checksum after it. */
	assert_int_equal(mk_load_be32(p + z.len - 4), 0);
	expect_decodes(MK_COMPRESS_LZ4, z.buf, z.len, t.buf, t.len);
	mk_strbuf_release(&t);
	mk_strbuf_release(&z);
}

static void test_format_zstd(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT, z = MK_STRBUF_INIT;
	text(&t, 70000, 6);
	compress_ok(MK_COMPRESS_ZSTD, -1, t.buf, t.len, &z);
	assert_int_equal(mk_load_be32((const uint8_t *)z.buf), 0x28b52ffd);
	assert_int_equal(ZSTD_getFrameContentSize(z.buf, z.len), t.len);
	mk_strbuf_release(&t);
	mk_strbuf_release(&z);
}

/* ---- what the readers accept besides ------------------------------------- */

/* librdkafka and kafka-python (xerial off) write one raw block. */
static void test_raw_snappy(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT;
	text(&t, 100000, 7);
	size_t n = snappy_max_compressed_length(t.len);
	char *raw = malloc(n);
	assert_non_null(raw);
	assert_int_equal(snappy_compress(t.buf, t.len, raw, &n), SNAPPY_OK);
	expect_decodes(MK_COMPRESS_SNAPPY, raw, n, t.buf, t.len);
	free(raw);
	/* A raw block of nothing: its length, zero. */
	expect_decodes(MK_COMPRESS_SNAPPY, "\0", 1, "", 0);
	/* A raw block starting like the xerial magic is no raw block. */
	expect_refused(MK_COMPRESS_SNAPPY, "\x82SNAPP", 6, MIB,
		       MK_CORRUPT_MESSAGE);
	mk_strbuf_release(&t);
}

/* Two streams back to back decode to both inputs, in order. */
static void test_concatenated(void **state)
{
	(void)state;
	mk_strbuf a = MK_STRBUF_INIT, b = MK_STRBUF_INIT, ab = MK_STRBUF_INIT;
	text(&a, 40000, 8);
	noise(&b, 3000, 99);
	mk_strbuf_add(&ab, a.buf, a.len);
	mk_strbuf_add(&ab, b.buf, b.len);
	for (size_t c = 0; c < NZ; c++) {
		mk_strbuf z = MK_STRBUF_INIT;
		compress_ok(zcodecs[c], -1, a.buf, a.len, &z);
		compress_ok(zcodecs[c], -1, b.buf, b.len, &z);
		expect_decodes(zcodecs[c], z.buf, z.len, ab.buf, ab.len);
		mk_strbuf_release(&z);
	}
	mk_strbuf_release(&a);
	mk_strbuf_release(&b);
	mk_strbuf_release(&ab);
}

static void test_trailing_bytes(void **state)
{
	(void)state;
	for (size_t c = 0; c < NZ; c++) {
		for (size_t extra = 1; extra <= 5; extra++) {
			mk_strbuf z = MK_STRBUF_INIT;
			compress_ok(zcodecs[c], -1, "trailing", 8, &z);
			mk_strbuf_add(&z, "\x07junk", extra);
			expect_refused(zcodecs[c], z.buf, z.len, MIB,
				       MK_CORRUPT_MESSAGE);
			mk_strbuf_release(&z);
		}
	}
	/* And after a raw snappy block. */
	char raw[64];
	size_t n = sizeof raw;
	assert_int_equal(snappy_compress("trailing", 8, raw, &n), SNAPPY_OK);
	raw[n++] = 7;
	expect_refused(MK_COMPRESS_SNAPPY, raw, n, MIB, MK_CORRUPT_MESSAGE);
}

static void test_unknown_codec(void **state)
{
	(void)state;
	for (int c = 5; c <= 7; c++) {
		mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
		assert_int_equal(mk_decompress(c, (const uint8_t *)"abc", 3,
					       MIB, &out, &why),
				 MK_CORRUPT_MESSAGE);
		assert_int_equal(out.len, 0);
		assert_non_null(strstr(why.buf, "codec"));
		mk_strbuf_release(&out);
		mk_strbuf_release(&why);
	}
	for (size_t c = 0; c < NZ; c++)
		expect_refused(zcodecs[c], "", 0, MIB, MK_CORRUPT_MESSAGE);
}

/* ---- damage -------------------------------------------------------------- */

/* Is cut a place where a xerial stream may end (after its header or a
 * whole block)? */
static bool xerial_boundary(const mk_strbuf *z, size_t cut)
{
	size_t pos = 16;
	while (pos < cut)
		pos += 4 + mk_load_be32((const uint8_t *)z->buf + pos);
	return pos == cut;
}

/* Every cut of every stream is refused as damage; a xerial stream has no
 * end mark, so there a cut at a block boundary decodes to the blocks
 * before it. */
static void test_every_cut(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT;
	text(&t, 70000, 9);
	for (size_t c = 0; c < NZ; c++) {
		int codec = zcodecs[c];
		mk_strbuf z = MK_STRBUF_INIT;
		compress_ok(codec, -1, t.buf, t.len, &z);
		size_t step = z.len > 3000 ? 7 : 1;
		for (size_t cut = 0; cut < z.len; cut += cut < 64 ? 1 : step) {
			if (codec == MK_COMPRESS_SNAPPY && cut >= 16 &&
			    xerial_boundary(&z, cut))
				continue;
			expect_refused(codec, z.buf, cut, MIB,
				       MK_CORRUPT_MESSAGE);
		}
		mk_strbuf_release(&z);
	}
	mk_strbuf_release(&t);
}

/* Every byte flipped: decoded (a format without a checksum cannot see all
 * damage: the batch's CRC does) or refused, never a crash, the bound
 * kept, out unchanged when refused. */
static void test_every_flip(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT;
	text(&t, 3000, 10);
	const size_t max = 64 * 1024;
	for (size_t c = 0; c < NZ; c++) {
		mk_strbuf z = MK_STRBUF_INIT;
		compress_ok(zcodecs[c], -1, t.buf, t.len, &z);
		for (size_t i = 0; i < z.len; i++) {
			z.buf[i] ^= (char)0xff;
			mk_strbuf out = MK_STRBUF_INIT;
			mk_strbuf_addstr(&out, "p");
			mk_err err = decode(zcodecs[c], z.buf, z.len, max,
					    &out, NULL);
			assert_true(err == MK_OK || err == MK_CORRUPT_MESSAGE ||
				    err == MK_MESSAGE_TOO_LARGE);
			assert_true(out.len <= 1 + max);
			if (err)
				assert_string_equal(out.buf, "p");
			mk_strbuf_release(&out);
			z.buf[i] ^= (char)0xff;
		}
		mk_strbuf_release(&z);
	}
	mk_strbuf_release(&t);
}

/* The damage each format does see. */
static void test_flip_detected(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT;
	text(&t, 3000, 11);
	for (size_t c = 0; c < NZ; c++) {
		int codec = zcodecs[c];
		mk_strbuf z = MK_STRBUF_INIT;
		compress_ok(codec, -1, t.buf, t.len, &z);
		size_t at[3] = { 0, 0, 0 };      /* the magic's first byte */
		size_t n = 1;
		if (codec == MK_COMPRESS_GZIP) {  /* data, CRC, size */
			at[n++] = z.len / 2;
			at[n++] = z.len - 6;
		} else if (codec == MK_COMPRESS_LZ4) {
			at[n++] = 6;              /* header checksum */
		} else if (codec == MK_COMPRESS_SNAPPY) {
			at[n++] = 16;             /* a block's length */
		}
		for (size_t k = 0; k < n; k++) {
			z.buf[at[k]] ^= (char)0x7f;
			expect_refused(codec, z.buf, z.len, MIB,
				       MK_CORRUPT_MESSAGE);
			z.buf[at[k]] ^= (char)0x7f;
		}
		mk_strbuf_release(&z);
	}
	mk_strbuf_release(&t);
}

/* ---- the bound ----------------------------------------------------------- */

/* Output of exactly max_out decodes; one byte less of bound is refused. */
static void test_bound_exact(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT;
	text(&t, 300000, 12);
	for (size_t c = 0; c < NC; c++) {
		mk_strbuf z = MK_STRBUF_INIT;
		compress_ok(codecs[c], -1, t.buf, t.len, &z);
		expect_decodes(codecs[c], z.buf, z.len, t.buf, t.len);
		expect_refused(codecs[c], z.buf, z.len, t.len - 1,
			       MK_MESSAGE_TOO_LARGE);
		expect_refused(codecs[c], z.buf, z.len, 0,
			       MK_MESSAGE_TOO_LARGE);
		mk_strbuf_reset(&z);
		compress_ok(codecs[c], -1, "", 0, &z);
		expect_decodes(codecs[c], z.buf, z.len, "", 0);
		mk_strbuf_release(&z);
	}
	mk_strbuf_release(&t);
}

#define BOMB (64u * MIB)
#define PIECE (64u * 1024)
static const uint8_t zeros[PIECE];

static void bomb_gzip(mk_strbuf *z)
{
	z_stream s;
	memset(&s, 0, sizeof s);
	assert_int_equal(deflateInit2(&s, 1, Z_DEFLATED, 31, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	static uint8_t buf[PIECE];
	int r = Z_OK;
	for (size_t done = 0; done < BOMB; done += PIECE) {
		s.next_in = (Bytef *)zeros;
		s.avail_in = PIECE;
		int flush = done + PIECE == BOMB ? Z_FINISH : Z_NO_FLUSH;
		do {
			s.next_out = buf;
			s.avail_out = sizeof buf;
			r = deflate(&s, flush);
			mk_strbuf_add(z, buf, sizeof buf - s.avail_out);
		} while (s.avail_out == 0);
	}
	assert_int_equal(r, Z_STREAM_END);
	deflateEnd(&s);
}

/* A zstd frame of BOMB zeros; with pledged, its content size in the
 * header. */
static void bomb_zstd(mk_strbuf *z, bool pledged)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	assert_non_null(c);
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
	if (pledged)
		ZSTD_CCtx_setPledgedSrcSize(c, BOMB);
	static uint8_t buf[PIECE];
	for (size_t done = 0; done < BOMB; done += PIECE) {
		ZSTD_inBuffer ib = { zeros, PIECE, 0 };
		bool last = done + PIECE == BOMB;
		size_t r;
		do {
			ZSTD_outBuffer ob = { buf, sizeof buf, 0 };
			r = ZSTD_compressStream2(c, &ob, &ib, last ? ZSTD_e_end
							     : ZSTD_e_continue);
			assert_false(ZSTD_isError(r));
			mk_strbuf_add(z, buf, ob.pos);
		} while (last ? r != 0 : ib.pos < ib.size);
	}
	ZSTD_freeCCtx(c);
}

static void bomb_lz4(mk_strbuf *z, bool sized)
{
	LZ4F_preferences_t p;
	memset(&p, 0, sizeof p);
	p.frameInfo.blockSizeID = LZ4F_max64KB;
	p.frameInfo.blockMode = LZ4F_blockIndependent;
	p.frameInfo.contentSize = sized ? BOMB : 0;
	LZ4F_cctx *c;
	assert_false(LZ4F_isError(LZ4F_createCompressionContext(&c,
								LZ4F_VERSION)));
	size_t cap = LZ4F_compressBound(PIECE, &p) + LZ4F_HEADER_SIZE_MAX;
	mk_strbuf_grow(z, cap);
	size_t n = LZ4F_compressBegin(c, z->buf + z->len, cap, &p);
	assert_false(LZ4F_isError(n));
	mk_strbuf_setlen(z, z->len + n);
	for (size_t done = 0; done < BOMB; done += PIECE) {
		mk_strbuf_grow(z, cap);
		n = LZ4F_compressUpdate(c, z->buf + z->len, cap, zeros, PIECE,
					NULL);
		assert_false(LZ4F_isError(n));
		mk_strbuf_setlen(z, z->len + n);
	}
	mk_strbuf_grow(z, cap);
	n = LZ4F_compressEnd(c, z->buf + z->len, cap, NULL);
	assert_false(LZ4F_isError(n));
	mk_strbuf_setlen(z, z->len + n);
	LZ4F_freeCompressionContext(c);
}

/* The xerial framing of BOMB zeros: one 32 KiB block of zeros, again and
 * again. */
static void bomb_xerial(mk_strbuf *z)
{
	mk_strbuf one = MK_STRBUF_INIT;
	compress_ok(MK_COMPRESS_SNAPPY, -1, zeros, 32768, &one);
	mk_strbuf_add(z, one.buf, 16);
	for (size_t done = 0; done < BOMB; done += 32768)
		mk_strbuf_add(z, one.buf + 16, one.len - 16);
	mk_strbuf_release(&one);
}

/* A raw snappy block of BOMB zeros, by hand: its length, one literal
 * zero, then copies of 64 bytes at offset 1. */
static void bomb_raw_snappy(mk_strbuf *z)
{
	for (uint32_t v = BOMB; ; v >>= 7) {
		mk_strbuf_addch(z, (int)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		if (v < 0x80)
			break;
	}
	mk_strbuf_add(z, "\0\0", 2);
	for (size_t done = 1; done < BOMB; done += 64) {
		size_t n = BOMB - done < 64 ? BOMB - done : 64;
		mk_strbuf_addch(z, (int)((n - 1) << 2 | 2));
		mk_strbuf_add(z, "\1\0", 2);
	}
}

static long maxrss_kib(void)
{
	struct rusage ru;
	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* 64 MiB of zeros under max_out 1 MiB: MESSAGE_TOO_LARGE, out as it was,
 * and the peak resident size grows by a few MiB, not by the bomb. */
static void expect_bomb_refused(int codec, const mk_strbuf *z,
				const char *what)
{
	mk_strbuf out = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	long before = maxrss_kib();
	mk_err err = mk_decompress(codec, (const uint8_t *)z->buf, z->len, MIB,
				   &out, &why);
	long grew = maxrss_kib() - before;
	if (err != MK_MESSAGE_TOO_LARGE)
		fail_msg("%s bomb: %s (%s)", what, mk_err_name(err), why.buf);
	assert_int_equal(out.len, 0);
	assert_true(out.alloc <= 4 * MIB);
	if (grew > 32 * 1024)
		fail_msg("%s bomb: the peak resident size grew by %ld KiB",
			 what, grew);
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
}

static void test_bombs(void **state)
{
	(void)state;
	mk_strbuf z = MK_STRBUF_INIT;
	bomb_gzip(&z);
	expect_bomb_refused(MK_COMPRESS_GZIP, &z, "gzip");
	mk_strbuf_reset(&z);
	bomb_xerial(&z);
	expect_bomb_refused(MK_COMPRESS_SNAPPY, &z, "xerial");
	mk_strbuf_reset(&z);
	bomb_raw_snappy(&z);
	expect_bomb_refused(MK_COMPRESS_SNAPPY, &z, "raw snappy");
	for (int sized = 0; sized <= 1; sized++) {
		mk_strbuf_reset(&z);
		bomb_lz4(&z, sized);
		expect_bomb_refused(MK_COMPRESS_LZ4, &z, sized ? "lz4 sized"
								: "lz4");
		mk_strbuf_reset(&z);
		bomb_zstd(&z, sized);
		expect_bomb_refused(MK_COMPRESS_ZSTD, &z, sized ? "zstd sized"
								 : "zstd");
	}
	mk_strbuf_release(&z);
}

/* The raw snappy bomb is a valid block of BOMB bytes (snappy's own
 * validator, which decodes without writing): the refusal above is the
 * bound's, not damage. */
static void test_bomb_is_valid(void **state)
{
	(void)state;
	mk_strbuf z = MK_STRBUF_INIT;
	bomb_raw_snappy(&z);
	size_t ulen;
	assert_int_equal(snappy_uncompressed_length(z.buf, z.len, &ulen),
			 SNAPPY_OK);
	assert_int_equal(ulen, BOMB);
	assert_int_equal(snappy_validate_compressed_buffer(z.buf, z.len),
			 SNAPPY_OK);
	mk_strbuf_release(&z);
}

/* A zstd frame asking for a 16 MiB window (no content size): refused
 * under a 1 MiB bound, read under a 16 MiB one. */
static void test_zstd_window(void **state)
{
	(void)state;
	mk_strbuf t = MK_STRBUF_INIT, z = MK_STRBUF_INIT;
	text(&t, 5000, 13);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	assert_non_null(c);
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 24);
	mk_strbuf_grow(&z, ZSTD_compressBound(t.len) + 64);
	ZSTD_inBuffer ib = { t.buf, t.len, 0 };
	ZSTD_outBuffer ob = { z.buf, z.alloc - 1, 0 };
	assert_false(ZSTD_isError(ZSTD_compressStream2(c, &ob, &ib,
						       ZSTD_e_continue)));
	assert_int_equal(ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end), 0);
	mk_strbuf_setlen(&z, ob.pos);
	ZSTD_freeCCtx(c);
	assert_int_equal(ZSTD_getFrameContentSize(z.buf, z.len),
			 ZSTD_CONTENTSIZE_UNKNOWN);
	expect_refused(MK_COMPRESS_ZSTD, z.buf, z.len, MIB,
		       MK_MESSAGE_TOO_LARGE);
	mk_strbuf out = MK_STRBUF_INIT;
	assert_int_equal(decode(MK_COMPRESS_ZSTD, z.buf, z.len, 16 * MIB,
				&out, NULL), MK_OK);
	assert_int_equal(out.len, t.len);
	mk_strbuf_release(&out);
	mk_strbuf_release(&t);
	mk_strbuf_release(&z);
}

/* ---- threads ------------------------------------------------------------- */

#define THREADS 4

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg, bad = 0;
	mk_strbuf t = MK_STRBUF_INIT;
	text(&t, 50000, (uint32_t)id + 100);
	for (int round = 0; round < 5; round++) {
		for (size_t c = 0; c < NC; c++) {
			mk_strbuf z = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
			if (mk_compress(codecs[c], -1, (const uint8_t *)t.buf,
					t.len, &z) ||
			    mk_decompress(codecs[c], (const uint8_t *)z.buf,
					  z.len, t.len, &out, NULL) ||
			    out.len != t.len ||
			    memcmp(out.buf, t.buf, t.len) != 0)
				bad++;
			mk_strbuf_release(&z);
			mk_strbuf_release(&out);
		}
	}
	mk_strbuf_release(&t);
	return (void *)bad;
}

static void test_threads(void **state)
{
	(void)state;
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, churn, (void *)i),
				 0);
	for (int i = 0; i < THREADS; i++) {
		void *bad;
		assert_int_equal(pthread_join(th[i], &bad), 0);
		assert_null(bad);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_round_trip_empty),
		cmocka_unit_test(test_round_trip_small),
		cmocka_unit_test(test_round_trip_1mib),
		cmocka_unit_test(test_round_trip_levels),
		cmocka_unit_test(test_appends),
		cmocka_unit_test(test_format_gzip),
		cmocka_unit_test(test_gzip_java_header),
		cmocka_unit_test(test_format_xerial),
		cmocka_unit_test(test_format_lz4),
		cmocka_unit_test(test_format_zstd),
		cmocka_unit_test(test_raw_snappy),
		cmocka_unit_test(test_concatenated),
		cmocka_unit_test(test_trailing_bytes),
		cmocka_unit_test(test_unknown_codec),
		cmocka_unit_test(test_every_cut),
		cmocka_unit_test(test_every_flip),
		cmocka_unit_test(test_flip_detected),
		cmocka_unit_test(test_bound_exact),
		cmocka_unit_test(test_bombs),
		cmocka_unit_test(test_bomb_is_valid),
		cmocka_unit_test(test_zstd_window),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
