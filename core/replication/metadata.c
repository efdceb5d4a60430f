#include "metadata.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "clock.h"
#include "failpoint.h"
#include "fileio.h"
#include "log.h"
#include "logdir.h"
#include "parse.h"
#include "xalloc.h"
#include "topic_name.h"

static size_t mk_count_lines(const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += s[i] == '\n';
	return k;
}

mk_err mk_metadata_write(const char *data_dir, mk_strbuf *text, mk_errlog *log)
{
	mk_strbuf path = MK_STRBUF_INIT;
	mk_strbuf_addf(text, "checksum %08lx\n",
		       crc32(0L, (const Bytef *)text->buf, (uInt)text->len));
	mk_strbuf_addf(&path, "%s/metadata", data_dir);
	MK_FAILPOINT("meta.save.before-write");
	mk_err err = mk_file_replace_fp(path.buf, text->buf, text->len, "meta.save");
	if (!err)
		MK_FAILPOINT("meta.save.done");
	else
		mk_errlog_add(log, mk_wall_ms(), NULL, err,
			      "cannot write %s: %s; the change is not made",
			      path.buf, strerror(errno));
	mk_strbuf_release(&path);
	return err;
}

/*
 * Parsing. One step per line kind (the table below), each taking the
 * line's tokens after the kind; every integer goes through core/base/parse.h
 * (no atoi: `broker x online` is refused, not read as broker 0), every
 * token is accounted for, and a line that does not parse fails the load
 * with its kind named.
 */

#define MAX_TOKENS 64

/* A line cut at spaces: tok[0] is the kind. */
typedef struct {
	char *tok[MAX_TOKENS];
	int n;
	bool too_many;
} tokens;

static void tokenize(char *line, tokens *t)
{
	char *save = NULL;
	t->n = 0;
	t->too_many = false;
	for (char *w = strtok_r(line, " ", &save); w;
	     w = strtok_r(NULL, " ", &save)) {
		if (t->n == MAX_TOKENS) {
			t->too_many = true;
			return;
		}
		t->tok[t->n++] = w;
	}
}

static bool parse_int(const char *s, int64_t lo, int64_t hi, int *out)
{
	int64_t v;
	if (!mk_parse_range(s, lo, hi, &v))
		return false;
	*out = (int)v;
	return true;
}

/* "ID,ID,..." (possibly empty): broker ids >= 0, at most MK_MAX_BROKERS. */
static bool parse_ids(const char *s, int *ids, int *n)
{
	*n = 0;
	if (!*s)
		return true;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char num[24];
		if (len == 0 || len >= sizeof(num) || *n == MK_MAX_BROKERS)
			return false;
		memcpy(num, s, len);
		num[len] = '\0';
		if (!parse_int(num, 0, INT32_MAX, &ids[*n]))
			return false;
		(*n)++;
		if (!comma)
			return true;
		s = comma + 1;
	}
}

static mk_metadata_topic *find_in(mk_metadata_topic *topics, size_t n,
				  const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(topics[i].name, name))
			return &topics[i];
	return NULL;
}

static mk_metadata_topic *find_topic(mk_metadata *md, const char *name)
{
	return find_in(md->topics, md->ntopics, name);
}

const mk_metadata_topic *mk_metadata_find(const mk_metadata *md,
					  const char *name)
{
	return find_in(md->topics, md->ntopics, name);
}

static bool has_id(const int *ids, int n, int id)
{
	for (int i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* The values of a partition line make sense together. */
static bool partition_valid(const mk_metadata_topic *t,
			    const mk_partition_state *st, mk_strbuf *why)
{
	const char *what = NULL;
	if (st->nreplicas != t->rf)
		what = "replicas do not match the replication factor";
	for (int i = 0; !what && i < st->nreplicas; i++)
		if (has_id(st->brokers, i, st->brokers[i]))
			what = "a broker is listed twice in replicas";
	for (int i = 0; !what && i < st->nisr; i++)
		if (has_id(st->isr, i, st->isr[i]) ||
		    !has_id(st->brokers, st->nreplicas, st->isr[i]))
			what = "isr is not a set of the replicas";
	if (!what && st->nisr < 1)
		what = "isr is empty";
	if (!what && st->leader != -1 &&
	    !has_id(st->brokers, st->nreplicas, st->leader))
		what = "the leader is not a replica";
	if (what && why)
		mk_strbuf_addf(why, "%s; ", what);
	return what == NULL;
}

/* "broker ID online|offline", each broker once */
static bool parse_broker(mk_metadata *md, char **a, int n, mk_strbuf *why)
{
	(void)why;
	int id;
	if (n != 2 || md->nbrokers == MK_MAX_BROKERS ||
	    !parse_int(a[0], 0, INT32_MAX, &id) ||
	    (strcmp(a[1], "online") && strcmp(a[1], "offline")))
		return false;
	for (int i = 0; i < md->nbrokers; i++)
		if (md->broker_ids[i] == id)
			return false;
	md->broker_ids[md->nbrokers] = id;
	md->broker_online[md->nbrokers++] = !strcmp(a[1], "online");
	return true;
}

/* "clock MS" */
static bool parse_clock(mk_metadata *md, char **a, int n, mk_strbuf *why)
{
	(void)why;
	return n == 1 && mk_parse_range(a[0], 0, INT64_MAX, &md->clock_ms);
}

/* "next_producer_id N" */
static bool parse_next_producer_id(mk_metadata *md, char **a, int n, mk_strbuf *why)
{
	(void)why;
	return n == 1 &&
	       mk_parse_range(a[0], 0, INT64_MAX, &md->next_producer_id);
}

/* "producer NAME ID EPOCH", each name once */
static bool parse_producer(mk_metadata *md, char **a, int n, mk_strbuf *why)
{
	(void)why;
	int64_t id;
	int epoch;
	if (n != 3 || !mk_topic_name_valid(a[0]) ||
	    !mk_parse_range(a[1], 0, INT64_MAX, &id) ||
	    !parse_int(a[2], 0, INT16_MAX, &epoch))
		return false;
	for (size_t i = 0; i < md->nproducers; i++)
		if (!strcmp(md->producers[i].name, a[0]))
			return false;
	md->producers = mk_xreallocarray(md->producers, md->nproducers + 1,
					 sizeof(*md->producers));
	mk_producer_id *v = &md->producers[md->nproducers++];
	v->name = mk_xstrdup(a[0]);
	v->id = id;
	v->epoch = (int16_t)epoch;
	return true;
}

/* "topic NAME PARTITIONS RF [KEY=VALUE]..." */
static bool parse_topic(mk_metadata *md, char **a, int n, mk_strbuf *why)
{
	(void)why;
	int np, rf;
	if (n < 3 || !mk_topic_name_valid(a[0]) || find_topic(md, a[0]) ||
	    !parse_int(a[1], 1, 1024, &np) ||
	    !parse_int(a[2], 1, MK_MAX_BROKERS, &rf))
		return false;
	md->topics = mk_xreallocarray(md->topics, md->ntopics + 1,
				      sizeof(*md->topics));
	mk_metadata_topic *t = &md->topics[md->ntopics++];
	memset(t, 0, sizeof(*t));
	t->name = mk_xstrdup(a[0]);
	t->npartitions = np;
	t->rf = rf;
	t->parts = mk_xcalloc((size_t)np, sizeof(*t->parts));
	for (int p = 0; p < np; p++)
		t->parts[p].leader = -2;   /* not yet read */
	if (n > 3) {
		t->overrides = mk_xcalloc((size_t)(n - 3), sizeof(char *));
		for (int i = 3; i < n; i++)
			t->overrides[t->noverrides++] = mk_xstrdup(a[i]);
	}
	return true;
}

/* One KEY=VALUE of a partition line. */
static bool parse_partition_field(mk_partition_state *st, const char *kv)
{
	if (!strncmp(kv, "leader=", 7)) {
		if (!strcmp(kv + 7, "none")) {
			st->leader = -1;
			return true;
		}
		return parse_int(kv + 7, 0, INT32_MAX, &st->leader);
	}
	if (!strncmp(kv, "epoch=", 6))
		return parse_int(kv + 6, 0, INT32_MAX, &st->leader_epoch);
	if (!strncmp(kv, "replicas=", 9))
		return parse_ids(kv + 9, st->brokers, &st->nreplicas);
	if (!strncmp(kv, "isr=", 4))
		return parse_ids(kv + 4, st->isr, &st->nisr);
	return false;
}

/* "partition NAME P leader=ID|none epoch=E replicas=ID,... isr=ID,..." */
static bool parse_partition(mk_metadata *md, char **a, int n, mk_strbuf *why)
{
	mk_metadata_topic *t = n >= 2 ? find_topic(md, a[0]) : NULL;
	int p;
	if (!t || !parse_int(a[1], 0, t->npartitions - 1, &p))
		return false;
	mk_partition_state *st = &t->parts[p];
	if (st->leader != -2)
		return false;       /* the partition's second line */
	for (int i = 2; i < n; i++)
		if (!parse_partition_field(st, a[i]))
			return false;
	return st->nreplicas >= 1 && st->leader != -2 &&
	       partition_valid(t, st, why);
}

/* "deleting NAME": the topic's deletion was decided (finished at mount) */
static bool parse_deleting(mk_metadata *md, char **a, int n, mk_strbuf *why)
{
	(void)why;
	mk_metadata_topic *t = n == 1 ? find_topic(md, a[0]) : NULL;
	if (!t || t->deleting)
		return false;
	t->deleting = true;
	return true;
}

static const struct {
	const char *kind;
	bool (*parse)(mk_metadata *md, char **args, int nargs,
		      mk_strbuf *why);
} line_kinds[] = {
	/* "minikafka-metadata N" only as the first line (parse_text) */
	{ "broker", parse_broker },
	{ "clock", parse_clock },
	{ "next_producer_id", parse_next_producer_id },
	{ "producer", parse_producer },
	{ "topic", parse_topic },
	{ "partition", parse_partition },
	{ "deleting", parse_deleting },
};

static mk_err parse_line(mk_metadata *md, char *line, mk_strbuf *why)
{
	tokens t;
	tokenize(line, &t);
	if (t.n == 0)
		return MK_OK;
	for (size_t i = 0; i < sizeof(line_kinds) / sizeof(line_kinds[0]); i++)
		if (!strcmp(t.tok[0], line_kinds[i].kind)) {
			if (!t.too_many &&
			    line_kinds[i].parse(md, t.tok + 1, t.n - 1, why))
				return MK_OK;
			break;
		}
	return mk_error(why, MK_INVALID_CONFIG, "malformed metadata line starting '%s'",
			t.tok[0]);
}

/* "PATH:LINE: what" into why. */
static mk_err refuse(mk_strbuf *why, const char *path, int line,
		     const char *what)
{
	return mk_error(why, MK_INVALID_CONFIG, "%s:%d: %s; refusing to start (the file is left as it is)",
			path, line, what);
}

/*
 * The framing: a header naming version 1 or 2 on line 1; for version 2 a
 * last line "checksum X" with the CRC-32 of everything before it; no NUL
 * byte; every line ends with a newline. Then each line is parsed.
 */
static mk_err parse_text(mk_metadata *md, char *text, size_t len,
			 const char *path, mk_strbuf *why)
{
	if (len == 0)
		return refuse(why, path, 1, "empty file");
	if (memchr(text, '\0', len))
		return refuse(why, path, 1 + (int)mk_count_lines(text, (size_t)(
			(char *)memchr(text, '\0', len) - text)), "NUL byte");
	int version;
	if (!strncmp(text, "minikafka-metadata 3\n", 21))
		version = 3;
	else if (!strncmp(text, "minikafka-metadata 2\n", 21))
		version = 2;
	else if (!strncmp(text, "minikafka-metadata 1\n", 21))
		version = 1;
	else
		return refuse(why, path, 1, "not a minikafka-metadata 1, 2 or 3 header");
	md->version = version;
	int nlines = (int)mk_count_lines(text, len);
	if (text[len - 1] != '\n')
		return refuse(why, path, nlines + 1, "the last line is cut short");
	size_t body = len;
	if (version >= 2) {
		/* The last line: "checksum XXXXXXXX\n". */
		size_t start = len - 1;
		while (start > 0 && text[start - 1] != '\n')
			start--;
		unsigned long want;
		char tail;
		if (sscanf(text + start, "checksum %8lx%c", &want, &tail) != 2 ||
		    tail != '\n' || len - start != 18)
			return refuse(why, path, nlines,
				      "no checksum line: the file was cut short");
		if (crc32(0L, (const Bytef *)text, (uInt)start) != want)
			return refuse(why, path, nlines,
				      "checksum mismatch: the file is damaged");
		body = start;
	}
	text[body] = '\0';
	int lineno = 1;
	bool npid = false;
	for (char *line = text, *next; *line; line = next, lineno++) {
		next = strchr(line, '\n');
		*next++ = '\0';
		if (lineno == 1)
			continue;
		npid |= !strncmp(line, "next_producer_id ", 17);
		mk_strbuf msg = MK_STRBUF_INIT;
		mk_err err = parse_line(md, line, &msg);
		if (err) {
			refuse(why, path, lineno, msg.buf);
			mk_strbuf_release(&msg);
			return err;
		}
		mk_strbuf_release(&msg);
	}
	if (!npid)
		return refuse(why, path, lineno - 1,
			      "no next_producer_id line: the file was cut short");
	return MK_OK;
}

/* Every partition of every topic must have had its line. */
static mk_err check_complete(const mk_metadata *md, mk_strbuf *why)
{
	for (size_t i = 0; i < md->ntopics; i++)
		for (int p = 0; p < md->topics[i].npartitions; p++)
			if (md->topics[i].parts[p].leader == -2)
				return mk_error(why, MK_INVALID_CONFIG, "metadata lacks partition %s-%d",
						md->topics[i].name, p);
	return MK_OK;
}

mk_err mk_metadata_parse(char *text, mk_metadata *md, mk_strbuf *why)
{
	memset(md, 0, sizeof(*md));
	md->present = true;
	mk_err err = parse_text(md, text, strlen(text), "metadata", why);
	if (!err)
		err = check_complete(md, why);
	if (err)
		mk_metadata_free(md);    /* the caller gets nothing to free */
	return err;
}

mk_err mk_metadata_load(const char *data_dir, mk_metadata *md, mk_strbuf *why)
{
	memset(md, 0, sizeof(*md));
	mk_strbuf path = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/metadata", data_dir);
	bool missing;
	mk_err err = mk_file_read(path.buf, &text, &missing);
	if (err) {
		mk_why(why, "cannot read %s", path.buf);
		goto out;
	}
	md->present = !missing;
	if (!missing)
		err = parse_text(md, text.buf, text.len, path.buf, why);
	if (!err && !missing && md->version < 3)
		err = mk_error(why, MK_INVALID_CONFIG, "%s:1: minikafka-metadata %d: this data directory holds segments in the MKF2 batch format, which this version does not read (it keeps Kafka's RecordBatch v2); refusing to start, the directory is left as it is (docs/filesystem.md, \"Formats before Kafka's\")",
			       path.buf, md->version);
	if (!err)
		err = check_complete(md, why);
	if (err && why && !missing && why->len &&
	    strncmp(why->buf, path.buf, path.len) != 0) {
		mk_strbuf msg = MK_STRBUF_INIT;
		mk_strbuf_addf(&msg, "%s: %s", path.buf, why->buf);
		mk_strbuf_reset(why);
		mk_strbuf_add(why, msg.buf, msg.len);
		mk_strbuf_release(&msg);
	}
out:
	if (err)
		mk_metadata_free(md);    /* the caller gets nothing to free */
	mk_strbuf_release(&path);
	mk_strbuf_release(&text);
	return err;
}

static bool topic_has_data(const mk_meta_dirs *dirs, const char *name)
{
	for (size_t i = 0; i < dirs->n; i++)
		if (dirs->v[i].data && dirs->v[i].topic &&
		    !strcmp(dirs->v[i].topic, name))
			return true;
	return false;
}

static void free_topic(mk_metadata_topic *t)
{
	free(t->name);
	for (size_t j = 0; j < t->noverrides; j++)
		free(t->overrides[j]);
	free(t->overrides);
	free(t->parts);
}

void mk_metadata_free(mk_metadata *md)
{
	for (size_t i = 0; i < md->ntopics; i++)
		free_topic(&md->topics[i]);
	free(md->topics);
	for (size_t i = 0; i < md->nproducers; i++)
		free(md->producers[i].name);
	free(md->producers);
	memset(md, 0, sizeof(*md));
}

/* ---- the directories ---------------------------------------------------- */

/* Does the partition directory at path hold a batch (metadata.h)? */
static bool holds_data(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool data = false;
	mk_strbuf f = MK_STRBUF_INIT;
	struct dirent *e;
	while (!data && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat st;
		if (len <= 4 || strcmp(e->d_name + len - 4, ".log"))
			continue;
		mk_strbuf_reset(&f);
		mk_strbuf_addf(&f, "%s/%s", path, e->d_name);
		data = stat(f.buf, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
	}
	closedir(d);
	mk_strbuf_release(&f);
	return data || mk_log_peek_latest_epoch(path) >= 0;
}

/* T and P of a "T-P" entry, P written as log directories write it. */
static void parse_entry(mk_meta_dir *d)
{
	const char *dash = strrchr(d->entry, '-');
	int64_t p;
	char canon[8];
	if (!dash || !mk_parse_range(dash + 1, 0, 1023, &p))
		return;
	snprintf(canon, sizeof(canon), "%d", (int)p);
	char *name = mk_xstrndup(d->entry, (size_t)(dash - d->entry));
	if (strcmp(canon, dash + 1) || !mk_topic_name_valid(name)) {
		free(name);
		return;
	}
	d->topic = name;
	d->partition = (int)p;
}

/* One broker directory's entries into out. */
static void scan_broker(const char *data_dir, int broker, mk_meta_dirs *out)
{
	mk_strbuf path = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/broker-%d", data_dir, broker);
	DIR *d = opendir(path.buf);
	size_t dlen = path.len;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		/* The broker's checkpoint files (logdir.h) are no entry of a
		 * partition's: neither data nor a stray. */
		if (e->d_name[0] == '.' || mk_logdir_owns_name(e->d_name))
			continue;
		out->v = mk_xreallocarray(out->v, out->n + 1, sizeof(*out->v));
		mk_meta_dir *m = &out->v[out->n++];
		memset(m, 0, sizeof(*m));
		m->broker = broker;
		m->entry = mk_xstrdup(e->d_name);
		mk_strbuf_setlen(&path, dlen);
		mk_strbuf_addf(&path, "/%s", e->d_name);
		struct stat st;
		if (lstat(path.buf, &st) == 0 && S_ISDIR(st.st_mode))
			parse_entry(m);     /* a file is no partition's */
		m->data = holds_data(path.buf);
	}
	if (d)
		closedir(d);
	mk_strbuf_release(&path);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static int cmp_dir(const void *a, const void *b)
{
	const mk_meta_dir *x = a, *y = b;
	if (x->broker != y->broker)
		return (x->broker > y->broker) - (x->broker < y->broker);
	return strcmp(x->entry, y->entry);
}

void mk_metadata_scan_dirs(const char *data_dir, mk_meta_dirs *out)
{
	memset(out, 0, sizeof(*out));
	DIR *d = opendir(data_dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int64_t b;
		char canon[16];
		if (strncmp(e->d_name, "broker-", 7) ||
		    !mk_parse_range(e->d_name + 7, 0, INT32_MAX, &b))
			continue;
		snprintf(canon, sizeof(canon), "%d", (int)b);
		if (strcmp(canon, e->d_name + 7))
			continue;      /* broker-01 is no broker's */
		out->brokers = mk_xreallocarray(out->brokers, out->nbrokers + 1,
						sizeof(int));
		out->brokers[out->nbrokers++] = (int)b;
	}
	if (d)
		closedir(d);
	if (out->nbrokers)
		qsort(out->brokers, out->nbrokers, sizeof(int), cmp_int);
	for (size_t i = 0; i < out->nbrokers; i++)
		scan_broker(data_dir, out->brokers[i], out);
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_dir);
}

void mk_meta_dirs_free(mk_meta_dirs *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].entry);
		free(d->v[i].topic);
	}
	free(d->v);
	free(d->brokers);
	memset(d, 0, sizeof(*d));
}

/* ---- the rebuild ---------------------------------------------------------- */

/* What the rebuild learns across topics. */
typedef struct {
	const char *data_dir;
	const mk_config *cfg;
	const mk_meta_dirs *dirs;
	int64_t max_pid, max_ts;
	int leaderless, filled;   /* of the topic being rebuilt */
} rebuild_ctx;

/* One replica's log, opened (and recovered) as a mount opens it. */
typedef struct {
	bool opened;
	int32_t epoch;
	int64_t end;
} probed;

static probed probe_log(rebuild_ctx *x, int broker, const char *topic, int p)
{
	probed r = { false, -1, -1 };
	mk_strbuf dir = MK_STRBUF_INIT;
	mk_strbuf_addf(&dir, "%s/broker-%d/%s-%d", x->data_dir, broker, topic, p);
	mk_log *log;
	if (mk_log_open(dir.buf, NULL, &log, NULL) == MK_OK) {
		r.opened = true;
		r.epoch = mk_log_latest_epoch(log);
		r.end = mk_log_end_offset(log);
		int64_t from = mk_log_start_offset(log);
		mk_batch_info *bi;
		size_t n;
		while (from < r.end && !mk_log_batches(log, from, 1024, &bi, &n) && n) {
			for (size_t i = 0; i < n; i++) {
				if (bi[i].producer_id > x->max_pid)
					x->max_pid = bi[i].producer_id;
				if (bi[i].max_timestamp > x->max_ts)
					x->max_ts = bi[i].max_timestamp;
			}
			from = bi[n - 1].last_offset + 1;
			free(bi);
		}
		mk_log_close(log);
	}
	mk_strbuf_release(&dir);
	return r;
}

static bool configured(const mk_config *cfg, int broker)
{
	return has_id(cfg->broker_ids, cfg->nbrokers, broker);
}

/*
 * Where broker goes in partition p's replica list: create-topic's order
 * (the configured brokers round robin from the p-th, cluster_topics.c), so that
 * a partition found on the brokers its creation chose gets its list, and
 * its preferred leader, back; brokers not configured last.
 */
static int replica_rank(const mk_config *cfg, int p, int broker)
{
	for (int i = 0; i < cfg->nbrokers; i++)
		if (cfg->broker_ids[i] == broker)
			return (i - p % cfg->nbrokers + cfg->nbrokers) % cfg->nbrokers;
	return cfg->nbrokers;
}

/*
 * Partition p of topic, whose st->brokers[0..st->nreplicas) hold a
 * directory: each is opened; the list is filled up to rf from cand (those
 * have none) and put in create-topic's order; then the leader, epoch and
 * ISR (metadata.h), ties going to the replica earlier in the list.
 */
static void rebuild_partition(rebuild_ctx *x, const char *topic, int p, int rf,
			      const int *cand, int ncand, mk_partition_state *st)
{
	probed pr[MK_MAX_BROKERS];
	for (int r = 0; r < st->nreplicas; r++)
		pr[r] = probe_log(x, st->brokers[r], topic, p);
	for (int i = 0; i < ncand && st->nreplicas < rf; i++)
		if (!has_id(st->brokers, st->nreplicas, cand[i])) {
			pr[st->nreplicas] = (probed){ false, -1, -1 };
			st->brokers[st->nreplicas++] = cand[i];
			x->filled++;
		}
	for (int r = 1; r < st->nreplicas; r++)      /* insertion sort by rank */
		for (int k = r; k > 0 && replica_rank(x->cfg, p, st->brokers[k]) <
					  replica_rank(x->cfg, p, st->brokers[k - 1]); k--) {
			int b = st->brokers[k];
			probed q = pr[k];
			st->brokers[k] = st->brokers[k - 1];
			pr[k] = pr[k - 1];
			st->brokers[k - 1] = b;
			pr[k - 1] = q;
		}
	int best = -1;
	st->leader_epoch = 0;
	for (int r = 0; r < st->nreplicas; r++) {
		if (pr[r].epoch > st->leader_epoch)
			st->leader_epoch = pr[r].epoch;
		if (!pr[r].opened || !configured(x->cfg, st->brokers[r]))
			continue;
		if (best < 0 || pr[r].epoch > pr[best].epoch ||
		    (pr[r].epoch == pr[best].epoch && pr[r].end > pr[best].end))
			best = r;
	}
	st->nisr = 0;
	if (best < 0) {
		st->leader = -1;
		st->isr[st->nisr++] = st->brokers[0];
		x->leaderless++;
		return;
	}
	st->leader = st->brokers[best];
	for (int r = 0; r < st->nreplicas; r++)
		if (pr[r].opened && pr[r].epoch == pr[best].epoch &&
		    pr[r].end == pr[best].end)
			st->isr[st->nisr++] = st->brokers[r];
}

/* The layout of topic name from its entries into t (zeroed): partitions
 * and the brokers holding each; a partition on none refuses. Opens no log. */
static mk_err layout_topic(const mk_meta_dirs *dirs, const char *name,
			   mk_metadata_topic *t, mk_strbuf *why)
{
	int np = 0;
	for (size_t i = 0; i < dirs->n; i++)
		if (dirs->v[i].topic && !strcmp(dirs->v[i].topic, name) &&
		    dirs->v[i].partition >= np)
			np = dirs->v[i].partition + 1;
	t->name = mk_xstrdup(name);
	t->npartitions = np;
	t->parts = mk_xcalloc((size_t)np, sizeof(*t->parts));
	for (size_t i = 0; i < dirs->n; i++) {
		const mk_meta_dir *d = &dirs->v[i];
		if (!d->topic || strcmp(d->topic, name))
			continue;
		mk_partition_state *st = &t->parts[d->partition];
		if (st->nreplicas < MK_MAX_BROKERS)
			st->brokers[st->nreplicas++] = d->broker;
		if (st->nreplicas > t->rf)
			t->rf = st->nreplicas;
	}
	for (int p = 0; p < np; p++)
		if (t->parts[p].nreplicas == 0)
			return mk_error(why, MK_INVALID_CONFIG, "cannot rebuild topic %s: it has partition directories up to %s-%d but none for %s-%d on any broker (restore it, or make an empty broker-B/%s-%d to start that partition empty)",
					name, name, np - 1, name, p, name, p);
	return MK_OK;
}

/* Leaders, epochs and ISRs of a laid-out topic, from its logs. */
static void probe_topic(rebuild_ctx *x, mk_metadata_topic *t)
{
	int cand[2 * MK_MAX_BROKERS], ncand = 0;
	for (int i = 0; i < x->cfg->nbrokers; i++)
		cand[ncand++] = x->cfg->broker_ids[i];
	for (size_t i = 0; i < x->dirs->n; i++) {
		const mk_meta_dir *d = &x->dirs->v[i];
		if (d->topic && !strcmp(d->topic, t->name) &&
		    !has_id(cand, ncand, d->broker) && ncand < 2 * MK_MAX_BROKERS)
			cand[ncand++] = d->broker;
	}
	x->leaderless = x->filled = 0;
	for (int p = 0; p < t->npartitions; p++)
		rebuild_partition(x, t->name, p, t->rf, cand, ncand, &t->parts[p]);
	if (mk_topic_name_internal(t->name)) {
		t->overrides = mk_xcalloc(1, sizeof(char *));
		t->overrides[t->noverrides++] = mk_xstrdup("cleanup.policy=compact");
	}
}

/* The /errors line of one rebuilt topic. */
static void report_topic(mk_errlog *log, const rebuild_ctx *x,
			 const mk_metadata_topic *t)
{
	mk_strbuf extra = MK_STRBUF_INIT;
	if (x->leaderless)
		mk_strbuf_addf(&extra, "; %d partitions without a leader (no log opened)",
			       x->leaderless);
	if (x->filled)
		mk_strbuf_addf(&extra, "; %d replicas have no directory (offline until restored)",
			       x->filled);
	mk_errlog_add(log, mk_wall_ms(), NULL, MK_OK,
		      "topic %s rebuilt from its directories: %d partitions, replication factor %d, replicas the brokers holding a directory, leader the replica with the newest epoch then the longest log, ISR the replicas level with it%s; configuration not recoverable: %s",
		      t->name, t->npartitions, t->rf, extra.len ? extra.buf : "",
		      t->noverrides ? "the defaults with cleanup.policy=compact (an internal topic)"
				    : "the defaults");
	mk_strbuf_release(&extra);
}

mk_err mk_metadata_rebuild(const char *data_dir, const mk_config *cfg,
			   const mk_meta_dirs *dirs, mk_metadata *md,
			   mk_errlog *log, mk_strbuf *why)
{
	rebuild_ctx x = { data_dir, cfg, dirs, -1, INT64_MIN, 0, 0 };
	mk_metadata_topic *add = NULL;
	size_t nadd = 0;
	mk_err err = MK_OK;
	for (size_t i = 0; i < dirs->n && !err; i++) {
		const char *name = dirs->v[i].topic;
		if (!name || find_topic(md, name) || find_in(add, nadd, name) ||
		    (md->present && !topic_has_data(dirs, name)))
			continue;
		add = mk_xreallocarray(add, nadd + 1, sizeof(*add));
		mk_metadata_topic *t = &add[nadd++];
		memset(t, 0, sizeof(*t));
		err = layout_topic(dirs, name, t, why);
	}
	/* Every layout first: a refused rebuild opened (changed) nothing. */
	for (size_t i = 0; i < nadd && !err; i++) {
		probe_topic(&x, &add[i]);
		if (log)
			report_topic(log, &x, &add[i]);
	}
	if (err) {
		for (size_t i = 0; i < nadd; i++)
			free_topic(&add[i]);
		free(add);
		return err;
	}
	md->topics = mk_xreallocarray(md->topics, md->ntopics + nadd + 1,
				      sizeof(*md->topics));
	memcpy(md->topics + md->ntopics, add, nadd * sizeof(*add));
	md->ntopics += nadd;
	free(add);
	if (x.max_pid >= md->next_producer_id)
		md->next_producer_id = x.max_pid + 1;
	if (x.max_ts > md->clock_ms)
		md->clock_ms = x.max_ts;
	if (log)
		mk_errlog_add(log, mk_wall_ms(), NULL, MK_OK,
			      "metadata: %zu topics rebuilt from the directories of %s, nothing removed; next_producer_id %lld (above every producer id in a batch); producer identities (/producers) and topic configurations are not recoverable",
			      nadd, data_dir, (long long)md->next_producer_id);
	return MK_OK;
}
