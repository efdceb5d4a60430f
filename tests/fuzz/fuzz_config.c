/*
 * fuzz_config.c — libFuzzer target for the configuration loader
 * (core/base/config.c through iniparser), fed an INI text written to a file.
 *
 * The input is written as it is to a temporary minikafka.ini and loaded
 * over the defaults. A refusal must say why. An accepted configuration is
 * printed (mk_config_format, what /config shows), and that text must load
 * again, over fresh defaults, to a configuration printing the same: what
 * the daemon accepts and shows it can also read back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_config: check failed: %s (line %d)\n", \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void write_file(const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(p, 1, n, f) == n);
	CHECK(fclose(f) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/mk-fuzz-config-%d.ini",
			 (int)getpid());
	}
	write_file(data, size);
	mk_config cfg;
	mk_config_defaults(&cfg);
	mk_strbuf why = MK_STRBUF_INIT, a = MK_STRBUF_INIT, b = MK_STRBUF_INIT;
	mk_err err = mk_config_load(&cfg, path, &why);
	if (err) {
		CHECK(err == MK_INVALID_CONFIG);
		CHECK(why.len > 0);
		goto out;
	}
	CHECK(cfg.nbrokers >= 1 && cfg.nbrokers <= MK_MAX_BROKERS);
	mk_config_format(&cfg, &a);
	write_file(a.buf, a.len);
	mk_config again;
	mk_config_defaults(&again);
	mk_strbuf_reset(&why);
	err = mk_config_load(&again, path, &why);
	if (err)
		fprintf(stderr, "reload failed: %s\n%s", why.buf, a.buf);
	CHECK(err == MK_OK);
	mk_config_format(&again, &b);
	CHECK(a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0);
out:
	unlink(path);
	mk_strbuf_release(&why);
	mk_strbuf_release(&a);
	mk_strbuf_release(&b);
	return 0;
}
