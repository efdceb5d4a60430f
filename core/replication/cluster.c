/*
 * cluster.c — the cluster's lifecycle: open (the data directory's lock,
 * the metadata file, the mount's checks of the directories against it,
 * every topic's partitions opened, a first save), start (the saver, and in
 * auto mode the fetchers and the periodic tasks), the first step of a
 * stop, and close. The rest of the cluster is one file per concept
 * (cluster_internal.h lists them).
 *
 * Invariants: no data is removed because metadata does not know it (a
 * directory holding a batch that no topic owns refuses the open; what
 * holds none is what an interrupted creation leaves, and goes with an
 * /errors line); metadata a failed open could not load is never
 * overwritten (opened); the data directory's lock is held from the first
 * step of open to the last of close, so one daemon alone writes it.
 *
 * Locking: open and close run alone (no other thread has the cluster yet,
 * or any more: close joins them first); shutting_down is set under
 * stop_lock with stop_cond broadcast, which is what every timed wait of
 * the cluster's threads waits on (cluster_stop_wait).
 */
#include "cluster_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fdcache.h"
#include "fileio.h"
#include "flushpool.h"
#include "metadata.h"
#include "xalloc.h"

/* Threads of the flusher pool: two for fsyncs, so that one slow fsync
 * does not hold up every other log's, and one that only makes the next
 * segments' files (quick tasks, flushpool.h), so that those are ready
 * before the roll that needs them however long the fsyncs take. */
#define MK_FLUSH_THREADS 3

/*
 * Segment descriptors the cache may keep open: half the soft descriptor
 * limit (the rest is for FUSE, checkpoints, metadata, snapshots and the
 * files users open), at least 32.
 */
static int fd_budget(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > (1u << 30))
		return 1 << 20;
	int n = (int)(rl.rlim_cur / 2);
	return n < 32 ? 32 : n;
}

/* ---- the directories at mount --------------------------------------------- */

/*
 * Is d a replica of a topic in the loaded metadata (one being deleted
 * too: finish_deletion removes its files)?
 */
static bool known_replica(const mk_metadata *md, const mk_meta_dir *d)
{
	const mk_metadata_topic *t = d->topic ? mk_metadata_find(md, d->topic) : NULL;
	if (!t || d->partition >= t->npartitions)
		return false;
	for (int r = 0; r < t->parts[d->partition].nreplicas; r++)
		if (t->parts[d->partition].brokers[r] == d->broker)
			return true;
	return false;
}

/* "broker-1" or "broker-1..broker-3": the brokers of what holds data no
 * topic owns; the count of those entries; the first one. */
static size_t unowned_data(const mk_metadata *md, const mk_meta_dirs *dirs,
			   mk_strbuf *brokers, const mk_meta_dir **first)
{
	size_t n = 0;
	int lo = 0, hi = 0;
	*first = NULL;
	for (size_t i = 0; i < dirs->n; i++) {
		const mk_meta_dir *d = &dirs->v[i];
		if (!d->data || known_replica(md, d))
			continue;
		if (!n++) {
			*first = d;
			lo = d->broker;
		}
		hi = d->broker;      /* the scan is in broker order */
	}
	if (n)
		mk_strbuf_addf(brokers, lo == hi ? "broker-%d" : "broker-%d..broker-%d",
			       lo, hi);
	return n;
}

/*
 * No data is removed because metadata does not know it. Before anything
 * changes: with rebuild, the topics metadata lacks come back from their
 * directories (mk_metadata_rebuild); what still holds data no topic owns
 * then refuses the start (one line in why, nothing changed).
 */
static mk_err check_dirs(mk_cluster *c, mk_metadata *md,
			 const mk_meta_dirs *dirs, bool rebuild, mk_strbuf *why)
{
	mk_err err = MK_OK;
	if (rebuild && (err = mk_metadata_rebuild(c->data_dir, &c->cfg, dirs, md,
						  &c->errlog, why))) {
		mk_why(why, "; refusing to start (nothing was changed)");
		return err;
	}
	mk_strbuf brokers = MK_STRBUF_INIT;
	const mk_meta_dir *d;
	size_t n = unowned_data(md, dirs, &brokers, &d);
	if (n && why && !md->present && !rebuild)
		mk_strbuf_addf(why, "%s/metadata is missing, but %zu partition director%s under %s hold%s data; refusing to start (nothing was changed): restore the file, or mount with -o rebuild_metadata to rebuild it from the directories",
			       c->data_dir, n, n == 1 ? "y" : "ies", brokers.buf,
			       n == 1 ? "s" : "");
	else if (n && why && !rebuild && d->topic && !mk_metadata_find(md, d->topic))
		mk_strbuf_addf(why, "%s: %zu partition director%s under %s hold%s data that no topic in %s/metadata owns (the first: broker-%d/%s); refusing to start (nothing was changed): mount with -o rebuild_metadata to add their topics from the directories, or move them aside",
			       c->data_dir, n, n == 1 ? "y" : "ies", brokers.buf,
			       n == 1 ? "s" : "", c->data_dir, d->broker, d->entry);
	else if (n && why)
		mk_strbuf_addf(why, "%s/broker-%d/%s holds data that no topic in %s/metadata owns (%s); refusing to start (nothing was changed): move it aside",
			       c->data_dir, d->broker, d->entry, c->data_dir,
			       d->topic ? "its topic has no such replica" : "not a TOPIC-PARTITION directory");
	mk_strbuf_release(&brokers);
	return n ? MK_INVALID_CONFIG : MK_OK;
}

/*
 * What no topic owns and holds no batch is what an interrupted creation
 * leaves (check_dirs refused the start for anything else): it goes at
 * mount, each with an /errors line. Every broker directory is marked for
 * spread partition directories on the way.
 */
static void sweep_strays(mk_cluster *c, const mk_metadata *md,
			 const mk_meta_dirs *dirs)
{
	mk_strbuf path = MK_STRBUF_INIT;
	for (size_t b = 0; b < dirs->nbrokers; b++) {
		mk_strbuf_reset(&path);
		mk_strbuf_addf(&path, "%s/broker-%d", c->data_dir, dirs->brokers[b]);
		/* A broker directory made before they were marked gets the
		 * mark (replica_store.c, broker_dir): a no-op once set. */
		mk_dir_spread_subdirs(path.buf);
		bool removed = false;
		for (size_t i = 0; i < dirs->n; i++) {
			const mk_meta_dir *d = &dirs->v[i];
			if (d->broker != dirs->brokers[b] || d->data ||
			    known_replica(md, d))
				continue;
			mk_strbuf one = MK_STRBUF_INIT;
			mk_strbuf_addf(&one, "%s/%s", path.buf, d->entry);
			mk_remove_tree(one.buf);
			mk_errlog_add(&c->errlog, mk_wall_ms(), NULL, MK_OK,
				      "removed %s: no topic in metadata owns it and it holds no batch (what a creation interrupted before its save leaves)",
				      one.buf);
			mk_strbuf_release(&one);
			removed = true;
		}
		if (removed)
			mk_fsync_dir(path.buf);
	}
	mk_strbuf_release(&path);
}

/* The directories against the metadata: check, rebuild, sweep. */
static mk_err open_dirs(mk_cluster *c, mk_metadata *md, bool rebuild,
			mk_strbuf *why)
{
	mk_meta_dirs dirs;
	mk_metadata_scan_dirs(c->data_dir, &dirs);
	mk_err err = check_dirs(c, md, &dirs, rebuild, why);
	if (!err)
		sweep_strays(c, md, &dirs);
	mk_meta_dirs_free(&dirs);
	return err;
}

/* A deletion decided before a crash: its files go now. */
static void finish_deletion(mk_cluster *c, const mk_metadata_topic *mt)
{
	for (int p = 0; p < mt->npartitions; p++)
		mk_partition_remove_files(&c->env, mt->name, p, &mt->parts[p]);
	mk_errlog_add(&c->errlog, mk_wall_ms(), NULL, MK_OK,
		      "topic %s: deletion finished at mount", mt->name);
}

/* ---- open --------------------------------------------------------------------- */

mk_err mk_cluster_open(const char *data_dir, const mk_config *cfg,
		       mk_cluster **out, mk_strbuf *why)
{
	return mk_cluster_open_with(data_dir, cfg, NULL, out, why);
}

/* The data directory, made if missing, and its lock: one daemon per data
 * directory (a second one would write at its own offsets over the
 * first's). */
static mk_err lock_data_dir(const char *data_dir, int *lock_fd, mk_strbuf *why)
{
	if (mk_mkdirs(data_dir))
		return mk_error(why, MK_KAFKA_STORAGE_ERROR, "cannot create data directory %s",
				data_dir);
	int fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
		mk_why(why, "%s is in use by another minikafkafs (its lock is held); refusing to start",
		       data_dir);
		if (fd >= 0)
			close(fd);
		return MK_KAFKA_STORAGE_ERROR;
	}
	*lock_fd = fd;
	return MK_OK;
}

/* A cluster with no topic yet: its locks, clock, pools, the env its
 * partitions see, and the brokers with the states metadata saved. */
static mk_cluster *cluster_new(const char *data_dir, const mk_config *cfg,
			       int lock_fd, const mk_metadata *md)
{
	mk_cluster *c = mk_xcalloc(1, sizeof(*c));
	c->lock_fd = lock_fd;
	c->data_dir = mk_xstrdup(data_dir);
	c->cfg = *cfg;
	/* A manual clock resumes where it stood: time never moves back. */
	mk_clock_init(&c->clock, cfg->manual_clock, md->clock_ms);
	mk_errlog_init(&c->errlog);
	for (int i = 0; i < MK_MAX_BROKERS; i++)
		mk_notifier_init(&c->brokers[i].wake);
	c->flush_pool = mk_flush_pool_create(MK_FLUSH_THREADS);   /* started in mk_cluster_start */
	c->fdcache = mk_fdcache_new(fd_budget());
	c->env = (mk_env){
		.data_dir = c->data_dir, .cfg = &c->cfg, .clock = &c->clock,
		.errlog = &c->errlog, .shutting_down = &c->shutting_down,
		.meta_dirty = &c->meta_dirty,
		.fetch_wake = fetchers_wake_data, .fetch_wake_arg = c,
		.flush_pool = c->flush_pool, .fdcache = c->fdcache,
	};
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->clean_lock, NULL);
	pthread_mutex_init(&c->meta_lock, NULL);
	pthread_mutex_init(&c->stop_lock, NULL);
	pthread_cond_init(&c->stop_cond, NULL);
	pthread_mutex_init(&c->saver_lock, NULL);
	pthread_cond_init(&c->saver_cond, NULL);
	pthread_mutex_init(&c->hooks_lock, NULL);
	c->nbrokers = cfg->nbrokers;
	for (int i = 0; i < cfg->nbrokers; i++) {
		c->brokers[i].id = cfg->broker_ids[i];
		c->brokers[i].online = true;
		for (int j = 0; j < md->nbrokers; j++)
			if (md->broker_ids[j] == cfg->broker_ids[i])
				c->brokers[i].online = md->broker_online[j];
	}
	return c;
}

/* The producer identities and the topics of the metadata file: each
 * topic's partitions opened (their states get the brokers' online flags),
 * a deletion decided before a crash finished. */
static mk_err load_state(mk_cluster *c, mk_metadata *md, mk_strbuf *why)
{
	mk_err err = MK_OK;
	pthread_rwlock_wrlock(&c->lock);
	c->next_producer_id = md->next_producer_id;
	for (size_t i = 0; i < md->nproducers; i++)
		producers_put(c, md->producers[i].name, md->producers[i].id,
			      md->producers[i].epoch);
	for (size_t i = 0; i < md->ntopics && !err; i++) {
		mk_metadata_topic *mt = &md->topics[i];
		if (mt->deleting) {
			finish_deletion(c, mt);
			continue;
		}
		mk_topic_config tc;
		mk_topic_config_init(&tc, &c->cfg);
		err = topic_overrides_apply(&tc, (const char *const *)mt->overrides,
					    mt->noverrides, why);
		mk_topic *t = NULL;
		if (!err)
			err = topics_build(c, mt->name, mt->npartitions, mt->rf, &tc,
					   mt->parts, false, &t, why);
		size_t pos;
		if (!err && topics_find(c, mt->name, &pos) == NULL)
			topics_insert(c, t, pos);
		if (err && why)
			mk_strbuf_addf(why, " (topic %s)", mt->name);
	}
	pthread_rwlock_unlock(&c->lock);
	return err;
}

mk_err mk_cluster_open_with(const char *data_dir, const mk_config *cfg,
			    const mk_open_options *opts, mk_cluster **out,
			    mk_strbuf *why)
{
	*out = NULL;
	int lock_fd = -1;
	mk_err err = lock_data_dir(data_dir, &lock_fd, why);
	if (err)
		return err;
	mk_metadata md;
	if ((err = mk_metadata_load(data_dir, &md, why))) {
		close(lock_fd);
		return err;
	}
	mk_cluster *c = cluster_new(data_dir, cfg, lock_fd, &md);
	err = open_dirs(c, &md, opts && opts->rebuild_metadata, why);
	if (!err)
		err = load_state(c, &md, why);
	mk_metadata_free(&md);
	if (!err) {
		c->opened = true;
		atomic_fetch_add(&c->meta_dirty, 1);
		if ((err = mk_cluster_sync_metadata(c))) {
			mk_why(why, "cannot write %s/metadata", data_dir);
			c->opened = false;
		}
	}
	if (err) {
		mk_cluster_close(c);
		return err;
	}
	*out = c;
	return MK_OK;
}

/* ---- start, stop, close -------------------------------------------------------- */

void mk_cluster_start(mk_cluster *c)
{
	mk_flush_pool_start(c->flush_pool);
	saver_start(c);
	if (!c->cfg.auto_replication)
		return;
	tasks_start(c);
	fetchers_start(c);
	/* An acks=all writer copies its batch to one follower itself
	 * (replica.h, "The writer's copy"); its other followers' fetchers
	 * run meanwhile. Set before the filesystem serves a request. */
	c->env.writer_copy = true;
}

bool cluster_stop_wait(mk_cluster *c, int64_t ms)
{
	pthread_mutex_lock(&c->stop_lock);
	if (!c->shutting_down) {
		struct timespec ts = mk_timespec_after_ms(CLOCK_REALTIME, ms);
		pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &ts);
	}
	bool stop = c->shutting_down;
	pthread_mutex_unlock(&c->stop_lock);
	return stop;
}

void mk_cluster_begin_shutdown(mk_cluster *c)
{
	pthread_mutex_lock(&c->stop_lock);
	c->shutting_down = true;
	pthread_cond_broadcast(&c->stop_cond);
	pthread_mutex_unlock(&c->stop_lock);
	for (int i = 0; i < MK_MAX_BROKERS; i++)
		mk_notifier_stop(&c->brokers[i].wake);
	wake_partitions(c);
}

static void cluster_free(mk_cluster *c)
{
	for (size_t i = 0; i < c->ntopics; i++)
		mk_topic_put(c->topics[i]);
	free(c->topics);
	producers_free(c);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->clean_lock);
	pthread_mutex_destroy(&c->meta_lock);
	pthread_mutex_destroy(&c->stop_lock);
	pthread_cond_destroy(&c->stop_cond);
	pthread_mutex_destroy(&c->saver_lock);
	pthread_cond_destroy(&c->saver_cond);
	pthread_mutex_destroy(&c->hooks_lock);
	for (int i = 0; i < MK_MAX_BROKERS; i++)
		mk_notifier_destroy(&c->brokers[i].wake);
	mk_flush_pool_free(c->flush_pool);   /* every log is closed */
	mk_fdcache_free(c->fdcache);
	mk_errlog_destroy(&c->errlog);
	free(c->data_dir);
	if (c->lock_fd >= 0)
		close(c->lock_fd);   /* the data directory's lock goes last */
	free(c);
}

mk_err mk_cluster_close(mk_cluster *c)
{
	if (!c)
		return MK_OK;
	mk_cluster_begin_shutdown(c);
	fetchers_join(c);
	tasks_join(c);
	wake_partitions(c);
	/* The final save runs here, on this thread: the saver stops first
	 * (the partitions still call meta_notify, which only kicks). */
	saver_stop(c);
	mk_err err = MK_OK;
	if (c->opened)   /* never overwrite metadata we failed to load */
		err = mk_cluster_flush(c, NULL);
	cluster_free(c);
	return err;
}
