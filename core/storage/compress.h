/*
 * compress.h — Kafka's record-batch compression codecs: the bytes a
 * compressed RecordBatch v2 keeps after its 61-byte header (codec.h),
 * written and read as Kafka's Java client and librdkafka write and read
 * them.
 *
 * This module owns the codec ids (attributes bits 0-2), their names, the
 * words of the compression.type configuration, and the four formats:
 *
 *   gzip (1)    one gzip stream (RFC 1952), as Java's GZIPOutputStream
 *               and librdkafka write it: zlib's deflate with windowBits
 *               31. Read: one member, or several concatenated (as
 *               GZIPInputStream reads them); anything else after a member
 *               is damage.
 *   snappy (2)  the xerial framing of snappy-java's SnappyOutputStream
 *               (Kafka's SnappyFactory): a 16-byte header, the magic
 *               0x82 "SNAPPY" 0 then version 1 and compatible version 1
 *               as big-endian int32s, then blocks of [big-endian int32
 *               length][raw snappy block], each block holding at most
 *               32 KiB of input (SnappyOutputStream's default). Read: that
 *               framing (by its 8-byte magic; the version fields are not
 *               judged, a header repeated between blocks, as a
 *               concatenated stream has, is skipped, as SnappyInputStream
 *               does), or one raw snappy block without framing (what
 *               librdkafka and kafka-python with xerial off write). The
 *               magic cannot start a valid raw block: read as one, it is a
 *               copy before any literal.
 *   lz4 (3)     the standard LZ4 frame format (lz4frame.h), as Kafka's
 *               KafkaLZ4BlockOutputStream writes it since magic 1: 64 KiB
 *               blocks, independent, a correct header checksum, no content
 *               size, no content checksum. Read: any standard frame, or
 *               several concatenated. The frames of magic 0 messages
 *               (Kafka 0.8/0.9), whose header checksum was computed over
 *               the magic too, are refused as damaged: a v2 batch never
 *               holds one, and Kafka refuses them in v2 batches too.
 *   zstd (4)    standard zstd frames (RFC 8878), as Kafka's ZstdFactory
 *               (zstd-jni) writes them; written by ZSTD_compress (content
 *               size in the header, no checksum). Read: one or several
 *               frames, skippable frames skipped.
 *
 * Compression levels: MK_COMPRESS_LEVEL_DEFAULT (-1) is the codec's
 * default, as Kafka's compression.<codec>.level: gzip 1..9 (default
 * zlib's 6), lz4 0..17 (0 and the default: the fast compressor, as Kafka
 * before 3.8 and librdkafka; 3 and up are LZ4 HC, past 12 as 12), zstd
 * -131072..22 (default 3; -1 being the default, zstd's fast level -1 is
 * not reachable). none and snappy have no level: the argument is ignored.
 *
 * Decompression is bounded: max_out is the most bytes one call may
 * append, and the call stops with MK_MESSAGE_TOO_LARGE the moment its
 * output would pass it. The streaming decoders (gzip, lz4, zstd) are
 * given room for 128 KiB at a time and never for more than one byte past
 * what the bound leaves, so they stop having decoded at most that one
 * byte too many; sizes a stream declares (a snappy block's length, an
 * lz4 or zstd frame's content size) are checked against the bound before
 * anything is decoded or allocated for them. A decompression bomb is so
 * refused after about max_out bytes of work, or at once. Memory held:
 * the output (a strbuf grows by doubling: under twice what it holds)
 * plus the libraries' working state, which is bounded too: zlib's 32 KiB
 * window, lz4's buffers of at most two 4 MiB blocks, zstd's window: a
 * frame asking for a window over max(max_out, 8 MiB), and over 128 MiB
 * whatever the bound (zstd's own default limit), is MESSAGE_TOO_LARGE.
 * 8 MiB is what zstd's levels up to 19 use, so that the frames of any
 * usual producer are read whatever the bound.
 *
 * Invariants: on any failure out is as it was (its length restored; its
 * allocation may have grown), and every failure of damaged input is
 * MK_CORRUPT_MESSAGE with a reason naming the codec. No input makes a
 * call read outside [in, in + len). A library's own allocation failure
 * is MK_OUT_OF_MEMORY (the libraries allocate for themselves; xalloc.h's
 * abort covers the project's allocations only).
 *
 * No state: every call makes and frees its own contexts, so any number of
 * threads may call at once.
 */
#ifndef MK_COMPRESS_H
#define MK_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

/*
 * Kafka's codecs, one table (as error.h's): X(ID, id, name) with the id
 * of the batch attributes bits 0-2 and the name of Kafka's
 * CompressionType; ID is what kafka-dump-log prints as compresscodec.
 */
#define MK_COMPRESS_LIST(X)                                                \
	X(NONE, 0, "none")                                                 \
	X(GZIP, 1, "gzip")                                                 \
	X(SNAPPY, 2, "snappy")                                             \
	X(LZ4, 3, "lz4")                                                   \
	X(ZSTD, 4, "zstd")

enum {
#define MK_COMPRESS_ENUM(ID, id, name) MK_COMPRESS_##ID = id,
	MK_COMPRESS_LIST(MK_COMPRESS_ENUM)
#undef MK_COMPRESS_ENUM
	MK_COMPRESS_COUNT = 5,
	MK_COMPRESS_ID_MASK = 0x07,   /* the attribute bits of the id */
};

/* The codec's default level (Kafka's, see above). */
#define MK_COMPRESS_LEVEL_DEFAULT (-1)

/* Is codec one of the ids above (0..4)? */
bool mk_compress_known(int codec);
/* "none", "gzip", "snappy", "lz4", "zstd" (Kafka's CompressionType
 * names, what kafka-dump-log prints as compresscodec); "unknown" for
 * any other id. The compression.type words (producer, uncompressed, ...)
 * are the configuration's (config.c's key table). */
const char *mk_compress_name(int codec);
/* Is level valid for codec (MK_COMPRESS_LEVEL_DEFAULT always is)?
 * MK_INVALID_CONFIG with the codec's range if not, MK_INVALID_REQUEST for
 * an unknown codec. */
mk_err mk_compress_check_level(int codec, int level, mk_strbuf *why);

/*
 * Append to out the bytes of in[0..len) compressed by codec at level
 * (MK_COMPRESS_LEVEL_DEFAULT: the codec's default). MK_COMPRESS_NONE
 * appends in as it is. What mk_compress_check_level refuses is refused
 * with its code (MK_INVALID_REQUEST for an unknown codec,
 * MK_INVALID_CONFIG for a level), MK_OUT_OF_MEMORY if a library could
 * not allocate; out is then as it was. in may be NULL when len is 0.
 * Empty input gives a valid stream of nothing (for snappy, the xerial
 * header alone, as SnappyOutputStream closes an empty stream).
 */
mk_err mk_compress(int codec, int level, const uint8_t *in, size_t len,
		   mk_strbuf *out);

/*
 * Append to out the bytes in[0..len) decompress to by codec, at most
 * max_out of them (SIZE_MAX: no bound). MK_COMPRESS_NONE appends in as
 * it is.
 *   MK_CORRUPT_MESSAGE: damaged, truncated or trailing bytes, an unknown
 *     codec id, or empty input for a compressing codec;
 *   MK_MESSAGE_TOO_LARGE: the output would pass max_out;
 *   MK_OUT_OF_MEMORY: a library could not allocate its state.
 * why (may be NULL) gets the reason; out is as it was on any failure.
 */
mk_err mk_decompress(int codec, const uint8_t *in, size_t len,
		     size_t max_out, mk_strbuf *out, mk_strbuf *why);

#endif
