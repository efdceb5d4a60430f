/*
 * compress.c — Kafka's compression codecs (compress.h).
 *
 * Organisation:
 *   - the tables: names, the compression.type words, the level ranges;
 *   - compression, one function per codec, each appending to out. gzip
 *     streams its input through deflate (a uInt at a time); lz4, zstd and
 *     snappy grow out by their library's bound once (per block, for
 *     snappy's xerial framing) and write in place;
 *   - decompression through a sink (struct sink: out, where this call's
 *     output began, the bound). sink_room() hands a decoder the room for
 *     its next piece: at most CHUNK bytes and never more than one byte
 *     past the bound, so that the piece passing the bound is at most that
 *     one byte over, and sink_commit() says so. gzip, lz4 and zstd decode
 *     a piece at a time through it; snappy decodes block by block, each
 *     block's declared length checked against the bound before any room
 *     is made for it. mk_decompress() restores out's length on failure.
 */
#include "compress.h"

#define ZLIB_CONST
#include <limits.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

/* The most bytes a streaming decoder writes per call. */
#define CHUNK (128u * 1024)

/* snappy-java's xerial framing (SnappyCodec, SnappyOutputStream). */
#define XERIAL_MAGIC_LEN 8
#define XERIAL_HEADER_LEN 16
#define XERIAL_BLOCK (32u * 1024)
static const uint8_t xerial_header[XERIAL_HEADER_LEN] = {
	0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,  /* magic */
	0, 0, 0, 1,                             /* version */
	0, 0, 0, 1,                             /* compatible version */
};

/* zstd: the largest window a frame may ask for is 2^log, log between
 * these, as large as the bound (compress.h). */
#define ZSTD_WINDOW_LOG_FLOOR 23
#define ZSTD_WINDOW_LOG_CAP 27
#define ZSTD_LEVEL_DEFAULT 3

/* gzip: windowBits 15 and 16 for the gzip wrapper; zlib's memLevel. */
#define GZIP_WINDOW_BITS (15 + 16)
#define GZIP_MEM_LEVEL 8

#define LZ4_LEVEL_MAX 17

/* ---- tables -------------------------------------------------------------- */

static const char *const names[MK_COMPRESS_COUNT] = {
#define NAME(ID, id, name) [id] = name,
	MK_COMPRESS_LIST(NAME)
#undef NAME
};

bool mk_compress_known(int codec)
{
	return codec >= 0 && codec < MK_COMPRESS_COUNT;
}

const char *mk_compress_name(int codec)
{
	return mk_compress_known(codec) ? names[codec] : "unknown";
}

mk_err mk_compress_check_level(int codec, int level, mk_strbuf *why)
{
	if (!mk_compress_known(codec))
		return mk_error(why, MK_INVALID_REQUEST,
				"unknown compression codec %d", codec);
	if (level == MK_COMPRESS_LEVEL_DEFAULT)
		return MK_OK;
	int lo, hi;
	switch (codec) {
	case MK_COMPRESS_GZIP:
		lo = Z_BEST_SPEED;
		hi = Z_BEST_COMPRESSION;
		break;
	case MK_COMPRESS_LZ4:
		lo = 0;
		hi = LZ4_LEVEL_MAX;
		break;
	case MK_COMPRESS_ZSTD:
		lo = ZSTD_minCLevel();
		hi = ZSTD_maxCLevel();
		break;
	default:                /* none, snappy: no level */
		return MK_OK;
	}
	if (level < lo || level > hi)
		return mk_error(why, MK_INVALID_CONFIG,
				"%s compression level %d is outside [%d, %d]",
				names[codec], level, lo, hi);
	return MK_OK;
}

/* ---- compression --------------------------------------------------------- */

/* The writable bytes after out's length (one is kept for the NUL). */
static size_t spare(const mk_strbuf *out)
{
	return out->alloc ? out->alloc - out->len - 1 : 0;
}

static uint8_t *tail(mk_strbuf *out)
{
	return (uint8_t *)out->buf + out->len;
}

/* Hand zlib the next part of in (its counts are uInts). */
static void feed(z_stream *z, const uint8_t *in, size_t len, size_t *pos)
{
	size_t n = len - *pos;
	if (n > UINT_MAX)
		n = UINT_MAX;
	z->next_in = in + *pos;
	z->avail_in = (uInt)n;
	*pos += n;
}

static mk_err gzip_compress(int level, const uint8_t *in, size_t len,
			    mk_strbuf *out)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (level == MK_COMPRESS_LEVEL_DEFAULT)
		level = Z_DEFAULT_COMPRESSION;
	if (deflateInit2(&z, level, Z_DEFLATED, GZIP_WINDOW_BITS,
			 GZIP_MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK)
		return MK_OUT_OF_MEMORY;
	mk_strbuf_grow(out, deflateBound(&z, len));
	size_t pos = 0;
	int r;
	do {
		if (z.avail_in == 0 && pos < len)
			feed(&z, in, len, &pos);
		if (spare(out) == 0)
			mk_strbuf_grow(out, CHUNK);
		size_t room = spare(out) > UINT_MAX ? UINT_MAX : spare(out);
		z.next_out = tail(out);
		z.avail_out = (uInt)room;
		r = deflate(&z, pos == len ? Z_FINISH : Z_NO_FLUSH);
		mk_strbuf_setlen(out, out->len + (room - z.avail_out));
	} while (r == Z_OK || r == Z_BUF_ERROR);
	deflateEnd(&z);
	return r == Z_STREAM_END ? MK_OK : MK_OUT_OF_MEMORY;
}

/* The xerial framing: its header, then blocks of at most XERIAL_BLOCK
 * input bytes, each [be32 length][raw snappy block]. */
static mk_err snappy_compress_xerial(const uint8_t *in, size_t len,
				     mk_strbuf *out)
{
	mk_strbuf_add(out, xerial_header, sizeof xerial_header);
	for (size_t pos = 0; pos < len;) {
		size_t n = len - pos < XERIAL_BLOCK ? len - pos : XERIAL_BLOCK;
		size_t got = snappy_max_compressed_length(n);
		mk_strbuf_grow(out, 4 + got);
		if (snappy_compress((const char *)in + pos, n,
				    (char *)tail(out) + 4, &got) != SNAPPY_OK)
			return MK_OUT_OF_MEMORY;
		mk_store_be32(tail(out), (uint32_t)got);
		mk_strbuf_setlen(out, out->len + 4 + got);
		pos += n;
	}
	return MK_OK;
}

/* One frame as KafkaLZ4BlockOutputStream writes it: 64 KiB independent
 * blocks, no content size, no content checksum. */
static mk_err lz4_compress(int level, const uint8_t *in, size_t len,
			   mk_strbuf *out)
{
	LZ4F_preferences_t p;
	memset(&p, 0, sizeof p);
	p.frameInfo.blockSizeID = LZ4F_max64KB;
	p.frameInfo.blockMode = LZ4F_blockIndependent;
	p.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
	p.compressionLevel = level == MK_COMPRESS_LEVEL_DEFAULT ? 0 : level;
	size_t bound = LZ4F_compressFrameBound(len, &p);
	mk_strbuf_grow(out, bound);
	size_t r = LZ4F_compressFrame(tail(out), bound, in, len, &p);
	if (LZ4F_isError(r))
		return MK_OUT_OF_MEMORY;
	mk_strbuf_setlen(out, out->len + r);
	return MK_OK;
}

static mk_err zstd_compress(int level, const uint8_t *in, size_t len,
			    mk_strbuf *out)
{
	if (level == MK_COMPRESS_LEVEL_DEFAULT)
		level = ZSTD_LEVEL_DEFAULT;
	size_t bound = ZSTD_compressBound(len);
	mk_strbuf_grow(out, bound);
	size_t r = ZSTD_compress(tail(out), bound, in, len, level);
	if (ZSTD_isError(r))
		return MK_OUT_OF_MEMORY;
	mk_strbuf_setlen(out, out->len + r);
	return MK_OK;
}

mk_err mk_compress(int codec, int level, const uint8_t *in, size_t len,
		   mk_strbuf *out)
{
	mk_err err = mk_compress_check_level(codec, level, NULL);
	if (err)
		return err;
	if (!in)
		in = (const uint8_t *)"";
	size_t start = out->len;
	switch (codec) {
	case MK_COMPRESS_GZIP:
		err = gzip_compress(level, in, len, out);
		break;
	case MK_COMPRESS_SNAPPY:
		err = snappy_compress_xerial(in, len, out);
		break;
	case MK_COMPRESS_LZ4:
		err = lz4_compress(level, in, len, out);
		break;
	case MK_COMPRESS_ZSTD:
		err = zstd_compress(level, in, len, out);
		break;
	default:
		mk_strbuf_add(out, in, len);
		break;
	}
	if (err)
		mk_strbuf_setlen(out, start);
	return err;
}

/* ---- decompression: the sink --------------------------------------------- */

struct sink {
	mk_strbuf *out;
	size_t start;           /* out->len when the call began */
	size_t max;             /* the most bytes the call may append */
	const char *name;       /* the codec's, for reasons */
};

static size_t sink_used(const struct sink *s)
{
	return s->out->len - s->start;
}

/* Room for the next piece: CHUNK bytes, or one past the bound when that
 * is nearer. Returns where to write; *room is its size. */
static uint8_t *sink_room(struct sink *s, size_t *room)
{
	size_t left = s->max - sink_used(s);
	*room = left < CHUNK ? left + 1 : CHUNK;
	mk_strbuf_grow(s->out, *room);
	return tail(s->out);
}

/* Keep the n bytes written at sink_room's pointer; false once the output
 * has passed the bound. */
static bool sink_commit(struct sink *s, size_t n)
{
	mk_strbuf_setlen(s->out, s->out->len + n);
	return sink_used(s) <= s->max;
}

static mk_err too_large(const struct sink *s, mk_strbuf *why)
{
	return mk_error(why, MK_MESSAGE_TOO_LARGE,
			"%s: the records decompress to more than %zu bytes",
			s->name, s->max);
}

/* ---- gzip ---------------------------------------------------------------- */

/* After a member ended with rest bytes left: another member (its magic),
 * or damage. */
static mk_err gzip_next_member(z_stream *z, const uint8_t *in, size_t len,
			       size_t rest, mk_strbuf *why)
{
	const uint8_t *p = in + (len - rest);
	if (rest < 2 || p[0] != 0x1f || p[1] != 0x8b)
		return mk_error(why, MK_CORRUPT_MESSAGE,
				"gzip: %zu bytes after the end of the stream",
				rest);
	return inflateReset(z) == Z_OK ? MK_OK : MK_OUT_OF_MEMORY;
}

static mk_err gzip_decode(z_stream *z, const uint8_t *in, size_t len,
			  struct sink *s, mk_strbuf *why)
{
	size_t pos = 0;         /* bytes of in handed to zlib */
	for (;;) {
		if (z->avail_in == 0 && pos < len)
			feed(z, in, len, &pos);
		size_t room;
		z->next_out = sink_room(s, &room);
		z->avail_out = (uInt)room;
		int r = inflate(z, Z_NO_FLUSH);
		if (!sink_commit(s, room - z->avail_out))
			return too_large(s, why);
		size_t rest = len - pos + z->avail_in;
		if (r == Z_STREAM_END) {
			if (rest == 0)
				return MK_OK;
			mk_err err = gzip_next_member(z, in, len, rest, why);
			if (err)
				return err;
			continue;
		}
		if (r == Z_MEM_ERROR)
			return mk_error(why, MK_OUT_OF_MEMORY,
					"gzip: zlib could not allocate");
		if (r != Z_OK && r != Z_BUF_ERROR)
			return mk_error(why, MK_CORRUPT_MESSAGE,
					"gzip: damaged stream at byte %zu: %s",
					len - rest,
					z->msg ? z->msg : "inflate failed");
		if (rest == 0 && z->avail_out > 0)
			return mk_error(why, MK_CORRUPT_MESSAGE,
					"gzip: truncated stream (%zu bytes)",
					len);
	}
}

static mk_err gzip_decompress(const uint8_t *in, size_t len, struct sink *s,
			      mk_strbuf *why)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, GZIP_WINDOW_BITS) != Z_OK)
		return mk_error(why, MK_OUT_OF_MEMORY,
				"gzip: zlib could not allocate");
	mk_err err = gzip_decode(&z, in, len, s, why);
	inflateEnd(&z);
	return err;
}

/* ---- snappy -------------------------------------------------------------- */

/* One raw snappy block at byte `at` of the input: its declared length
 * checked against the bound before room is made for it. */
static mk_err snappy_block(const uint8_t *blk, size_t n, size_t at,
			   struct sink *s, mk_strbuf *why)
{
	size_t ulen;
	if (snappy_uncompressed_length((const char *)blk, n, &ulen) !=
	    SNAPPY_OK)
		return mk_error(why, MK_CORRUPT_MESSAGE,
				"snappy: block at byte %zu: bad length header",
				at);
	if (ulen > s->max - sink_used(s))
		return too_large(s, why);
	mk_strbuf_grow(s->out, ulen);
	size_t got = ulen;
	if (snappy_uncompress((const char *)blk, n, (char *)tail(s->out),
			      &got) != SNAPPY_OK || got != ulen)
		return mk_error(why, MK_CORRUPT_MESSAGE,
				"snappy: block at byte %zu is damaged", at);
	mk_strbuf_setlen(s->out, s->out->len + ulen);
	return MK_OK;
}

/* The blocks of a xerial stream after its header. A header again
 * (concatenated streams) is skipped: no block length starts with its
 * 0x82, which would be over 2^31. */
static mk_err snappy_xerial(const uint8_t *in, size_t len, struct sink *s,
			    mk_strbuf *why)
{
	size_t pos = XERIAL_HEADER_LEN;
	while (pos < len) {
		size_t left = len - pos;
		if (left >= XERIAL_MAGIC_LEN &&
		    memcmp(in + pos, xerial_header, XERIAL_MAGIC_LEN) == 0) {
			if (left < XERIAL_HEADER_LEN)
				break;
			pos += XERIAL_HEADER_LEN;
			continue;
		}
		if (left < 4)
			return mk_error(why, MK_CORRUPT_MESSAGE,
					"snappy: truncated block length at byte %zu",
					pos);
		uint32_t n = mk_load_be32(in + pos);
		if (n > INT32_MAX || n > left - 4)
			return mk_error(why, MK_CORRUPT_MESSAGE,
					"snappy: block at byte %zu claims %u bytes, %zu follow",
					pos, n, left - 4);
		mk_err err = snappy_block(in + pos + 4, n, pos, s, why);
		if (err)
			return err;
		pos += 4 + (size_t)n;
	}
	if (pos < len)
		return mk_error(why, MK_CORRUPT_MESSAGE,
				"snappy: truncated xerial header at byte %zu",
				pos);
	return MK_OK;
}

static mk_err snappy_decompress(const uint8_t *in, size_t len,
				struct sink *s, mk_strbuf *why)
{
	if (len < XERIAL_MAGIC_LEN ||
	    memcmp(in, xerial_header, XERIAL_MAGIC_LEN) != 0)
		return snappy_block(in, len, 0, s, why);
	if (len < XERIAL_HEADER_LEN)
		return mk_error(why, MK_CORRUPT_MESSAGE,
				"snappy: truncated xerial header (%zu bytes)",
				len);
	return snappy_xerial(in, len, s, why);
}

/* ---- lz4 ----------------------------------------------------------------- */

static mk_err lz4_damaged(size_t r, size_t at, mk_strbuf *why)
{
	return mk_error(why, MK_CORRUPT_MESSAGE,
			"lz4: damaged frame at byte %zu: %s", at,
			LZ4F_getErrorName(r));
}

/* One frame from *pos: its header (a declared content size is checked
 * against the bound first), then its blocks to the end mark. */
static mk_err lz4_frame(LZ4F_dctx *d, const uint8_t *in, size_t len,
			size_t *pos, struct sink *s, mk_strbuf *why)
{
	LZ4F_frameInfo_t fi;
	size_t sn = len - *pos;
	size_t r = LZ4F_getFrameInfo(d, &fi, in + *pos, &sn);
	if (LZ4F_isError(r))
		return lz4_damaged(r, *pos, why);
	*pos += sn;
	if (fi.contentSize > s->max - sink_used(s))
		return too_large(s, why);
	while (r != 0) {
		size_t room;
		uint8_t *dst = sink_room(s, &room);
		size_t dn = room;
		sn = len - *pos;
		r = LZ4F_decompress(d, dst, &dn, in + *pos, &sn, NULL);
		if (LZ4F_isError(r))
			return lz4_damaged(r, *pos, why);
		*pos += sn;
		if (!sink_commit(s, dn))
			return too_large(s, why);
		if (r != 0 && *pos == len && dn < room)
			return mk_error(why, MK_CORRUPT_MESSAGE,
					"lz4: truncated frame (%zu bytes)", len);
	}
	return MK_OK;
}

static mk_err lz4_decompress(const uint8_t *in, size_t len, struct sink *s,
			     mk_strbuf *why)
{
	LZ4F_dctx *d;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
		return mk_error(why, MK_OUT_OF_MEMORY,
				"lz4: could not allocate a context");
	mk_err err = MK_OK;
	size_t pos = 0;
	while (!err && pos < len)
		err = lz4_frame(d, in, len, &pos, s, why);
	LZ4F_freeDecompressionContext(d);
	return err;
}

/* ---- zstd ---------------------------------------------------------------- */

/* The window limit for a bound: 2^log >= max, log within the floor and
 * the cap. */
static int zstd_window_log(size_t max)
{
	int log = ZSTD_WINDOW_LOG_FLOOR;
	while (log < ZSTD_WINDOW_LOG_CAP && ((size_t)1 << log) < max)
		log++;
	return log;
}

static mk_err zstd_failed(size_t r, int wlog, mk_strbuf *why)
{
	ZSTD_ErrorCode c = ZSTD_getErrorCode(r);
	if (c == ZSTD_error_frameParameter_windowTooLarge)
		return mk_error(why, MK_MESSAGE_TOO_LARGE,
				"zstd: the frame asks for a window over 2^%d bytes",
				wlog);
	if (c == ZSTD_error_memory_allocation)
		return mk_error(why, MK_OUT_OF_MEMORY, "zstd: %s",
				ZSTD_getErrorName(r));
	return mk_error(why, MK_CORRUPT_MESSAGE, "zstd: damaged frame: %s",
			ZSTD_getErrorName(r));
}

static mk_err zstd_decode(ZSTD_DCtx *d, int wlog, const uint8_t *in,
			  size_t len, struct sink *s, mk_strbuf *why)
{
	ZSTD_inBuffer ib = { in, len, 0 };
	for (;;) {
		size_t room;
		uint8_t *dst = sink_room(s, &room);
		ZSTD_outBuffer ob = { dst, room, 0 };
		size_t r = ZSTD_decompressStream(d, &ob, &ib);
		if (ZSTD_isError(r))
			return zstd_failed(r, wlog, why);
		if (!sink_commit(s, ob.pos))
			return too_large(s, why);
		/* Input all read: done when a frame just ended (r is 0 once
		 * it is decoded and flushed); with room left, the decoder
		 * has flushed all it could, and wants more input. */
		if (ib.pos == ib.size && (r == 0 || ob.pos < ob.size))
			return r == 0 ? MK_OK
				      : mk_error(why, MK_CORRUPT_MESSAGE,
						 "zstd: truncated frame (%zu bytes)",
						 len);
	}
}

static mk_err zstd_decompress(const uint8_t *in, size_t len, struct sink *s,
			      mk_strbuf *why)
{
	unsigned long long fcs = ZSTD_getFrameContentSize(in, len);
	if (fcs != ZSTD_CONTENTSIZE_ERROR && fcs != ZSTD_CONTENTSIZE_UNKNOWN &&
	    fcs > s->max)
		return too_large(s, why);
	ZSTD_DCtx *d = ZSTD_createDCtx();
	if (!d)
		return mk_error(why, MK_OUT_OF_MEMORY,
				"zstd: could not allocate a context");
	int wlog = zstd_window_log(s->max);
	mk_err err;
	size_t r = ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, wlog);
	if (ZSTD_isError(r))
		err = zstd_failed(r, wlog, why);
	else
		err = zstd_decode(d, wlog, in, len, s, why);
	ZSTD_freeDCtx(d);
	return err;
}

/* ---- decompression ------------------------------------------------------- */

mk_err mk_decompress(int codec, const uint8_t *in, size_t len,
		     size_t max_out, mk_strbuf *out, mk_strbuf *why)
{
	if (!mk_compress_known(codec))
		return mk_error(why, MK_CORRUPT_MESSAGE,
				"unknown compression codec %d", codec);
	struct sink s = { out, out->len, max_out, names[codec] };
	if (codec == MK_COMPRESS_NONE) {
		if (len > max_out)
			return too_large(&s, why);
		mk_strbuf_add(out, in, len);
		return MK_OK;
	}
	if (len == 0)
		return mk_error(why, MK_CORRUPT_MESSAGE, "%s: empty input",
				names[codec]);
	mk_err err;
	switch (codec) {
	case MK_COMPRESS_GZIP:
		err = gzip_decompress(in, len, &s, why);
		break;
	case MK_COMPRESS_SNAPPY:
		err = snappy_decompress(in, len, &s, why);
		break;
	case MK_COMPRESS_LZ4:
		err = lz4_decompress(in, len, &s, why);
		break;
	default:
		err = zstd_decompress(in, len, &s, why);
		break;
	}
	if (err)
		mk_strbuf_setlen(out, s.start);
	return err;
}
