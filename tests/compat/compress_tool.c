/*
 * compress_tool.c — core/storage/compress.h from the command line, for
 * tests/compat/kafka_codecs.py:
 *
 *     compress_tool c CODEC [LEVEL] < plain > compressed
 *     compress_tool d CODEC [MAX_OUT] < compressed > plain
 *
 * CODEC is a name of mk_compress_name ("none", "gzip", "snappy", "lz4",
 * "zstd"). Exit 0 on success; 1 with the error's name and reason on
 * stderr; 2 on a usage error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "parse.h"

static int usage(void)
{
	fprintf(stderr, "usage: compress_tool c|d CODEC [LEVEL|MAX_OUT]\n");
	return 2;
}

static void read_all(FILE *f, mk_strbuf *sb)
{
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		mk_strbuf_add(sb, buf, n);
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4 || strlen(argv[1]) != 1 ||
	    !strchr("cd", argv[1][0]))
		return usage();
	int codec = -1;
	for (int c = 0; c < MK_COMPRESS_COUNT; c++)
		if (strcmp(argv[2], mk_compress_name(c)) == 0)
			codec = c;
	int64_t arg = -1;
	if (codec < 0 || (argc == 4 && !mk_parse_i64(argv[3], &arg)))
		return usage();
	mk_strbuf in = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	mk_strbuf why = MK_STRBUF_INIT;
	read_all(stdin, &in);
	mk_err err;
	if (argv[1][0] == 'c')
		err = mk_compress(codec, (int)arg, (const uint8_t *)in.buf,
				  in.len, &out);
	else
		err = mk_decompress(codec, (const uint8_t *)in.buf, in.len,
				    arg < 0 ? SIZE_MAX : (size_t)arg, &out,
				    &why);
	int rc = 0;
	if (err) {
		fprintf(stderr, "compress_tool: %s: %s\n", mk_err_name(err),
			why.buf);
		rc = 1;
	} else if (fwrite(out.buf, 1, out.len, stdout) != out.len ||
		   fflush(stdout) != 0) {
		perror("compress_tool: stdout");
		rc = 1;
	}
	mk_strbuf_release(&in);
	mk_strbuf_release(&out);
	mk_strbuf_release(&why);
	return rc;
}
