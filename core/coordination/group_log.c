/*
 * group_log.c — the group coordinator's records in __consumer_offsets
 * (group.h says what they are) and the rebuild of its state from them:
 * at open, and for a partition whose leader epoch moved since it was
 * read (Kafka's GroupMetadataManager).
 */
#include "group_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "partitioner.h"
#include "topic_name.h"
#include "xalloc.h"

/* ---- group metadata records --------------------------------------------- */

const char *const gm_reset_names[] = { "earliest", "latest", "none" };

/* The value of a group's metadata record at generation gen. */
void gm_meta_value(const gm_group *grp, int64_t gen, mk_strbuf *out)
{
	mk_strbuf_addf(out, "generation=%lld", (long long)gen);
	if (grp->reset >= 0)
		mk_strbuf_addf(out, " auto.offset.reset=%s", gm_reset_names[grp->reset]);
	if (grp->session_ms >= 0)
		mk_strbuf_addf(out, " session.timeout.ms=%lld", (long long)grp->session_ms);
	if (grp->max_poll >= 0)
		mk_strbuf_addf(out, " max.poll.records=%lld", (long long)grp->max_poll);
}

/* Apply one KEY=VALUE of a group's configuration to grp. */
mk_err gm_config_set(gm_group *grp, const char *kv, mk_strbuf *why)
{
	const char *eq = strchr(kv, '=');
	if (!eq) {
		return mk_error(why, MK_INVALID_CONFIG, "expected KEY=VALUE, got '%s'", kv);
	}
	size_t kl = (size_t)(eq - kv);
	const char *v = eq + 1;
	int64_t n;
	if (kl == 17 && !strncmp(kv, "auto.offset.reset", kl)) {
		for (int i = 0; i < 3; i++)
			if (!strcmp(v, gm_reset_names[i])) {
				grp->reset = i;
				return MK_OK;
			}
		return mk_error(why, MK_INVALID_CONFIG, "auto.offset.reset: bad value '%s' (earliest, latest or none)", v);
	}
	if (kl == 18 && !strncmp(kv, "session.timeout.ms", kl)) {
		if (!mk_parse_i64(v, &n) || n < 1) {
			return mk_error(why, MK_INVALID_CONFIG, "session.timeout.ms: bad value '%s' (an integer >= 1)", v);
		}
		grp->session_ms = n;
		return MK_OK;
	}
	if (kl == 16 && !strncmp(kv, "max.poll.records", kl)) {
		if (!mk_parse_i64(v, &n) || n < 1 || n > (1 << 30)) {
			return mk_error(why, MK_INVALID_CONFIG, "max.poll.records: bad value '%s' (an integer from 1 to 2^30)", v);
		}
		grp->max_poll = n;
		return MK_OK;
	}
	return mk_error(why, MK_INVALID_CONFIG, "unknown group key '%s' (auto.offset.reset, session.timeout.ms, max.poll.records)", kv);
}

/* ---- the offsets topic ---------------------------------------------------- */

/* A group's partition of __consumer_offsets: crc32 of its name, always
 * (the offsets it committed must be found there after any change of the
 * producer's `partitioner`; Kafka uses its own hash, the name's Java
 * hashCode, for this too). */
int gm_opart_of(mk_groups *g, const char *group)
{
	return mk_partition_for_key(mk_bytes_of(group, strlen(group)), g->nparts,
				    MK_PARTITIONER_CRC32);
}

/* Create __consumer_offsets if needed. Under the turn. */
mk_err gm_ensure_topic(mk_groups *g, mk_strbuf *why)
{
	if (g->nparts)
		return MK_OK;
	int n;
	mk_err err = mk_coord_ensure_topic(g->rt, &n, why);
	if (err)
		return err;
	int32_t *ep = mk_xmalloc((size_t)n * sizeof(*ep));
	for (int i = 0; i < n; i++)
		ep[i] = INT32_MIN;
	pthread_mutex_lock(&g->lock);
	g->loaded_epoch = ep;
	g->nparts = n;
	pthread_mutex_unlock(&g->lock);
	return MK_OK;
}

typedef struct {
	gm_group **groups;
	size_t ngroups;
	bool *deleted;           /* parallel: the last group record was a tombstone */
} load_state;

static gm_group *load_group(load_state *ls, const char *name, size_t len)
{
	char buf[MK_TOPIC_NAME_MAX + 1];
	if (len > MK_TOPIC_NAME_MAX)
		return NULL;
	memcpy(buf, name, len);
	buf[len] = '\0';
	size_t pos;
	gm_group *grp = gm_find_named((void *const *)ls->groups, ls->ngroups, buf, &pos);
	if (!grp) {
		grp = gm_group_new(buf);
		size_t n = ls->ngroups;
		gm_insert_ptr((void ***)&ls->groups, &ls->ngroups, pos, grp);
		bool *d = mk_xrealloc(ls->deleted, ls->ngroups * sizeof(*d));
		memmove(d + pos + 1, d + pos, (n - pos) * sizeof(*d));
		d[pos] = true;   /* until a metadata record says otherwise */
		ls->deleted = d;
	}
	return grp;
}

static size_t load_index(load_state *ls, gm_group *grp)
{
	size_t pos = 0;
	gm_find_named((void *const *)ls->groups, ls->ngroups, grp->name, &pos);
	return pos;
}

static void load_record(load_state *ls, const mk_record_view *rec);

static void replay_one(void *arg, const mk_record_view *rec)
{
	load_record(arg, rec);
}

static void load_record(load_state *ls, const mk_record_view *rec)
{
	if (rec->key.len <= 0)
		return;
	const char *k = (const char *)rec->key.ptr;
	size_t kl = (size_t)rec->key.len;
	const char *s1 = memchr(k, '/', kl);
	char val[512];
	size_t vl = rec->value.len > 0 ? (size_t)rec->value.len : 0;
	if (vl >= sizeof(val))
		return;
	if (vl)
		memcpy(val, rec->value.ptr, vl);
	val[vl] = '\0';
	if (!s1) {
		gm_group *grp = load_group(ls, k, kl);
		if (!grp)
			return;
		size_t i = load_index(ls, grp);
		if (rec->value.len < 0) {
			ls->deleted[i] = true;
			gm_commits_free(grp->commits, grp->ncommits);
			grp->commits = NULL;
			grp->ncommits = 0;
			grp->reset = grp->session_ms = grp->max_poll = -1;
			return;
		}
		ls->deleted[i] = false;
		grp->reset = grp->session_ms = grp->max_poll = -1;
		char *save = NULL;
		for (char *w = strtok_r(val, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
			int64_t n;
			if (!strncmp(w, "generation=", 11)) {
				if (mk_parse_i64(w + 11, &n) && n > grp->generation)
					grp->generation = n;
			} else {
				gm_config_set(grp, w, NULL);
			}
		}
		return;
	}
	const char *s2 = memchr(s1 + 1, '/', kl - (size_t)(s1 + 1 - k));
	if (!s2)
		return;
	gm_group *grp = load_group(ls, k, (size_t)(s1 - k));
	if (!grp)
		return;
	char topic[MK_TOPIC_NAME_MAX + 1], pbuf[16];
	size_t tl = (size_t)(s2 - s1 - 1), pl = kl - (size_t)(s2 + 1 - k);
	if (tl > MK_TOPIC_NAME_MAX || pl >= sizeof(pbuf))
		return;
	memcpy(topic, s1 + 1, tl);
	topic[tl] = '\0';
	memcpy(pbuf, s2 + 1, pl);
	pbuf[pl] = '\0';
	int64_t part, off = -1;
	if (!mk_parse_i64(pbuf, &part) || part < 0 || part > INT32_MAX)
		return;
	if (rec->value.len >= 0 && (!mk_parse_i64(val, &off) || off < 0))
		return;
	gm_set_commit(grp, topic, (int)part, off);
}

/*
 * Rebuild the groups of offsets partition op from the log. Committed
 * offsets and overrides become the log's; a generation only grows; groups
 * the log deleted go unless they have members. Under the turn.
 */
static void load_partition(mk_groups *g, int op)
{
	load_state ls = { NULL, 0, NULL };
	int32_t epoch;
	mk_err err = mk_coord_replay(g->rt, op, replay_one, &ls, &epoch);
	pthread_mutex_lock(&g->lock);
	if (!err) {
		g->loaded_epoch[op] = epoch;
		/* Groups of this partition the log no longer has. */
		for (size_t i = g->ngroups; i-- > 0;) {
			gm_group *grp = g->groups[i];
			if (gm_opart_of(g, grp->name) != op)
				continue;
			size_t lp;
			gm_group *lg = gm_find_named((void *const *)ls.groups, ls.ngroups, grp->name, &lp);
			if ((!lg || ls.deleted[lp]) && !grp->nmembers) {
				gm_group_free(grp);
				gm_remove_ptr((void **)g->groups, &g->ngroups, i);
			}
		}
		for (size_t i = 0; i < ls.ngroups; i++) {
			gm_group *lg = ls.groups[i];
			size_t pos;
			gm_group *grp = gm_find_group(g, lg->name, &pos);
			if (ls.deleted[i] && !grp)
				continue;
			if (!grp) {
				gm_insert_ptr((void ***)&g->groups, &g->ngroups, pos, lg);
				ls.groups[i] = NULL;
				continue;
			}
			if (lg->generation > grp->generation)
				grp->generation = lg->generation;
			grp->reset = lg->reset;
			grp->session_ms = lg->session_ms;
			grp->max_poll = lg->max_poll;
			gm_commits_free(grp->commits, grp->ncommits);
			grp->commits = lg->commits;
			grp->ncommits = lg->ncommits;
			lg->commits = NULL;
			lg->ncommits = 0;
		}
	}
	pthread_mutex_unlock(&g->lock);
	for (size_t i = 0; i < ls.ngroups; i++)
		gm_group_free(ls.groups[i]);
	free(ls.groups);
	free(ls.deleted);
}

/* Reload every offsets partition whose leader epoch moved. Under the turn. */
void gm_refresh(mk_groups *g)
{
	if (!g->nparts)
		return;
	mk_topic *t = mk_cluster_topic(g->c, MK_OFFSETS_TOPIC);
	if (!t)
		return;
	for (int op = 0; op < g->nparts && op < t->npartitions; op++) {
		mk_partition_info pi;
		mk_partition_info_get(mk_topic_partition(t, op), &pi);
		if (pi.leader >= 0 && pi.leader_epoch != g->loaded_epoch[op])
			load_partition(g, op);
	}
	mk_topic_put(t);
}

/* Readers refresh only when no change is in flight (never wait on acks). */
void gm_try_refresh(mk_groups *g)
{
	if (mk_coord_trylock(g->rt)) {
		gm_refresh(g);
		mk_coord_unlock(g->rt);
	}
}

