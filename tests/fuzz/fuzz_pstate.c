/*
 * fuzz_pstate.c — libFuzzer target for the producer snapshot parser
 * (core/storage/producer_state.c, mk_pstate_parse).
 *
 * The input (cut at its first NUL) is a producer-snapshot file. A refusal
 * must leave an empty state. An accepted snapshot must keep the state's
 * invariants (producers sorted by id, at most a window of batches each)
 * and survive a round trip: formatted, parsed again and formatted again,
 * the two texts are the same. Each accepted state then answers a check and
 * a next-sequence query without trouble.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "producer_state.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_pstate: check failed: %s (line %d)\n", \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	mk_producer_state ps, back;
	mk_pstate_init(&ps);
	mk_pstate_init(&back);
	mk_strbuf a = MK_STRBUF_INIT, b = MK_STRBUF_INIT;
	if (mk_pstate_parse(&ps, text) != MK_OK) {
		CHECK(ps.n == 0 && ps.covered_to == 0);
		goto out;
	}
	CHECK(ps.covered_to >= 0);
	for (size_t i = 0; i < ps.n; i++) {
		const mk_producer_entry *e = &ps.v[i];
		CHECK(e->pid >= 0);
		CHECK(i == 0 || ps.v[i - 1].pid < e->pid);
		CHECK(e->n >= 0 && e->n <= MK_PRODUCER_WINDOW);
		const mk_seq_entry *dup;
		int32_t next = mk_pstate_next_seq(&ps, e->pid, e->epoch);
		(void)mk_pstate_check(&ps, e->pid, e->epoch, next, 1, &dup,
				      NULL);
		if (e->n)
			(void)mk_pstate_check(&ps, e->pid, e->epoch,
					      e->recent[0].first_seq, 1, &dup,
					      NULL);
	}
	mk_pstate_format(&ps, &a);
	CHECK(mk_pstate_parse(&back, a.buf) == MK_OK);
	mk_pstate_format(&back, &b);
	CHECK(a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0);
out:
	mk_strbuf_release(&a);
	mk_strbuf_release(&b);
	mk_pstate_free(&ps);
	mk_pstate_free(&back);
	free(text);
	return 0;
}
