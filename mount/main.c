/*
 * main.c — the minikafkafs daemon.
 *
 *     minikafkafs [-f] [-d] [-o config=FILE] [-o OPTION...] DATA_DIR MOUNTPOINT
 *
 * Configuration: DATA_DIR/minikafka.ini when present, else -o config=FILE,
 * else built-in defaults. Start-up refuses (one line on stderr, exit 1)
 * only what cannot be served: an unreadable or invalid configuration, a
 * DATA_DIR that is not a directory, unreadable metadata. The root object
 * (mkfs) is the only state; FUSE's signal handling turns SIGTERM and
 * SIGINT into an unmount, after which the cluster is closed gracefully.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "fileio.h"
#include "ops.h"

struct options {
	char *config;
	char *data_dir;
	int show_help;
};

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("config=%s", config),
	OPT("-h", show_help),
	OPT("--help", show_help),
	FUSE_OPT_END
};

static int take_data_dir(void *data, const char *arg, int key,
			 struct fuse_args *outargs)
{
	(void)outargs;
	struct options *o = data;
	if (key == FUSE_OPT_KEY_NONOPT && !o->data_dir) {
		o->data_dir = strdup(arg);
		return 0;     /* consumed: the next non-option is the mountpoint */
	}
	return 1;
}

static const char *argv_joined(int argc, char *argv[])
{
	static char buf[4096];
	buf[0] = '\0';
	for (int i = 1; i < argc; i++) {
		strncat(buf, argv[i], sizeof(buf) - strlen(buf) - 2);
		strcat(buf, " ");
	}
	return buf;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-f] [-d] [-o config=FILE] [-o OPTION...] DATA_DIR MOUNTPOINT\n"
		"unmount with: fusermount3 -u MOUNTPOINT\n", prog);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct options opts = { 0 };
	if (fuse_opt_parse(&args, &opts, option_spec, take_data_dir) == -1)
		return 1;
	if (opts.show_help || !opts.data_dir) {
		usage(argv[0]);
		if (opts.show_help) {
			fuse_opt_add_arg(&args, "--help");
			fuse_main(args.argc, args.argv, &mk_fuse_ops, NULL);
		}
		fuse_opt_free_args(&args);
		return opts.show_help ? 0 : 1;
	}

	struct stat st;
	if (stat(opts.data_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "minikafkafs: %s is not a directory\n", opts.data_dir);
		return 1;
	}
	if (mk_mkdirs(opts.data_dir)) {
		fprintf(stderr, "minikafkafs: cannot create %s: %s\n", opts.data_dir,
			strerror(errno));
		return 1;
	}
	char data_dir[PATH_MAX];
	if (!realpath(opts.data_dir, data_dir)) {
		fprintf(stderr, "minikafkafs: %s: %s\n", opts.data_dir, strerror(errno));
		return 1;
	}

	mk_config cfg;
	mk_config_defaults(&cfg);
	mk_strbuf why = MK_STRBUF_INIT, ini = MK_STRBUF_INIT;
	mk_strbuf_addf(&ini, "%s/minikafka.ini", data_dir);
	const char *cfg_path = access(ini.buf, F_OK) == 0 ? ini.buf : opts.config;
	if (cfg_path && access(cfg_path, R_OK) != 0) {
		fprintf(stderr, "minikafkafs: cannot read configuration %s: %s\n",
			cfg_path, strerror(errno));
		return 1;
	}
	if (cfg_path && mk_config_load(&cfg, cfg_path, &why)) {
		fprintf(stderr, "minikafkafs: %s\n", why.buf);
		return 1;
	}

	mk_cluster *cluster;
	if (mk_cluster_open(data_dir, &cfg, &cluster, &why)) {
		fprintf(stderr, "minikafkafs: %s\n", why.len ? why.buf : "cannot open the cluster");
		return 1;
	}
	mkfs fs = { .cluster = cluster, .readme = (char *)mk_readme_text };
	/* libfuse 3.14 complains about its own idle-thread default unless set. */
	if (!strstr(argv_joined(argc, argv), "max_idle_threads="))
		fuse_opt_add_arg(&args, "-omax_idle_threads=16");
	int rc = fuse_main(args.argc, args.argv, &mk_fuse_ops, &fs);
	mk_cluster_close(cluster);
	fuse_opt_free_args(&args);
	mk_strbuf_release(&why);
	mk_strbuf_release(&ini);
	free(opts.config);
	free(opts.data_dir);
	return rc;
}
