/*
 * main.c — the minikafkafs daemon.
 *
 *     minikafkafs [-f] [-d] [-s] [-o config=FILE] [-o rebuild_metadata]
 *                 [-o OPTION...] DATA_DIR MOUNTPOINT
 *     mount -t fuse.minikafkafs [-o OPTION...] DATA_DIR MOUNTPOINT
 *
 * The second form is mount(8)'s: mount.fuse3 runs `minikafkafs DATA_DIR
 * MOUNTPOINT -o OPTIONS` (options after the operands). Options that only
 * mean something in /etc/fstab (nofail, _netdev, auto, noauto, user,
 * users, nouser, owner, defaults, comment=) are accepted and ignored, so
 * the same line works whichever helper passes it on. The mount shows as
 * type fuse.minikafkafs with DATA_DIR as its source.
 *
 * Configuration: DATA_DIR/minikafka.ini when present, else -o config=FILE,
 * else built-in defaults. Start-up refuses (one line on stderr, exit 1)
 * only what cannot be served: an unreadable or invalid configuration (or
 * one that is not a regular file), a DATA_DIR that is not a directory or
 * that another daemon holds, damaged metadata (cluster.h, metadata.h), a
 * partition directory holding data that no topic in the metadata owns (a
 * missing metadata file beside broker directories with data among them;
 * -o rebuild_metadata rebuilds the topics metadata lacks from their
 * directories instead, mk_cluster_open_with). A failed final save at
 * unmount exits 1. The root object
 * (mkfs) is the only state. SIGTERM and SIGINT end the request loop like
 * an unmount does; then files left open are released, the cluster is
 * closed gracefully (producers flushed, logs fsynced, metadata saved) and
 * the exit status is 0.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "failpoint.h"
#include "fileio.h"
#include "group.h"
#include "inodes.h"
#include "khandlers.h"
#include "kpark.h"
#include "kserver.h"
#include "ops.h"
#include "park.h"
#include "producer.h"
#include "txn.h"
#include "xalloc.h"

struct options {
	char *config;
	char *data_dir;
	int rebuild_metadata;
	int show_help;
};

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("config=%s", config),
	OPT("rebuild_metadata", rebuild_metadata),
	OPT("-h", show_help),
	OPT("--help", show_help),
	/* /etc/fstab's own options: nothing to do with the mount itself. */
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("owner", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("comment=", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

/* The first non-option is DATA_DIR; the next is left for the mountpoint. */
static int take_data_dir(void *data, const char *arg, int key,
			 struct fuse_args *outargs)
{
	(void)outargs;
	struct options *o = data;
	if (key == FUSE_OPT_KEY_NONOPT && !o->data_dir) {
		o->data_dir = mk_xstrdup(arg);
		return 0;
	}
	return 1;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-f] [-d] [-s] [-o config=FILE] [-o rebuild_metadata] [-o OPTION...] DATA_DIR MOUNTPOINT\n"
		"  -o rebuild_metadata  rebuild the topics DATA_DIR/metadata lacks (all, when it is missing)\n"
		"                       from the partition directories, removing nothing\n"
		"unmount with: fusermount3 -u MOUNTPOINT\n", prog);
}

/*
 * A stop by signal (SIGINT, SIGTERM, SIGHUP): in place of libfuse's
 * handler, which ends the loop at once, ours asks the root object
 * (mk_fs_stop: a step of paged records waiting for reads must end first,
 * viewmemo.h). A handler reaches its root object only through a static,
 * as libfuse's reaches its session; set while the loop runs.
 */
static mkfs *volatile stop_fs;
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction stop_saved[3];

static void on_stop_signal(int sig)
{
	(void)sig;
	if (stop_fs)
		mk_fs_stop(stop_fs);
}

static void stop_signals_set(mkfs *fs)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;    /* no SA_RESTART: the loop's wait sees EINTR */
	stop_fs = fs;
	for (size_t i = 0; i < 3; i++)
		sigaction(stop_signals[i], &sa, &stop_saved[i]);
}

/* libfuse's handlers again, for fuse_remove_signal_handlers to remove. */
static void stop_signals_reset(void)
{
	for (size_t i = 0; i < 3; i++)
		sigaction(stop_signals[i], &stop_saved[i], NULL);
	stop_fs = NULL;
}

/* ---- the Kafka protocol (net/) -------------------------------------------- */

/* The cluster's broker hook: a broker's listener follows it. */
static void broker_changed(void *arg, int broker, bool online)
{
	mk_kserver_broker(arg, broker, online);
}

/* Is the broker up now (what a listener change is checked against). */
static bool broker_online(void *arg, int broker)
{
	return mk_cluster_broker_online(arg, broker);
}

/* /brokers/B/listener (fs/ does not know net/). */
static bool broker_listener(void *arg, int broker, mk_strbuf *out)
{
	return mk_kserver_listener(arg, broker, out);
}

/* The listeners of the brokers online now, and the network thread: after
 * daemonizing (a fork keeps no thread). */
static void start_protocol(mkfs *fs, mk_kserver *ks)
{
	mk_cluster *c = fs->cluster;
	bool online[MK_MAX_BROKERS];
	for (int i = 0; i < c->nbrokers; i++)
		online[i] = mk_cluster_broker_online(c, c->brokers[i].id);
	mk_kserver_start(ks, online);
}

/* Mount, serve until unmounted or signalled, unmount. */
static int serve(struct fuse_args *args, struct fuse_cmdline_opts *fopts,
		 mkfs *fs, mk_kserver *ks)
{
	struct fuse_session *se = fuse_session_new(args, &mk_ll_ops,
						   sizeof(mk_ll_ops), fs);
	if (!se)
		return 1;
	fs->session = se;
	fs->workers = fopts->singlethread ? 1 : fopts->max_threads;
	int rc = 1;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy;
	stop_signals_set(fs);
	if (fuse_session_mount(se, fopts->mountpoint) != 0)
		goto out_signals;
	if (fuse_daemonize(fopts->foreground) != 0)
		goto out_unmount;
	start_protocol(fs, ks);
	/* After daemonizing (a fork): the thread that runs the loop. */
	fs->loop_thread = pthread_self();
	fs->has_loop_thread = true;
	if (fopts->singlethread) {
		fuse_session_loop(se);
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		fuse_loop_cfg_set_clone_fd(cfg, (unsigned)fopts->clone_fd);
		fuse_loop_cfg_set_max_threads(cfg, fopts->max_threads);
		/* libfuse's own default here is "unset", which it complains of. */
		fuse_loop_cfg_set_idle_threads(cfg, fopts->max_idle_threads > 1000
					       ? 16 : fopts->max_idle_threads);
		fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
	rc = 0;    /* unmounted, or stopped by a signal: both are graceful */
	/* Answer what is still parked while the session can carry replies;
	 * the shutdown first ends a command waiting inside the cluster. */
	mk_cluster_begin_shutdown(fs->cluster);
	mk_parking_stop(fs->parking);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	stop_signals_reset();
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
	return rc;
}

/* Load the configuration; 0 or 1 (with the line already printed). */
static int load_config(const char *data_dir, const char *opt_config,
		       mk_config *cfg)
{
	mk_config_defaults(cfg);
	mk_strbuf ini = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	mk_strbuf_addf(&ini, "%s/minikafka.ini", data_dir);
	const char *path = access(ini.buf, F_OK) == 0 ? ini.buf : opt_config;
	int rc = 0;
	struct stat st;
	if (path && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "minikafkafs: configuration %s is not a regular file\n",
			path);
		rc = 1;
	} else if (path && access(path, R_OK) != 0) {
		fprintf(stderr, "minikafkafs: cannot read configuration %s: %s\n",
			path, strerror(errno));
		rc = 1;
	} else if (path && mk_config_load(cfg, path, &why)) {
		fprintf(stderr, "minikafkafs: %s\n", why.buf);
		rc = 1;
	}
	mk_strbuf_release(&ini);
	mk_strbuf_release(&why);
	return rc;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct options opts = { 0 };
	struct fuse_cmdline_opts fopts = { 0 };
	int rc = 1;
	if (fuse_opt_parse(&args, &opts, option_spec, take_data_dir) == -1 ||
	    fuse_parse_cmdline(&args, &fopts) != 0)
		goto out;
	if (opts.show_help || fopts.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		rc = 0;
		goto out;
	}
	if (!opts.data_dir || !fopts.mountpoint) {
		usage(argv[0]);
		goto out;
	}
	if (!mk_failpoint_init_env()) {
		fprintf(stderr, "minikafkafs: MKFS_FAILPOINTS is malformed "
			"(write name[@N][,name[@N]...])\n");
		goto out;
	}

	struct stat st;
	if (stat(opts.data_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "minikafkafs: %s is not a directory\n", opts.data_dir);
		goto out;
	}
	char data_dir[PATH_MAX];
	if (mk_mkdirs(opts.data_dir) || !realpath(opts.data_dir, data_dir)) {
		fprintf(stderr, "minikafkafs: cannot use %s: %s\n", opts.data_dir,
			strerror(errno));
		goto out;
	}
	mk_config cfg;
	if (load_config(data_dir, opts.config, &cfg))
		goto out;
	/* A file size limit (ulimit -f) makes a write that starts past it
	 * raise SIGXFSZ, whose default kills the process: ignored, the write
	 * fails with EFBIG instead, which the log reports as a storage error
	 * (/errors) on the partition it hit, as it does a full disk. */
	signal(SIGXFSZ, SIG_IGN);
	/* In /proc/mounts: "DATA_DIR MOUNTPOINT fuse.minikafkafs ...", as a
	 * mount -t fuse.minikafkafs names it (an explicit -o wins). */
	mk_strbuf mopt = MK_STRBUF_INIT;
	mk_strbuf_addstr(&mopt, "-osubtype=minikafkafs,fsname=");
	for (const char *c = data_dir; *c; c++) {
		if (*c == ',' || *c == '\\')
			mk_strbuf_addch(&mopt, '\\');
		mk_strbuf_addch(&mopt, *c);
	}
	if (fuse_opt_insert_arg(&args, 1, mopt.buf) != 0) {
		mk_strbuf_release(&mopt);
		goto out;
	}
	mk_strbuf_release(&mopt);

	mk_cluster *cluster;
	mk_strbuf why = MK_STRBUF_INIT;
	mk_open_options oo = { .rebuild_metadata = opts.rebuild_metadata != 0 };
	if (mk_cluster_open_with(data_dir, &cfg, &oo, &cluster, &why)) {
		fprintf(stderr, "minikafkafs: %s\n", why.len ? why.buf : "cannot open the cluster");
		mk_strbuf_release(&why);
		goto out;
	}
	mk_strbuf_release(&why);
	mk_groups *groups = NULL;
	if (mk_groups_open(cluster, &groups, &why)) {
		fprintf(stderr, "minikafkafs: %s\n", why.len ? why.buf : "cannot open the group coordinator");
		mk_strbuf_release(&why);
		mk_cluster_close(cluster);
		goto out;
	}
	/* After the groups: a prepared transaction commits its offsets. */
	mk_txns *txns = NULL;
	if (mk_txns_open(cluster, groups, &txns, &why)) {
		fprintf(stderr, "minikafkafs: %s\n", why.len ? why.buf : "cannot open the transaction coordinator");
		mk_strbuf_release(&why);
		mk_groups_close(groups);
		mk_cluster_close(cluster);
		goto out;
	}
	mkfs fs = { .cluster = cluster, .groups = groups, .readme = (char *)mk_readme_text,
		    .producers = mk_producers_new(cluster), .txns = txns,
		    .inodes = mk_inodes_new(), .owner = getuid() };
	pthread_mutex_init(&fs.handles_lock, NULL);
	/* The Kafka protocol on every broker (net/): its handlers make the
	 * same core calls as the files. */
	int ids[MK_MAX_BROKERS];
	for (int i = 0; i < cluster->nbrokers; i++)
		ids[i] = cluster->brokers[i].id;
	mk_khandlers kh = { .cluster = cluster, .errlog = &cluster->errlog,
			    .cluster_id = "minikafkafs" };
	mk_kserver *ks = mk_kserver_new(&cfg, ids, cluster->nbrokers,
					&cluster->errlog, mk_khandle, &kh,
					broker_online, cluster);
	kh.server = ks;
	if (ks)
		mk_kserver_on_stop(ks, mk_kpark_stop_all, &kh);
	fs.listener = broker_listener;
	fs.listener_arg = ks;
	mk_cluster_on_broker(cluster, broker_changed, ks);
	rc = serve(&args, &fopts, &fs, ks);
	/* No request of a client runs past here: they use the cluster. */
	mk_cluster_on_broker(cluster, NULL, NULL);
	fs.listener = NULL;
	mk_kserver_free(ks);
	/*
	 * The loop has ended and joined its threads: nothing uses a handle.
	 * Waits end at once from here, so releasing files left open (their
	 * carried lines and lingering batches are appended) cannot hang on
	 * acknowledgements nobody will deliver.
	 */
	mk_cluster_begin_shutdown(cluster);
	mk_fs_release_all(&fs);
	mk_producers_free(fs.producers);
	mk_txns_close(txns);
	mk_groups_close(groups);
	if (mk_cluster_close(cluster) != MK_OK) {
		fprintf(stderr, "minikafkafs: the final flush or metadata save failed; "
			"the next mount recovers from what is on disk\n");
		rc = 1;
	}
	mk_parking_free(fs.parking);
	mk_inodes_free(fs.inodes);
	pthread_mutex_destroy(&fs.handles_lock);
out:
	fuse_opt_free_args(&args);
	free(fopts.mountpoint);
	free(opts.config);
	free(opts.data_dir);
	return rc;
}
