/*
 * fuzz_checkpoint.c — libFuzzer target for a log's checkpoint parser
 * (core/storage/log_checkpoint.c, mk_log_checkpoint_parse).
 *
 * The input (cut at its first NUL) is a checkpoint file. A refusal must be
 * a storage error naming the file and a line, with nothing left to free.
 * An accepted checkpoint must hold offsets >= 0 and an epoch cache whose
 * epochs (>= 0) and start offsets (>= 0) strictly increase; printed back in
 * the file's format it must parse to the same values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_checkpoint: check failed: %s (line %d)\n", \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void print(const mk_log_checkpoint *c, mk_strbuf *out)
{
	mk_strbuf_addf(out, "version 1\nlog_start_offset %lld\n"
		       "recovery_point %lld\n", (long long)c->start_offset,
		       (long long)c->recovery_point);
	for (size_t i = 0; i < c->nepochs; i++)
		mk_strbuf_addf(out, "epoch %d %lld\n", (int)c->epochs[i].epoch,
			       (long long)c->epochs[i].start_offset);
	for (size_t i = 0; i < c->nbases; i++)
		mk_strbuf_addf(out, "%s%lld%s", i ? " " : "segments ",
			       (long long)c->bases[i],
			       i + 1 == c->nbases ? "\n" : "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	mk_log_checkpoint c;
	mk_strbuf why = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	mk_err err = mk_log_checkpoint_parse("ck", text, &c, &why);
	if (err) {
		CHECK(err == MK_KAFKA_STORAGE_ERROR);
		CHECK(!strncmp(why.buf, "ck: line ", 9));
		CHECK(c.epochs == NULL && c.nepochs == 0);
		CHECK(c.bases == NULL && c.nbases == 0);
		goto out;
	}
	CHECK(c.start_offset >= 0 && c.recovery_point >= 0);
	for (size_t i = 0; i < c.nepochs; i++) {
		CHECK(c.epochs[i].epoch >= 0 && c.epochs[i].start_offset >= 0);
		if (i)
			CHECK(c.epochs[i].epoch > c.epochs[i - 1].epoch &&
			      c.epochs[i].start_offset >
				      c.epochs[i - 1].start_offset);
	}
	print(&c, &out);
	mk_log_checkpoint d;
	CHECK(mk_log_checkpoint_parse("ck", out.buf, &d, NULL) == MK_OK);
	CHECK(d.start_offset == c.start_offset &&
	      d.recovery_point == c.recovery_point && d.nepochs == c.nepochs);
	for (size_t i = 0; i < c.nepochs; i++)
		CHECK(d.epochs[i].epoch == c.epochs[i].epoch &&
		      d.epochs[i].start_offset == c.epochs[i].start_offset);
	CHECK(d.nbases == c.nbases);
	for (size_t i = 0; i < c.nbases; i++)
		CHECK(d.bases[i] == c.bases[i]);
	free(d.epochs);
	free(c.epochs);
	free(d.bases);
	free(c.bases);
out:
	mk_strbuf_release(&why);
	mk_strbuf_release(&out);
	free(text);
	return 0;
}
