/*
 * nodes.c — the node table and what each node shows or does.
 *
 * Read functions turn a core snapshot into text; control functions parse
 * one command line and call core. Resolution walks `nodes` by parent kind.
 */
#include "nodes.h"
#include "parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "fileio.h"
#include "nodes_groups.h"
#include "nodes_txn.h"
#include "topic_name.h"

enum {
	K_ROOT, K_README, K_CONFIG, K_CTL, K_ERRORS, K_CLOCK,
	K_TOPICS, K_TOPIC, K_TOPIC_CONFIG, K_TOPIC_APPEND,
	K_PART, K_PART_APPEND, K_PART_RECORDS,
	K_LEO, K_HW, K_LSO, K_LSTART, K_LEADER, K_EPOCH, K_REPLICAS, K_ISR,
	K_ISR_SHRINKS, K_ISR_EXPANDS,
	K_STATE, K_SEGMENTS, K_SEGFILE, K_DELREC,
	K_BROKERS, K_BROKER, K_BSTATE, K_BLISTENER, K_BREPLICAS, K_BFETCH, K_BCRASH,
	K_BRESTART, K_BPROMOTE, K_BROKERS_FETCH,
	K_PRODUCERS, K_GROUPS, K_TRANSACTIONS,
	K_PRODUCER, K_PID, K_PEPOCH, K_PSEQUENCES, K_PINIT,
	K_GROUP, K_GJOIN, K_GLEAVE, K_GHEARTBEAT, K_GSTATE, K_GGENERATION,
	K_GOFFSETS, K_GCONFIG, K_GMEMBERS, K_MEMBER, K_MASSIGN, K_MGENERATION,
	K_MPOSITIONS, K_MLAG, K_MSEEK, K_MPOLL, K_MCOMMIT,
	K_BLOGS, K_BLTOPIC, K_BLPART, K_EPOCHS, K_BATCHES, K_SEGTXT, K_SEGDUMP,
	K_TXN, K_TINIT, K_TCOMMIT, K_TABORT, K_TOFFSETS, K_TSTATE, K_TPARTS,
	K_TPID, K_TEPOCH,
};

/* The rows of a partition directory that /brokers/B/logs/T/P also has. */
static const int replica_view_kinds[] = {
	K_PART_RECORDS, K_LEO, K_HW, K_LSTART, K_EPOCH, K_EPOCHS, K_BATCHES,
	K_SEGMENTS,
};

/* ---- small parsing helpers ------------------------------------------- */


/* Split a line into at most max words on spaces and tabs, in place. */
static int split_words(char *line, char **words, int max)
{
	int n = 0;
	char *save = NULL;
	for (char *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (n == max)
			return -1;
		words[n++] = w;
	}
	return n;
}

/* A partition or broker number as the tree names it: digits, no sign,
 * no leading zero. */
static bool strict_number(const char *s, int64_t max, int64_t *v)
{
	return s[0] >= '0' && s[0] <= '9' && !(s[0] == '0' && s[1]) &&
	       mk_parse_i64(s, v) && *v >= 0 && *v <= max;
}

/* An empty line or "1" means "no argument" (docs/filesystem.md 2). */
static bool no_argument(const char *line)
{
	return !*line || !strcmp(line, "1");
}

static mk_err bad_command(mk_strbuf *why, const char *line, const char *usage)
{
	mk_strbuf_addf(why, "bad command '%s'; expected: %s", line, usage);
	return MK_INVALID_REQUEST;
}

static mk_partition *ref_partition(const node_ref *ref)
{
	return mk_topic_partition(ref->topic, ref->partition);
}

static void add_broker_ids(mk_strbuf *out, const mk_partition_info *pi, bool isr_only)
{
	bool first = true;
	for (int i = 0; i < pi->nreplicas; i++) {
		if (isr_only && !pi->replicas[i].in_isr)
			continue;
		mk_strbuf_addf(out, "%s%d", first ? "" : " ", pi->replicas[i].broker);
		first = false;
	}
	mk_strbuf_addch(out, '\n');
}

/* ---- root files ------------------------------------------------------ */

static mk_err read_readme(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)ref;
	(void)why;
	mk_strbuf_addstr(out, fs->readme);
	return MK_OK;
}

static mk_err read_config(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)ref;
	(void)why;
	mk_config_format(&fs->cluster->cfg, out);
	return MK_OK;
}

static mk_err read_errors(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)ref;
	(void)why;
	mk_errlog_format(&fs->cluster->errlog, out);
	return MK_OK;
}

static mk_err read_clock(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)ref;
	(void)why;
	mk_strbuf_addf(out, "%lld\n", (long long)mk_clock_now(&fs->cluster->clock));
	return MK_OK;
}

static mk_err write_clock(mkfs *fs, const node_ref *ref, char *line,
			  mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	(void)ref;
	int64_t v;
	if (line[0] == '+' && mk_parse_i64(line + 1, &v) && v >= 0)
		return mk_cluster_clock_advance(fs->cluster, v, why);
	if (mk_parse_i64(line, &v) && v >= 0)
		return mk_cluster_clock_set(fs->cluster, v, why);
	return bad_command(why, line, "+MS to advance, or MS to set");
}

static mk_err write_ctl(mkfs *fs, const node_ref *ref, char *line,
			mk_coord_call *call, mk_strbuf *why)
{
	(void)ref;
	char copy[1024];
	snprintf(copy, sizeof(copy), "%s", line);
	char *w[66];
	int n = split_words(line, w, 66);
	if (n <= 0)
		return bad_command(why, copy, "a command (create-topic, delete-topic, replicate, flush, retention, compact)");
	if (!strcmp(w[0], "create-topic")) {
		if (n < 2)
			return bad_command(why, copy, "create-topic NAME [partitions=N] [replication.factor=R] [KEY=VALUE...]");
		int64_t parts = -1, rf = -1;
		const char *kv[64];
		size_t nkv = 0;
		const char *dup = mk_duplicate_key(w + 2, n - 2);
		if (dup) {
			mk_strbuf_addf(why, "create-topic: key given twice: %s", dup);
			return MK_INVALID_REQUEST;
		}
		for (int i = 2; i < n; i++) {
			if (!strncmp(w[i], "partitions=", 11)) {
				if (!mk_parse_i64(w[i] + 11, &parts) || parts < 1 || parts > 1024)
					return bad_command(why, copy, "partitions=N with N from 1 to 1024");
			} else if (!strncmp(w[i], "replication.factor=", 19)) {
				if (!mk_parse_i64(w[i] + 19, &rf) || rf < 1 || rf > MK_MAX_BROKERS)
					return bad_command(why, copy, "replication.factor=R with R >= 1");
			} else {
				kv[nkv++] = w[i];
			}
		}
		return mk_cluster_create_topic(fs->cluster, w[1], (int)parts, (int)rf,
					       kv, nkv, why);
	}
	if (!strcmp(w[0], "delete-topic")) {
		if (n != 2)
			return bad_command(why, copy, "delete-topic NAME");
		return mk_cluster_delete_topic(fs->cluster, w[1], why);
	}
	if (n == 1 && !strcmp(w[0], "replicate"))
		return mk_cluster_replicate(fs->cluster, why);
	if (n == 1 && !strcmp(w[0], "flush"))
		return mk_cluster_flush(fs->cluster, why);
	if (n == 1 && !strcmp(w[0], "retention"))
		return mk_cluster_retention(fs->cluster, why);
	if (n == 1 && !strcmp(w[0], "compact"))
		return mk_cluster_compact(fs->cluster, why);
	if (n == 1 && !strcmp(w[0], "expire-members"))
		return mk_groups_expire_members(fs, call, why);
	if (n == 1 && !strcmp(w[0], "expire-transactions"))
		return mk_txn_node_expire(fs, call, why);
	return bad_command(why, copy, "create-topic, delete-topic, replicate, flush, retention, compact, expire-members or expire-transactions");
}

/* /ctl commands that wait inside a coordinator (their records are
 * appended with acks=all): the serving layer runs them off the workers. */
static const char *const ctl_waiting[] = { "expire-members", "expire-transactions" };

bool mk_node_write_waits(const node_ref *ref, const char *buf, size_t size)
{
	if (ref->def->waits)
		return true;
	if (ref->def->write != write_ctl)
		return false;
	/* Any line of the write: its lines run in one go, on one thread. */
	for (size_t pos = 0; pos < size;) {
		const char *line = buf + pos;
		const char *nl = memchr(line, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - line) : size - pos;
		pos += len + 1;
		while (len && (*line == ' ' || *line == '\t')) {
			line++;
			len--;
		}
		for (size_t i = 0; i < sizeof(ctl_waiting) / sizeof(ctl_waiting[0]); i++) {
			size_t n = strlen(ctl_waiting[i]);
			if (len >= n && !memcmp(line, ctl_waiting[i], n) &&
			    (len == n || line[n] == ' ' || line[n] == '\t' || line[n] == '\r'))
				return true;
		}
	}
	return false;
}


/* ---- topics ---------------------------------------------------------- */

static bool match_topic(mkfs *fs, node_ref *ref, const char *name)
{
	if (!mk_topic_name_valid(name))
		return false;
	ref->topic = mk_cluster_topic(fs->cluster, name);
	return ref->topic != NULL;
}

static void list_topics(mkfs *fs, const node_ref *ref,
			void (*add)(void *, const char *, bool), void *arg)
{
	(void)ref;
	char **names;
	size_t n = mk_cluster_topic_names(fs->cluster, &names);
	for (size_t i = 0; i < n; i++) {
		add(arg, names[i], true);
		free(names[i]);
	}
	free(names);
}

static bool match_partition(mkfs *fs, node_ref *ref, const char *name)
{
	(void)fs;
	int64_t v;
	if (name[0] < '0' || name[0] > '9' || !mk_parse_i64(name, &v) ||
	    v < 0 || v >= ref->topic->npartitions ||
	    (name[0] == '0' && name[1]))
		return false;
	ref->partition = (int)v;
	return true;
}

static void list_partitions(mkfs *fs, const node_ref *ref,
			    void (*add)(void *, const char *, bool), void *arg)
{
	(void)fs;
	char buf[16];
	for (int p = 0; p < ref->topic->npartitions; p++) {
		snprintf(buf, sizeof(buf), "%d", p);
		add(arg, buf, true);
	}
}

static mk_err read_topic_config(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)why;
	mk_topic_config tc;
	mk_cluster_topic_config(fs->cluster, ref->topic, &tc);
	mk_topic_config_format(&tc, out);
	return MK_OK;
}

static mk_err write_topic_config(mkfs *fs, const node_ref *ref, char *line,
				 mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	char *w[64];
	int n = split_words(line, w, 64);
	if (n <= 0)
		return bad_command(why, "", "KEY=VALUE");
	const char *dup = mk_duplicate_key(w, n);
	if (dup) {
		mk_strbuf_addf(why, "key given twice: %s", dup);
		return MK_INVALID_REQUEST;
	}
	return mk_cluster_topic_configure(fs->cluster, ref->topic,
					  (const char *const *)w, (size_t)n, why);
}

/* ---- partition value files ------------------------------------------- */

#define PART_VALUE(fn, expr)                                                 \
	static mk_err fn(mkfs *fs, const node_ref *ref, mk_strbuf *out,      \
			 mk_strbuf *why)                                     \
	{                                                                    \
		(void)fs;                                                    \
		(void)why;                                                   \
		mk_partition_info pi;                                        \
		mk_partition_info_get(ref_partition(ref), &pi);              \
		expr;                                                        \
		return MK_OK;                                                \
	}

static void add_leader(mk_strbuf *out, int leader)
{
	if (leader < 0)
		mk_strbuf_addstr(out, "none\n");
	else
		mk_strbuf_addf(out, "%d\n", leader);
}

static void add_offset(mk_strbuf *out, int64_t v)
{
	if (v < 0)
		mk_strbuf_addstr(out, "none\n");
	else
		mk_strbuf_addf(out, "%lld\n", (long long)v);
}

/* A replica's own values (/brokers/B/logs/T/P). */
static mk_err replica_values(mkfs *fs, const node_ref *ref, mk_replica_view *rv,
			     mk_strbuf *why)
{
	(void)fs;
	mk_err err = mk_partition_replica_view(ref_partition(ref), ref->broker, rv, why);
	if (!err && rv->leo < 0) {
		mk_strbuf_addf(why, "broker %d is %s, so its replica of %s-%d cannot be read (echo > brokers/%d/restart)",
			       ref->broker, rv->failed ? "failed (storage error)" : "offline",
			       ref->topic->name, ref->partition, ref->broker);
		err = MK_BROKER_NOT_AVAILABLE;
	}
	return err;
}

#define VIEW_VALUE(fn, topic_expr, replica_expr)                             \
	static mk_err fn(mkfs *fs, const node_ref *ref, mk_strbuf *out,      \
			 mk_strbuf *why)                                     \
	{                                                                    \
		if (ref->broker >= 0) {                                      \
			mk_replica_view rv;                                  \
			mk_err err = replica_values(fs, ref, &rv, why);      \
			if (!err)                                            \
				replica_expr;                                \
			return err;                                          \
		}                                                            \
		mk_partition_info pi;                                        \
		mk_partition_info_get(ref_partition(ref), &pi);              \
		topic_expr;                                                  \
		return MK_OK;                                                \
	}

VIEW_VALUE(read_leo, add_offset(out, pi.leo), add_offset(out, rv.leo))
VIEW_VALUE(read_hw, add_offset(out, pi.hw), add_offset(out, rv.hw_view))
PART_VALUE(read_lso, add_offset(out, pi.lso))
VIEW_VALUE(read_lstart, add_offset(out, pi.log_start), add_offset(out, rv.log_start))
PART_VALUE(read_leader, add_leader(out, pi.leader))
VIEW_VALUE(read_epoch, mk_strbuf_addf(out, "%d\n", pi.leader_epoch),
	   add_offset(out, rv.latest_epoch))

/* The leader-epoch cache: EPOCH START_OFFSET lines. */
static mk_err read_epochs(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)fs;
	mk_epoch_entry *e;
	size_t n;
	mk_err err = mk_partition_replica_epochs(ref_partition(ref), ref->broker,
						 &e, &n, why);
	for (size_t i = 0; !err && i < n; i++)
		mk_strbuf_addf(out, "%d %lld\n", e[i].epoch, (long long)e[i].start_offset);
	free(e);
	return err;
}
PART_VALUE(read_replicas, add_broker_ids(out, &pi, false))
PART_VALUE(read_isr, add_broker_ids(out, &pi, true))
/* Replicas that left / joined the ISR since the mount (Kafka's
 * IsrShrinksPerSec / IsrExpandsPerSec meters, as totals). */
PART_VALUE(read_isr_shrinks,
	   mk_strbuf_addf(out, "%llu\n", (unsigned long long)pi.isr_shrinks))
PART_VALUE(read_isr_expands,
	   mk_strbuf_addf(out, "%llu\n", (unsigned long long)pi.isr_expands))

/* A bar of `width` cells for offsets [0, max): '#' below the HW, '+' above
 * it up to the replica's end, 'x' for a divergent tail (from where the
 * replica stops agreeing with the leader), ' ' beyond; '|' marks the HW. */
static void draw_log(mk_strbuf *out, int64_t start, int64_t leo, int64_t hw,
		     int64_t agreed, int64_t max, int width)
{
	mk_strbuf_addch(out, '[');
	int hw_cell = max ? (int)(hw * width / max) : 0;
	for (int cell = 0; cell < width; cell++) {
		int64_t off = max ? (int64_t)cell * max / width : 0;
		if (cell == hw_cell && hw < max)
			mk_strbuf_addch(out, '|');
		else if (leo < 0 || off >= leo)
			mk_strbuf_addch(out, ' ');
		else if (off < start)
			mk_strbuf_addch(out, '.');
		else if (agreed >= 0 && off >= agreed)
			mk_strbuf_addch(out, 'x');
		else
			mk_strbuf_addch(out, off < hw ? '#' : '+');
	}
	mk_strbuf_addstr(out, hw >= max ? "]|" : "]");
}

/* The cleaner's checkpoint (cleaned up to) and the dirty ratio: the
 * share of the cleanable bytes (closed, below the HW) not yet cleaned. */
static void add_cleaner_state(mk_partition *p, mk_strbuf *out)
{
	mk_cleaner_info ci;
	mk_partition_cleaner_info(p, &ci);
	mk_strbuf_addstr(out, "cleaner_checkpoint ");
	add_offset(out, ci.cleaned_to);
	mk_strbuf_addf(out, "dirty_ratio %.2f\n", ci.cleanable_bytes
		       ? (double)ci.dirty_bytes / (double)ci.cleanable_bytes : 0.0);
}

static mk_err write_delete_records(mkfs *fs, const node_ref *ref, char *line,
				   mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	(void)fs;
	int64_t off;
	if (!mk_parse_i64(line, &off) || off < 0)
		return bad_command(why, line, "OFFSET (the new log start, at most the high watermark)");
	return mk_partition_delete_records(ref_partition(ref), off, NULL, why);
}

static mk_err read_state(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)fs;
	(void)why;
	mk_partition_info pi;
	mk_partition_info_get(ref_partition(ref), &pi);
	mk_strbuf_addf(out, "topic %s partition %d\n", ref->topic->name, ref->partition);
	mk_strbuf_addstr(out, "leader ");
	add_leader(out, pi.leader);
	mk_strbuf_addf(out, "leader_epoch %d\n", pi.leader_epoch);
	mk_strbuf_addstr(out, "leo ");
	add_offset(out, pi.leo);
	mk_strbuf_addf(out, "hw %lld\nlso %lld\n", (long long)pi.hw, (long long)pi.lso);
	mk_strbuf_addstr(out, "log_start_offset ");
	add_offset(out, pi.log_start);
	add_cleaner_state(ref_partition(ref), out);
	mk_strbuf_addstr(out, "replicas ");
	add_broker_ids(out, &pi, false);
	mk_strbuf_addstr(out, "isr ");
	add_broker_ids(out, &pi, true);
	mk_strbuf_addf(out, "isr_shrinks %llu isr_expands %llu\n",
		       (unsigned long long)pi.isr_shrinks,
		       (unsigned long long)pi.isr_expands);
	int64_t max = pi.hw;
	for (int i = 0; i < pi.nreplicas; i++)
		if (pi.replicas[i].leo > max)
			max = pi.replicas[i].leo;
	mk_strbuf_addf(out, "\nlogs against the high watermark (| = hw %lld; # committed, + above hw,\n"
		       "x divergent: truncated at the replica's next fetch):\n",
		       (long long)pi.hw);
	for (int i = 0; i < pi.nreplicas; i++) {
		bool diverged = pi.leader >= 0 && pi.replicas[i].agreed_end >= 0 &&
				pi.replicas[i].agreed_end < pi.replicas[i].leo;
		const char *role = pi.replicas[i].broker == pi.leader ? "leader"
				   : !pi.replicas[i].online ? "offline"
				   : pi.replicas[i].failed ? "failed"
				   : diverged ? "diverged"
				   : pi.replicas[i].in_isr ? "in-sync" : "lagging";
		mk_strbuf_addf(out, "  broker %-3d %-8s ", pi.replicas[i].broker, role);
		draw_log(out, pi.replicas[i].log_start, pi.replicas[i].leo, pi.hw,
			 diverged ? pi.replicas[i].agreed_end : -1, max, 40);
		if (pi.replicas[i].leo >= 0)
			mk_strbuf_addf(out, " leo %lld", (long long)pi.replicas[i].leo);
		if (diverged)
			mk_strbuf_addf(out, " (agrees with the leader below %lld)",
				       (long long)pi.replicas[i].agreed_end);
		mk_strbuf_addch(out, '\n');
	}
	return MK_OK;
}

/* ---- segments/ -------------------------------------------------------- */

/* A segment's files (segment.h): the batches, Kafka's offset index and
 * time index. */
#define NSEG_SUFFIXES 4
#define SEG_TIMEINDEX 2
#define SEG_TXNINDEX 3     /* only where the segment has one (log.h) */
static const char *const seg_suffixes[NSEG_SUFFIXES] = {
	".log", ".index", ".timeindex", ".txnindex",
};

static bool seg_has(const mk_segment_info *seg, size_t suffix)
{
	return suffix != SEG_TXNINDEX || seg->txnindex_size > 0;
}

/* The segments of the log this directory shows (ref->broker: whose). */
static size_t ref_segments(const node_ref *ref, mk_segment_info **segs,
			   mk_strbuf *dir)
{
	size_t n;
	if (mk_partition_replica_segments(ref_partition(ref), ref->broker, segs,
					  &n, dir, NULL))
		return 0;
	return n;
}

static void list_segments(mkfs *fs, const node_ref *ref,
			  void (*add)(void *, const char *, bool), void *arg)
{
	(void)fs;
	mk_segment_info *segs;
	size_t n = ref_segments(ref, &segs, NULL);
	char buf[64];
	for (size_t i = 0; i < n; i++)
		for (size_t s = 0; s < NSEG_SUFFIXES; s++) {
			if (!seg_has(&segs[i], s))
				continue;
			snprintf(buf, sizeof(buf), "%020lld%s",
				 (long long)segs[i].base_offset, seg_suffixes[s]);
			add(arg, buf, false);
		}
	free(segs);
}

/* Which of segs[0, n) file name is: *seg (its index) and *suffix (into
 * seg_suffixes). The name is read once (20 digits, as list_segments'
 * "%020lld" writes a base, then a suffix), not formatted anew for every
 * segment: the read of a raw file asks this at every request. */
static bool find_segment_file(const mk_segment_info *segs, size_t n,
			      const char *name, size_t *seg, size_t *suffix)
{
	if (strlen(name) < 21 || name[0] == '-')
		return false;
	size_t s = 0;
	while (s < NSEG_SUFFIXES && strcmp(name + 20, seg_suffixes[s]))
		s++;
	char digits[21];
	int64_t base;
	memcpy(digits, name, 20);
	digits[20] = '\0';
	if (s == NSEG_SUFFIXES || !mk_parse_range(digits, 0, INT64_MAX, &base))
		return false;
	for (size_t i = 0; i < n; i++)
		if (segs[i].base_offset == base) {
			*seg = i;
			*suffix = s;
			return seg_has(&segs[i], s);
		}
	return false;
}

/* Which segment file name is: *base and *suffix (index into seg_suffixes). */
static bool segment_file(const node_ref *ref, const char *name, int64_t *base,
			 size_t *suffix)
{
	mk_segment_info *segs;
	size_t n = ref_segments(ref, &segs, NULL), i;
	bool found = find_segment_file(segs, n, name, &i, suffix);
	if (found)
		*base = segs[i].base_offset;
	free(segs);
	return found;
}

static bool match_segment(mkfs *fs, node_ref *ref, const char *name)
{
	(void)fs;
	int64_t base;
	size_t suffix;
	return segment_file(ref, name, &base, &suffix);
}

/* N.index:txt and N.timeindex:txt, the decoded indexes. */
static bool match_segment_txt(mkfs *fs, node_ref *ref, const char *name)
{
	(void)fs;
	char file[256];
	int64_t base;
	size_t suffix;
	return mk_name_txt_view(name, file, sizeof(file)) &&
	       segment_file(ref, file, &base, &suffix) && suffix > 0 &&
	       suffix != SEG_TXNINDEX;
}

static mk_err read_segment_txt(mkfs *fs, const node_ref *ref, mk_strbuf *out,
			       mk_strbuf *why)
{
	(void)fs;
	char file[256];
	int64_t base;
	size_t suffix;
	if (!mk_name_txt_view(ref->name, file, sizeof(file)) ||
	    !segment_file(ref, file, &base, &suffix) || suffix == 0 ||
	    suffix == SEG_TXNINDEX) {
		mk_strbuf_addf(why, "no index %s", ref->name);
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	/* The rows of both indexes: the offset index's carry a position,
	 * the time index's none (segment.h, mk_segment_index_entry). */
	mk_index_row *rows;
	size_t n;
	mk_err err = mk_partition_replica_index(ref_partition(ref), ref->broker,
						base, &rows, &n, why);
	for (size_t i = 0; !err && i < n; i++) {
		if ((rows[i].position < 0) != (suffix == SEG_TIMEINDEX))
			continue;
		if (suffix == SEG_TIMEINDEX)
			mk_strbuf_addf(out, "%lld %lld\n",
				       (long long)rows[i].timestamp,
				       (long long)rows[i].offset);
		else
			mk_strbuf_addf(out, "%lld %lld\n",
				       (long long)rows[i].offset,
				       (long long)rows[i].position);
	}
	free(rows);
	return err;
}

/* F:dump, a segment file in kafka-dump-log's words (dump.h). */
static bool match_segment_dump(mkfs *fs, node_ref *ref, const char *name)
{
	(void)fs;
	char file[256];
	int64_t base;
	size_t suffix;
	return mk_name_view(name, ":dump", file, sizeof(file)) &&
	       segment_file(ref, file, &base, &suffix);
}

static mk_err read_segment_dump(mkfs *fs, const node_ref *ref, mk_strbuf *out,
				mk_strbuf *why)
{
	node_ref file_ref = *ref;
	char file[256];
	if (!mk_name_view(ref->name, ":dump", file, sizeof(file))) {
		mk_strbuf_addf(why, "no segment file %s", ref->name);
		return MK_UNKNOWN_TOPIC_OR_PARTITION;
	}
	snprintf(file_ref.name, sizeof(file_ref.name), "%s", file);
	mk_strbuf path = MK_STRBUF_INIT, bytes = MK_STRBUF_INIT;
	int64_t limit;
	bool missing = false;
	mk_err err = mk_node_raw_path(fs, &file_ref, &path, &limit);
	if (!err && (err = mk_file_read(path.buf, &bytes, &missing)))
		mk_strbuf_addf(why, "cannot read %s", file);
	if (!err && missing)
		err = mk_error(why, MK_UNKNOWN_TOPIC_OR_PARTITION, "no segment file %s", file);
	/* The active .log: only its batches, not the runway after them. */
	if (!err && limit >= 0 && (size_t)limit < bytes.len)
		mk_strbuf_setlen(&bytes, (size_t)limit);
	if (!err)
		err = mk_dump(file, (const uint8_t *)bytes.buf, bytes.len, out, why);
	mk_strbuf_release(&path);
	mk_strbuf_release(&bytes);
	return err;
}

/* How much of segs[0, n)'s file name a raw view shows (nodes.h). */
static int64_t raw_limit(const mk_segment_info *segs, size_t n,
			 const char *name)
{
	size_t i, suffix;
	/* The active segment's .log (an index file has no runway). */
	if (find_segment_file(segs, n, name, &i, &suffix) && suffix == 0 &&
	    segs[i].active)
		return (int64_t)segs[i].size;
	return -1;
}

mk_err mk_node_raw_path(mkfs *fs, const node_ref *ref, mk_strbuf *path,
			int64_t *limit)
{
	(void)fs;
	mk_segment_info *segs;
	mk_strbuf dir = MK_STRBUF_INIT;
	size_t n = ref_segments(ref, &segs, &dir);
	if (limit)
		*limit = raw_limit(segs, n, ref->name);
	free(segs);
	if (!dir.len) {
		mk_strbuf_release(&dir);
		return ref->broker >= 0 ? MK_BROKER_NOT_AVAILABLE : MK_LEADER_NOT_AVAILABLE;
	}
	mk_strbuf_addf(path, "%s/%s", dir.buf, ref->name);
	mk_strbuf_release(&dir);
	return MK_OK;
}

int64_t mk_node_raw_limit(mkfs *fs, const node_ref *ref)
{
	(void)fs;
	mk_segment_info *segs;
	size_t n = ref_segments(ref, &segs, NULL);
	int64_t limit = raw_limit(segs, n, ref->name);
	free(segs);
	return limit;
}

/* ---- brokers ---------------------------------------------------------- */

static bool match_broker(mkfs *fs, node_ref *ref, const char *name)
{
	int64_t v;
	if (name[0] < '0' || name[0] > '9' || !mk_parse_i64(name, &v) || v < 0 ||
	    v > 1000000 || (name[0] == '0' && name[1]))
		return false;
	if (mk_cluster_broker_index(fs->cluster, (int)v) < 0)
		return false;
	ref->broker = (int)v;
	return true;
}

static void list_brokers(mkfs *fs, const node_ref *ref,
			 void (*add)(void *, const char *, bool), void *arg)
{
	(void)ref;
	char buf[16];
	for (int i = 0; i < fs->cluster->nbrokers; i++) {
		snprintf(buf, sizeof(buf), "%d", fs->cluster->brokers[i].id);
		add(arg, buf, true);
	}
}

static mk_err read_broker_state(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)why;
	mk_strbuf_addstr(out, mk_cluster_broker_online(fs->cluster, ref->broker)
			 ? "online\n" : "offline\n");
	return MK_OK;
}

/* The broker's Kafka protocol listener (mount/main.c gives the function:
 * fs/ does not know net/). */
static mk_err read_broker_listener(mkfs *fs, const node_ref *ref,
				   mk_strbuf *out, mk_strbuf *why)
{
	(void)why;
	if (!fs->listener || !fs->listener(fs->listener_arg, ref->broker, out))
		mk_strbuf_addstr(out, "none");
	mk_strbuf_addch(out, '\n');
	return MK_OK;
}

struct broker_rows {
	int broker;
	mk_strbuf *out;
};

static void broker_row(mk_topic *t, mk_partition *p, void *arg)
{
	struct broker_rows *br = arg;
	mk_partition_info pi;
	mk_partition_info_get(p, &pi);
	for (int i = 0; i < pi.nreplicas; i++) {
		if (pi.replicas[i].broker != br->broker)
			continue;
		mk_strbuf_addf(br->out, "%s %d %s %lld %s %lld\n", t->name, mk_partition_id(p),
			       pi.leader == br->broker ? "leader" : "follower",
			       (long long)pi.replicas[i].leo,
			       pi.replicas[i].in_isr ? "true" : "false",
			       (long long)pi.replicas[i].last_fetch_ms);
	}
}

static mk_err read_broker_replicas(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	(void)why;
	struct broker_rows br = { ref->broker, out };
	mk_cluster_each_partition(fs->cluster, broker_row, &br);
	return MK_OK;
}

/* A command of /brokers/B that takes no argument: fn for broker B. */
static mk_err broker_command(mkfs *fs, const node_ref *ref, const char *line,
			     mk_err (*fn)(mk_cluster *c, int id, mk_strbuf *why),
			     mk_strbuf *why)
{
	if (!no_argument(line))
		return bad_command(why, line, "no argument");
	return fn(fs->cluster, ref->broker, why);
}

static mk_err write_broker_fetch(mkfs *fs, const node_ref *ref, char *line,
				 mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	return broker_command(fs, ref, line, mk_cluster_broker_fetch, why);
}

static mk_err write_brokers_fetch(mkfs *fs, const node_ref *ref, char *line,
				  mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	(void)ref;
	if (!no_argument(line))
		return bad_command(why, line, "no argument");
	return mk_cluster_replicate(fs->cluster, why);
}

static mk_err write_broker_crash(mkfs *fs, const node_ref *ref, char *line,
				 mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	bool torn = !strcmp(line, "torn");
	if (!torn && !no_argument(line))
		return bad_command(why, line, "nothing, or 'torn'");
	return mk_cluster_broker_crash(fs->cluster, ref->broker, torn, why);
}

static mk_err write_broker_restart(mkfs *fs, const node_ref *ref, char *line,
				   mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	return broker_command(fs, ref, line, mk_cluster_broker_restart, why);
}

static mk_err write_broker_promote(mkfs *fs, const node_ref *ref, char *line,
				   mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	char copy[512];
	snprintf(copy, sizeof(copy), "%s", line);
	char *w[3];
	int n = split_words(line, w, 3);
	bool unclean = n == 2 && !strcmp(w[1], "unclean");
	char *slash = n >= 1 ? strrchr(w[0], '/') : NULL;
	int64_t part;
	if (n < 1 || n > 2 || (n == 2 && !unclean) || !slash ||
	    !strict_number(slash + 1, 1023, &part))
		return bad_command(why, copy, "TOPIC/PARTITION [unclean]");
	*slash = '\0';
	return mk_cluster_promote(fs->cluster, ref->broker, w[0], (int)part,
				  unclean, why);
}

/* ---- brokers/B/logs: B's own replicas ---------------------------------- */

static bool hosts(mk_topic *t, int p, int broker)
{
	mk_replica_view rv;
	return !mk_partition_replica_view(mk_topic_partition(t, p), broker, &rv, NULL);
}

static bool match_blog_topic(mkfs *fs, node_ref *ref, const char *name)
{
	if (!match_topic(fs, ref, name))
		return false;
	for (int p = 0; p < ref->topic->npartitions; p++)
		if (hosts(ref->topic, p, ref->broker))
			return true;
	mk_topic_put(ref->topic);
	ref->topic = NULL;
	return false;
}

static void list_blog_topics(mkfs *fs, const node_ref *ref,
			     void (*add)(void *, const char *, bool), void *arg)
{
	char **names;
	size_t n = mk_cluster_topic_names(fs->cluster, &names);
	for (size_t i = 0; i < n; i++) {
		mk_topic *t = mk_cluster_topic(fs->cluster, names[i]);
		bool any = false;
		for (int p = 0; t && p < t->npartitions && !any; p++)
			any = hosts(t, p, ref->broker);
		if (any)
			add(arg, names[i], true);
		mk_topic_put(t);
		free(names[i]);
	}
	free(names);
}

static bool match_blog_partition(mkfs *fs, node_ref *ref, const char *name)
{
	if (!match_partition(fs, ref, name))
		return false;
	if (hosts(ref->topic, ref->partition, ref->broker))
		return true;
	ref->partition = -1;
	return false;
}

static void list_blog_partitions(mkfs *fs, const node_ref *ref,
				 void (*add)(void *, const char *, bool), void *arg)
{
	(void)fs;
	char buf[16];
	for (int p = 0; p < ref->topic->npartitions; p++)
		if (hosts(ref->topic, p, ref->broker)) {
			snprintf(buf, sizeof(buf), "%d", p);
			add(arg, buf, true);
		}
}

/* ---- producers -------------------------------------------------------- */

static bool match_producer(mkfs *fs, node_ref *ref, const char *name)
{
	int64_t id;
	int16_t epoch;
	(void)ref;
	return mk_topic_name_valid(name) &&
	       !mk_cluster_producer_get(fs->cluster, name, &id, &epoch);
}

static void list_producers(mkfs *fs, const node_ref *ref,
			   void (*add)(void *, const char *, bool), void *arg)
{
	(void)ref;
	char **names;
	size_t n = mk_cluster_producer_names(fs->cluster, &names);
	for (size_t i = 0; i < n; i++) {
		add(arg, names[i], true);
		free(names[i]);
	}
	free(names);
}

static mk_err producer_of(mkfs *fs, const node_ref *ref, int64_t *id,
			  int16_t *epoch, mk_strbuf *why)
{
	/* The producer is the parent directory's name. */
	mk_err err = mk_cluster_producer_get(fs->cluster, ref->parent_name, id, epoch);
	if (err)
		mk_strbuf_addf(why, "no producer %s", ref->parent_name);
	return err;
}

static mk_err read_producer_id(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	int64_t id;
	int16_t epoch;
	mk_err err = producer_of(fs, ref, &id, &epoch, why);
	if (!err)
		mk_strbuf_addf(out, "%lld\n", (long long)id);
	return err;
}

static mk_err read_producer_epoch(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	int64_t id;
	int16_t epoch;
	mk_err err = producer_of(fs, ref, &id, &epoch, why);
	if (!err)
		mk_strbuf_addf(out, "%d\n", epoch);
	return err;
}

struct seq_rows {
	int64_t id;
	int16_t epoch;
	mk_strbuf *out;
};

static void sequence_row(mk_topic *t, mk_partition *p, void *arg)
{
	struct seq_rows *sr = arg;
	int32_t next = mk_partition_next_sequence(p, sr->id, sr->epoch);
	if (next >= 0)
		mk_strbuf_addf(sr->out, "%s %d %d\n", t->name, mk_partition_id(p), next);
}

static mk_err read_producer_sequences(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	struct seq_rows sr = { .out = out };
	mk_err err = producer_of(fs, ref, &sr.id, &sr.epoch, why);
	if (!err)
		mk_cluster_each_partition(fs->cluster, sequence_row, &sr);
	return err;
}

static mk_err write_producer_init(mkfs *fs, const node_ref *ref, char *line,
				  mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	(void)line;    /* "writing anything" bumps the epoch */
	return mk_cluster_producer_init(fs->cluster, ref->parent_name, why);
}

/* ---- the table -------------------------------------------------------- */

#define DIRMODE 0755
/* Rows leave out trailing fields that are 0 (waits: false). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const node_def nodes[] = {
	{ K_ROOT, -1, "", NULL, NODE_DIR, DIRMODE, NULL, NULL, NULL },
	{ K_README, K_ROOT, "README", NULL, NODE_VALUE, 0444, read_readme, NULL, NULL },
	{ K_CONFIG, K_ROOT, "config", NULL, NODE_VALUE, 0444, read_config, NULL, NULL },
	{ K_CTL, K_ROOT, "ctl", NULL, NODE_CONTROL, 0200, NULL, write_ctl, NULL },
	{ K_ERRORS, K_ROOT, "errors", NULL, NODE_VALUE, 0444, read_errors, NULL, NULL },
	{ K_CLOCK, K_ROOT, "clock", NULL, NODE_CONTROL, 0644, read_clock, write_clock, NULL },
	{ K_TOPICS, K_ROOT, "topics", NULL, NODE_DIR, DIRMODE, NULL, NULL, list_topics },
	{ K_BROKERS, K_ROOT, "brokers", NULL, NODE_DIR, DIRMODE, NULL, NULL, list_brokers },
	{ K_PRODUCERS, K_ROOT, "producers", NULL, NODE_DIR, DIRMODE, NULL, NULL, list_producers },
	{ K_GROUPS, K_ROOT, "groups", NULL, NODE_DIR, DIRMODE, NULL, NULL, mk_groups_list_groups, true },
	{ K_TRANSACTIONS, K_ROOT, "transactions", NULL, NODE_DIR, DIRMODE, NULL, NULL, mk_txn_node_list, true },

	{ K_TOPIC, K_TOPICS, NULL, match_topic, NODE_DIR, DIRMODE, NULL, NULL, list_partitions },
	{ K_TOPIC_CONFIG, K_TOPIC, "config", NULL, NODE_CONTROL, 0644, read_topic_config, write_topic_config, NULL },
	{ K_TOPIC_APPEND, K_TOPIC, "append", NULL, NODE_APPEND, 0666, NULL, NULL, NULL, false, &mk_append_handle_ops },

	{ K_PART, K_TOPIC, NULL, match_partition, NODE_DIR, DIRMODE, NULL, NULL, NULL },
	{ K_PART_APPEND, K_PART, "append", NULL, NODE_APPEND, 0666, NULL, NULL, NULL, false, &mk_append_handle_ops },
	{ K_PART_RECORDS, K_PART, "records", NULL, NODE_RECORDS, 0444, NULL, NULL, NULL, false, &mk_records_handle_ops },
	{ K_LEO, K_PART, "leo", NULL, NODE_VALUE, 0444, read_leo, NULL, NULL },
	{ K_HW, K_PART, "hw", NULL, NODE_VALUE, 0444, read_hw, NULL, NULL },
	{ K_LSO, K_PART, "lso", NULL, NODE_VALUE, 0444, read_lso, NULL, NULL },
	{ K_LSTART, K_PART, "log_start_offset", NULL, NODE_VALUE, 0444, read_lstart, NULL, NULL },
	{ K_LEADER, K_PART, "leader", NULL, NODE_VALUE, 0444, read_leader, NULL, NULL },
	{ K_EPOCH, K_PART, "leader_epoch", NULL, NODE_VALUE, 0444, read_epoch, NULL, NULL },
	{ K_REPLICAS, K_PART, "replicas", NULL, NODE_VALUE, 0444, read_replicas, NULL, NULL },
	{ K_ISR, K_PART, "isr", NULL, NODE_VALUE, 0444, read_isr, NULL, NULL },
	{ K_ISR_SHRINKS, K_PART, "isr_shrinks", NULL, NODE_VALUE, 0444, read_isr_shrinks, NULL, NULL },
	{ K_ISR_EXPANDS, K_PART, "isr_expands", NULL, NODE_VALUE, 0444, read_isr_expands, NULL, NULL },
	{ K_STATE, K_PART, "state", NULL, NODE_VALUE, 0444, read_state, NULL, NULL },
	{ K_DELREC, K_PART, "delete-records", NULL, NODE_CONTROL, 0200, NULL, write_delete_records, NULL },
	{ K_SEGMENTS, K_PART, "segments", NULL, NODE_DIR, DIRMODE, NULL, NULL, list_segments },
	{ K_SEGFILE, K_SEGMENTS, NULL, match_segment, NODE_RAW, 0444, NULL, NULL, NULL, false, &mk_raw_handle_ops },
	{ K_SEGTXT, K_SEGMENTS, NULL, match_segment_txt, NODE_VALUE, 0444, read_segment_txt, NULL, NULL },
	{ K_SEGDUMP, K_SEGMENTS, NULL, match_segment_dump, NODE_VALUE, 0444, read_segment_dump, NULL, NULL },
	{ K_EPOCHS, K_PART, "epochs", NULL, NODE_VALUE, 0444, read_epochs, NULL, NULL },
	{ K_BATCHES, K_PART, "batches", NULL, NODE_BATCHES, 0444, NULL, NULL, NULL, false, &mk_batches_handle_ops },

	{ K_PRODUCER, K_PRODUCERS, NULL, match_producer, NODE_DIR, DIRMODE, NULL, NULL, NULL },
	{ K_PID, K_PRODUCER, "id", NULL, NODE_VALUE, 0444, read_producer_id, NULL, NULL },
	{ K_PEPOCH, K_PRODUCER, "epoch", NULL, NODE_VALUE, 0444, read_producer_epoch, NULL, NULL },
	{ K_PSEQUENCES, K_PRODUCER, "sequences", NULL, NODE_VALUE, 0444, read_producer_sequences, NULL, NULL },
	{ K_PINIT, K_PRODUCER, "init", NULL, NODE_CONTROL, 0200, NULL, write_producer_init, NULL },

	{ K_GROUP, K_GROUPS, NULL, mk_groups_match_group, NODE_DIR, DIRMODE, NULL, NULL, NULL },
	{ K_GJOIN, K_GROUP, "join", NULL, NODE_CONTROL, 0200, NULL, mk_groups_write_join, NULL, true },
	{ K_GLEAVE, K_GROUP, "leave", NULL, NODE_CONTROL, 0200, NULL, mk_groups_write_leave, NULL, true },
	{ K_GHEARTBEAT, K_GROUP, "heartbeat", NULL, NODE_CONTROL, 0200, NULL, mk_groups_write_heartbeat, NULL, true },
	{ K_GSTATE, K_GROUP, "state", NULL, NODE_VALUE, 0444, mk_groups_read_state, NULL, NULL },
	{ K_GGENERATION, K_GROUP, "generation", NULL, NODE_VALUE, 0444, mk_groups_read_generation, NULL, NULL },
	{ K_GOFFSETS, K_GROUP, "offsets", NULL, NODE_VALUE, 0444, mk_groups_read_offsets, NULL, NULL },
	{ K_GCONFIG, K_GROUP, "config", NULL, NODE_CONTROL, 0644, mk_groups_read_config, mk_groups_write_config, NULL, true },
	{ K_GMEMBERS, K_GROUP, "members", NULL, NODE_DIR, DIRMODE, NULL, NULL, mk_groups_list_members },
	{ K_MEMBER, K_GMEMBERS, NULL, mk_groups_match_member, NODE_DIR, DIRMODE, NULL, NULL, NULL },
	{ K_MASSIGN, K_MEMBER, "assignment", NULL, NODE_VALUE, 0444, mk_groups_read_assignment, NULL, NULL },
	{ K_MGENERATION, K_MEMBER, "generation", NULL, NODE_VALUE, 0444, mk_groups_read_generation, NULL, NULL },
	{ K_MPOSITIONS, K_MEMBER, "positions", NULL, NODE_VALUE, 0444, mk_groups_read_positions, NULL, NULL },
	{ K_MLAG, K_MEMBER, "lag", NULL, NODE_VALUE, 0444, mk_groups_read_lag, NULL, NULL },
	{ K_MSEEK, K_MEMBER, "seek", NULL, NODE_CONTROL, 0200, NULL, mk_groups_write_seek, NULL, true },
	{ K_MPOLL, K_MEMBER, "poll", NULL, NODE_POLL, 0444, NULL, NULL, NULL, false, &mk_poll_handle_ops },
	{ K_MCOMMIT, K_MEMBER, "commit", NULL, NODE_CONTROL, 0200, NULL, NULL, NULL, true },

	{ K_TXN, K_TRANSACTIONS, NULL, mk_txn_node_match, NODE_DIR, DIRMODE, NULL, NULL, NULL },
	{ K_TINIT, K_TXN, "init", NULL, NODE_CONTROL, 0200, NULL, mk_txn_node_write_init, NULL, true },
	{ K_TCOMMIT, K_TXN, "commit", NULL, NODE_CONTROL, 0200, NULL, mk_txn_node_write_commit, NULL, true },
	{ K_TABORT, K_TXN, "abort", NULL, NODE_CONTROL, 0200, NULL, mk_txn_node_write_abort, NULL, true },
	{ K_TOFFSETS, K_TXN, "offsets", NULL, NODE_CONTROL, 0644, mk_txn_node_read_offsets, NULL, NULL, true },
	{ K_TSTATE, K_TXN, "state", NULL, NODE_VALUE, 0444, mk_txn_node_read_state, NULL, NULL },
	{ K_TPARTS, K_TXN, "partitions", NULL, NODE_VALUE, 0444, mk_txn_node_read_partitions, NULL, NULL },
	{ K_TPID, K_TXN, "producer_id", NULL, NODE_VALUE, 0444, mk_txn_node_read_pid, NULL, NULL },
	{ K_TEPOCH, K_TXN, "epoch", NULL, NODE_VALUE, 0444, mk_txn_node_read_epoch, NULL, NULL },

	{ K_BROKERS_FETCH, K_BROKERS, "fetch", NULL, NODE_CONTROL, 0200, NULL, write_brokers_fetch, NULL },
	{ K_BROKER, K_BROKERS, NULL, match_broker, NODE_DIR, DIRMODE, NULL, NULL, NULL },
	{ K_BSTATE, K_BROKER, "state", NULL, NODE_VALUE, 0444, read_broker_state, NULL, NULL },
	{ K_BLISTENER, K_BROKER, "listener", NULL, NODE_VALUE, 0444, read_broker_listener, NULL, NULL },
	{ K_BREPLICAS, K_BROKER, "replicas", NULL, NODE_VALUE, 0444, read_broker_replicas, NULL, NULL },
	{ K_BFETCH, K_BROKER, "fetch", NULL, NODE_CONTROL, 0200, NULL, write_broker_fetch, NULL },
	{ K_BCRASH, K_BROKER, "crash", NULL, NODE_CONTROL, 0200, NULL, write_broker_crash, NULL },
	{ K_BRESTART, K_BROKER, "restart", NULL, NODE_CONTROL, 0200, NULL, write_broker_restart, NULL },
	{ K_BPROMOTE, K_BROKER, "promote", NULL, NODE_CONTROL, 0200, NULL, write_broker_promote, NULL },
	{ K_BLOGS, K_BROKER, "logs", NULL, NODE_DIR, DIRMODE, NULL, NULL, list_blog_topics },
	{ K_BLTOPIC, K_BLOGS, NULL, match_blog_topic, NODE_DIR, DIRMODE, NULL, NULL, list_blog_partitions },
	{ K_BLPART, K_BLTOPIC, NULL, match_blog_partition, NODE_DIR, DIRMODE, NULL, NULL, NULL },
};
#pragma GCC diagnostic pop
#define NNODES (sizeof(nodes) / sizeof(nodes[0]))

/* Control files that take a whole write at once (all lines parsed before
 * anything is done) instead of one command per line. */
static const struct {
	int kind;
	mk_err (*write_all)(mkfs *fs, const node_ref *ref, const char *buf,
			    size_t len, mk_coord_call *call, mk_strbuf *why);
} whole_writes[] = {
	{ K_MCOMMIT, mk_groups_write_commit },
	{ K_TOFFSETS, mk_txn_node_write_offsets },
};

/* ---- resolution ------------------------------------------------------- */

/* Is row n a child of directory dir? A replica's directory under
 * /brokers/B/logs has the partition rows its view keeps. */
static bool child_of(const node_def *n, const node_def *dir)
{
	if (dir->kind != K_BLPART)
		return n->parent == dir->kind;
	if (n->parent != K_PART)
		return false;
	for (size_t i = 0; i < sizeof(replica_view_kinds) / sizeof(replica_view_kinds[0]); i++)
		if (replica_view_kinds[i] == n->kind)
			return true;
	return false;
}

static bool component_matches(const node_def *d, const char *comp)
{
	if (!d->name)
		return false;
	if (!strcmp(d->name, comp))
		return true;
	if (d->type == NODE_RECORDS)
		return mk_name_classify(comp) == MK_NAME_RECORDS;
	if (d->type == NODE_APPEND)
		return mk_name_classify(comp) == MK_NAME_APPEND;
	if (d->type == NODE_POLL)
		return mk_name_classify(comp) == MK_NAME_POLL;
	if (d->type == NODE_BATCHES)
		return mk_name_classify(comp) == MK_NAME_BATCHES;
	return false;
}

/* Why comp is not a child of ref's directory, in words a newcomer can act
 * on: what there is instead, or how to create it. */
static void explain_missing(mkfs *fs, const node_ref *ref, const char *comp,
			    mk_strbuf *why)
{
	switch (ref->def->kind) {
	case K_TOPICS:
		mk_strbuf_addf(why, "no topic '%s' (ls topics lists them; mkdir topics/%s creates it)",
			       comp, comp);
		return;
	case K_TOPIC:
		mk_strbuf_addf(why, "topic %s has partitions 0 to %d, not '%s'",
			       ref->topic->name, ref->topic->npartitions - 1, comp);
		return;
	case K_BROKERS:
		mk_strbuf_addf(why, "no broker '%s' (brokers:", comp);
		for (int i = 0; i < fs->cluster->nbrokers; i++)
			mk_strbuf_addf(why, " %d", fs->cluster->brokers[i].id);
		mk_strbuf_addstr(why, "; [cluster] brokers lists them)");
		return;
	case K_BLOGS:
		mk_strbuf_addf(why, "broker %d hosts no replica of a topic '%s' (ls brokers/%d/logs lists those it hosts)",
			       ref->broker, comp, ref->broker);
		return;
	case K_BLTOPIC:
		mk_strbuf_addf(why, "broker %d hosts no replica of %s partition '%s' (ls brokers/%d/logs/%s lists those it hosts)",
			       ref->broker, ref->topic->name, comp, ref->broker,
			       ref->topic->name);
		return;
	case K_PRODUCERS:
		mk_strbuf_addf(why, "no producer '%s' (mkdir producers/%s creates it)", comp, comp);
		return;
	case K_TRANSACTIONS:
		mk_strbuf_addf(why, "no transactional id '%s' (mkdir transactions/%s creates it)",
			       comp, comp);
		return;
	case K_SEGMENTS:
		mk_strbuf_addf(why, "no segment file '%s' (ls lists them; N.index:txt and N.timeindex:txt decode the indexes, F:dump prints F as kafka-dump-log does)",
			       comp);
		return;
	default:
		mk_strbuf_addf(why, "no file '%s' here (ls lists them)", comp);
		return;
	}
}

mk_err mk_resolve(mkfs *fs, const char *path, node_ref *ref, mk_strbuf *why)
{
	memset(ref, 0, sizeof(*ref));
	ref->def = &nodes[0];
	ref->partition = -1;
	ref->broker = -1;
	const char *p = path;
	while (*p == '/')
		p++;
	while (*p) {
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len >= sizeof(ref->name)) {
			mk_why(why, "a name component is %zu bytes, over 255", len);
			mk_node_ref_release(ref);
			return MK_INVALID_REQUEST;
		}
		char comp[sizeof(ref->name)];
		memcpy(comp, p, len);
		comp[len] = '\0';
		const node_def *next = NULL;
		for (size_t i = 0; i < NNODES && !next; i++)
			if (child_of(&nodes[i], ref->def) && component_matches(&nodes[i], comp))
				next = &nodes[i];
		for (size_t i = 0; i < NNODES && !next; i++)
			if (child_of(&nodes[i], ref->def) && nodes[i].match &&
			    nodes[i].match(fs, ref, comp))
				next = &nodes[i];
		if (!next) {
			if (why)
				explain_missing(fs, ref, comp, why);
			goto noent;
		}
		ref->def = next;
		memcpy(ref->parent_name, ref->name, sizeof(ref->name));
		memcpy(ref->name, comp, len + 1);
		p += len;
		while (*p == '/')
			p++;
	}
	return MK_OK;
noent:
	if (why && !why->len)
		mk_strbuf_addf(why, "no such file: %s", path);
	mk_node_ref_release(ref);
	return MK_UNKNOWN_TOPIC_OR_PARTITION;
}

void mk_node_ref_release(node_ref *ref)
{
	mk_topic_put(ref->topic);
	ref->topic = NULL;
}

void mk_node_list(mkfs *fs, const node_ref *dir,
		  void (*add)(void *arg, const char *name, bool dir), void *arg)
{
	for (size_t i = 0; i < NNODES; i++)
		if (child_of(&nodes[i], dir->def) && nodes[i].name)
			add(arg, nodes[i].name, nodes[i].type == NODE_DIR);
	if (dir->def->list)
		dir->def->list(fs, dir, add, arg);
}

bool mk_node_value_size(mkfs *fs, const node_ref *ref, size_t *size)
{
	const node_def *d = ref->def;
	/* The decoded indexes walk a segment's entries: not cheap. */
	if ((d->type != NODE_VALUE && d->type != NODE_CONTROL) || !d->read ||
	    d->kind == K_SEGTXT)
		return false;
	mk_strbuf text = MK_STRBUF_INIT, why = MK_STRBUF_INIT;
	bool ok = d->read(fs, ref, &text, &why) == MK_OK;
	*size = text.len;
	mk_strbuf_release(&text);
	mk_strbuf_release(&why);
	return ok;
}

mk_err mk_node_control(mkfs *fs, const node_ref *ref, const char *buf,
		       size_t len, size_t *from, mk_coord_call *call, mk_strbuf *why)
{
	size_t start = from ? *from : 0;
	for (size_t i = 0; i < sizeof(whole_writes) / sizeof(whole_writes[0]); i++)
		if (whole_writes[i].kind == ref->def->kind) {
			if (from)
				*from = len;
			return start < len || !len
				? whole_writes[i].write_all(fs, ref, buf, len, call, why)
				: MK_OK;
		}
	if (!ref->def->write)
		return mk_error(why, MK_INVALID_REQUEST, "this file is not writable");
	mk_strbuf line = MK_STRBUF_INIT;
	mk_err err = MK_OK;
	size_t pos = start;
	bool any = start > 0;
	while (pos < len && !err && !mk_coord_call_pending(call)) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		mk_strbuf_reset(&line);
		mk_strbuf_add(&line, buf + pos, n);
		pos += n + (nl ? 1 : 0);
		if (memchr(line.buf, '\0', line.len)) {
			err = mk_error(why, MK_INVALID_REQUEST, "command contains a NUL byte");
			break;
		}
		/* Trim trailing CR and spaces. */
		while (line.len && (line.buf[line.len - 1] == '\r' ||
				    line.buf[line.len - 1] == ' ' ||
				    line.buf[line.len - 1] == '\t'))
			mk_strbuf_setlen(&line, line.len - 1);
		/* Blank lines between commands are skipped, but a write of
		 * nothing but one empty line is the "no argument" form. */
		if (!line.len && (any || pos < len))
			continue;
		any = true;
		err = ref->def->write(fs, ref, line.buf, call, why);
	}
	if (!any && !err)
		err = ref->def->write(fs, ref, (char *)"", call, why);
	if (from)
		*from = pos;
	mk_strbuf_release(&line);
	return err;
}

/* ---- mkdir / rmdir ---------------------------------------------------- */

/* Split "/a/b/c" into the parent node and the last name. */
static mk_err parent_of(mkfs *fs, const char *path, node_ref *parent,
			const char **name, mk_strbuf *why)
{
	const char *slash = strrchr(path, '/');
	if (!slash || !slash[1])
		return mk_error(why, MK_INVALID_REQUEST, "bad path %s", path);
	mk_strbuf dir = MK_STRBUF_INIT;
	mk_strbuf_add(&dir, path, (size_t)(slash - path));
	mk_err err = mk_resolve(fs, dir.len ? dir.buf : "/", parent, why);
	mk_strbuf_release(&dir);
	*name = slash + 1;
	return err;
}

bool mk_node_mkdir_waits(mkfs *fs, const char *path)
{
	node_ref parent;
	const char *name;
	if (parent_of(fs, path, &parent, &name, NULL))
		return false;
	bool waits = parent.def->type == NODE_DIR && parent.def->waits;
	mk_node_ref_release(&parent);
	return waits;
}

mk_err mk_node_mkdir(mkfs *fs, const char *path, mk_coord_call *call,
		     mk_strbuf *why)
{
	node_ref parent;
	const char *name;
	mk_err err = parent_of(fs, path, &parent, &name, why);
	if (err)
		return err;
	if (parent.def->kind == K_TOPICS) {
		err = mk_cluster_create_topic(fs->cluster, name, -1, -1, NULL, 0, why);
	} else if (parent.def->kind == K_PRODUCERS) {
		err = mk_cluster_producer_create(fs->cluster, name, why);
	} else if (parent.def->kind == K_GROUPS) {
		err = mk_groups_mkdir(fs, name, call, why);
	} else if (parent.def->kind == K_TRANSACTIONS) {
		err = mk_txn_node_mkdir(fs, name, call, why);
	} else {
		mk_strbuf_addf(why, "cannot create a directory here: %s", path);
		err = MK_INVALID_REQUEST;
	}
	mk_node_ref_release(&parent);
	return err;
}

mk_err mk_node_rmdir(mkfs *fs, const char *path, mk_coord_call *call,
		     mk_strbuf *why)
{
	node_ref ref;
	mk_err err = mk_resolve(fs, path, &ref, why);
	if (err)
		return err;
	if (ref.def->kind == K_TOPIC) {
		err = mk_cluster_delete_topic(fs->cluster, ref.topic->name, why);
	} else if (ref.def->kind == K_PRODUCER) {
		err = mk_cluster_producer_delete(fs->cluster, ref.name, why);
	} else if (ref.def->kind == K_GROUP) {
		err = mk_groups_rmdir(fs, ref.name, call, why);
	} else if (ref.def->kind == K_TXN) {
		err = mk_txn_node_rmdir(fs, ref.name, call, why);
	} else {
		mk_strbuf_addf(why, "cannot remove %s", path);
		err = MK_INVALID_REQUEST;
	}
	mk_node_ref_release(&ref);
	return err;
}
