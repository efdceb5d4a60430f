/*
 * fuzz_checkpoint.c — libFuzzer target for the checkpoint parsers: a log's
 * own checkpoint (core/storage/log_checkpoint.c, mk_log_checkpoint_parse,
 * versions 1 and 2) and Kafka's two formats (core/storage/ckptfile.c:
 * mk_ckpt_parse_offsets, mk_ckpt_parse_epochs), each given the input.
 *
 * For the log's checkpoint the input is cut at its first NUL; Kafka's
 * parsers get it whole (a NUL byte is damage to them). A refusal must be
 * a storage error naming the file and a line (or, for an offset
 * checkpoint, an entry given twice), with nothing left to free. An
 * accepted file must hold offsets >= 0, epochs (>= 0) and start offsets
 * (>= 0) strictly increasing, and (offsets) each (topic, partition) once;
 * printed back in its format it must parse to the same values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckptfile.h"
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
	mk_strbuf_addf(out, "version %d\n", c->version);
	if (c->version == 1)
		mk_strbuf_addf(out, "log_start_offset %lld\nrecovery_point %lld\n",
			       (long long)c->start_offset,
			       (long long)c->recovery_point);
	for (size_t i = 0; i < c->nepochs; i++)
		mk_strbuf_addf(out, "epoch %d %lld\n", (int)c->epochs[i].epoch,
			       (long long)c->epochs[i].start_offset);
	for (size_t i = 0; i < c->nbases; i++)
		mk_strbuf_addf(out, "%s%lld%s", i ? " " : "segments ",
			       (long long)c->bases[i],
			       i + 1 == c->nbases ? "\n" : "");
}

static void check_epochs(const mk_epoch_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		CHECK(v[i].epoch >= 0 && v[i].start_offset >= 0);
		if (i)
			CHECK(v[i].epoch > v[i - 1].epoch &&
			      v[i].start_offset > v[i - 1].start_offset);
	}
}

static void fuzz_log_checkpoint(char *text)
{
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
	CHECK(c.version == 1 || c.version == 2);
	if (c.version == 1)
		CHECK(c.start_offset >= 0 && c.recovery_point >= 0);
	else
		CHECK(c.start_offset == -1 && c.recovery_point == -1 &&
		      c.nepochs == 0);
	check_epochs(c.epochs, c.nepochs);
	print(&c, &out);
	mk_log_checkpoint d;
	CHECK(mk_log_checkpoint_parse("ck", out.buf, &d, NULL) == MK_OK);
	CHECK(d.version == c.version && d.start_offset == c.start_offset &&
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
}

/* A copy of data (size bytes) with a NUL after it, for a parser to cut. */
static char *copy_of(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	return text;
}

static void fuzz_offsets(const uint8_t *data, size_t size)
{
	char *text = copy_of(data, size);
	mk_ckpt_offset *v, *w;
	size_t n, m;
	mk_strbuf why = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	mk_err err = mk_ckpt_parse_offsets("ck", text, size, &v, &n, &why);
	free(text);
	if (err) {
		CHECK(err == MK_KAFKA_STORAGE_ERROR);
		CHECK(!strncmp(why.buf, "ck: ", 4));
		CHECK(v == NULL && n == 0);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		CHECK(v[i].partition >= 0 && v[i].offset >= 0);
		if (i) {
			int c = strcmp(v[i - 1].topic, v[i].topic);
			CHECK(c < 0 || (c == 0 && v[i - 1].partition < v[i].partition));
		}
	}
	mk_ckpt_format_offsets(&out, v, n);
	CHECK(mk_ckpt_parse_offsets("ck", out.buf, out.len, &w, &m, NULL) == MK_OK);
	CHECK(m == n);
	for (size_t i = 0; i < n; i++)
		CHECK(!strcmp(v[i].topic, w[i].topic) &&
		      v[i].partition == w[i].partition && v[i].offset == w[i].offset);
	mk_ckpt_offsets_free(v, n);
	mk_ckpt_offsets_free(w, m);
out:
	mk_strbuf_release(&why);
	mk_strbuf_release(&out);
}

static void fuzz_epochs(const uint8_t *data, size_t size)
{
	char *text = copy_of(data, size);
	mk_epoch_entry *v, *w;
	size_t n, m;
	mk_strbuf why = MK_STRBUF_INIT, out = MK_STRBUF_INIT;
	mk_err err = mk_ckpt_parse_epochs("ck", text, size, &v, &n, &why);
	free(text);
	if (err) {
		CHECK(err == MK_KAFKA_STORAGE_ERROR);
		CHECK(!strncmp(why.buf, "ck: line ", 9));
		CHECK(v == NULL && n == 0);
		goto out;
	}
	check_epochs(v, n);
	mk_ckpt_format_epochs(&out, v, n);
	CHECK(mk_ckpt_parse_epochs("ck", out.buf, out.len, &w, &m, NULL) == MK_OK);
	CHECK(m == n);
	for (size_t i = 0; i < n; i++)
		CHECK(v[i].epoch == w[i].epoch &&
		      v[i].start_offset == w[i].start_offset);
	free(v);
	free(w);
out:
	mk_strbuf_release(&why);
	mk_strbuf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = copy_of(data, size);
	fuzz_log_checkpoint(text);
	free(text);
	fuzz_offsets(data, size);
	fuzz_epochs(data, size);
	return 0;
}
