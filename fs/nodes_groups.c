/*
 * nodes_groups.c — /groups/G/... and /groups/G/members/M/... as text.
 */
#include "nodes_groups.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"
#include "parse.h"
#include "topic_name.h"

#define NEED_GROUPS(fs, why)                                                 \
	NEED_COORDINATOR((fs)->groups, "group", MK_GROUP_ID_NOT_FOUND, false, NULL, why)
#define NEED_CALL(fs, call, why)                                             \
	NEED_COORDINATOR((fs)->groups, "group", MK_GROUP_ID_NOT_FOUND, true, call, why)

/* Split on spaces and tabs, in place; -1 when more than max words. */
static int words(char *line, char **w, int max)
{
	int n = 0;
	char *save = NULL;
	for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (n == max)
			return -1;
		w[n++] = t;
	}
	return n;
}

static mk_err usage(mk_strbuf *why, const char *line, const char *expected)
{
	mk_strbuf_addf(why, "bad command '%s'; expected: %s", line, expected);
	return MK_INVALID_REQUEST;
}

/* "TOPIC/PARTITION" in place: *topic points into s. */
static bool parse_tp(char *s, const char **topic, int *part)
{
	char *slash = strrchr(s, '/');
	int64_t v;
	/* The partition as the tree names it: digits, no leading zero. */
	if (!slash || slash == s || !mk_parse_i64(slash + 1, &v) || v < 0 ||
	    v > INT32_MAX || slash[1] < '0' || slash[1] > '9' ||
	    (slash[1] == '0' && slash[2]))
		return false;
	*slash = '\0';
	*topic = s;
	*part = (int)v;
	return true;
}

/* ---- match and list ------------------------------------------------------ */

bool mk_groups_match_group(mkfs *fs, node_ref *ref, const char *name)
{
	if (!fs->groups || !mk_topic_name_valid(name) ||
	    !mk_group_exists(fs->groups, name))
		return false;
	snprintf(ref->group, sizeof(ref->group), "%s", name);
	return true;
}

static void add_names(char **names, size_t n,
		      void (*add)(void *, const char *, bool), void *arg)
{
	for (size_t i = 0; i < n; i++) {
		add(arg, names[i], true);
		free(names[i]);
	}
	free(names);
}

void mk_groups_list_groups(mkfs *fs, const node_ref *ref,
			   void (*add)(void *, const char *, bool), void *arg)
{
	(void)ref;
	if (!fs->groups)
		return;
	char **names;
	size_t n = mk_group_names(fs->groups, &names);
	add_names(names, n, add, arg);
}

bool mk_groups_match_member(mkfs *fs, node_ref *ref, const char *name)
{
	if (!fs->groups || !mk_topic_name_valid(name) ||
	    !mk_group_member_exists(fs->groups, ref->group, name))
		return false;
	snprintf(ref->member, sizeof(ref->member), "%s", name);
	return true;
}

void mk_groups_list_members(mkfs *fs, const node_ref *ref,
			    void (*add)(void *, const char *, bool), void *arg)
{
	if (!fs->groups)
		return;
	char **names;
	size_t n = mk_group_member_names(fs->groups, ref->group, &names);
	add_names(names, n, add, arg);
}

/* ---- group files ------------------------------------------------------------ */

mk_err mk_groups_write_join(mkfs *fs, const node_ref *ref, char *line,
			    mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	char copy[1024];
	snprintf(copy, sizeof(copy), "%s", line);
	char *w[2];
	int n = words(line, w, 2);
	if (n != 2)
		return usage(why, copy, "MEMBER TOPIC[,TOPIC...]");
	size_t tl = strlen(w[1]);
	if (w[1][0] == ',' || w[1][tl - 1] == ',' || strstr(w[1], ",,"))
		return usage(why, copy, "MEMBER TOPIC[,TOPIC...]");
	const char *topics[64];
	size_t nt = 0;
	char *save = NULL;
	for (char *t = strtok_r(w[1], ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (nt == 64)
			return usage(why, copy, "MEMBER TOPIC[,TOPIC...] (at most 64 topics)");
		topics[nt++] = t;
	}
	return mk_group_join(fs->groups, ref->group, w[0], topics, nt, call, why);
}

mk_err mk_groups_write_leave(mkfs *fs, const node_ref *ref, char *line,
			     mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	char copy[1024];
	snprintf(copy, sizeof(copy), "%s", line);
	char *w[1];
	if (words(line, w, 1) != 1)
		return usage(why, copy, "MEMBER");
	return mk_group_leave(fs->groups, ref->group, w[0], call, why);
}

mk_err mk_groups_write_heartbeat(mkfs *fs, const node_ref *ref, char *line,
				 mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	NEED_GROUPS(fs, why);
	char copy[1024];
	snprintf(copy, sizeof(copy), "%s", line);
	char *w[2];
	int64_t gen;
	if (words(line, w, 2) != 2 || !mk_parse_i64(w[1], &gen) || gen < 0)
		return usage(why, copy, "MEMBER GENERATION");
	return mk_group_heartbeat(fs->groups, ref->group, w[0], gen, why);
}

static void add_value(mk_strbuf *out, int64_t v)
{
	if (v < 0)
		mk_strbuf_addstr(out, "none");
	else
		mk_strbuf_addf(out, "%lld", (long long)v);
}

/* A bar of `width` cells for offsets [0, max): '#' below the committed
 * offset, '+' from there to the owner's position, '.' from there to the
 * HW (the lag still to read), ' ' beyond. */
static void draw_progress(mk_strbuf *out, const mk_group_part_info *p,
			  int64_t max, int width)
{
	int64_t committed = p->committed < 0 ? 0 : p->committed;
	int64_t position = p->position < committed ? committed : p->position;
	mk_strbuf_addch(out, '[');
	for (int cell = 0; cell < width; cell++) {
		int64_t off = max ? (int64_t)cell * max / width : 0;
		char c = ' ';
		if (p->hw >= 0 && off < p->hw)
			c = off < committed ? '#' : off < position ? '+' : '.';
		mk_strbuf_addch(out, c);
	}
	mk_strbuf_addch(out, ']');
}

mk_err mk_groups_read_state(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	NEED_GROUPS(fs, why);
	mk_group_info gi;
	mk_err err = mk_group_describe(fs->groups, ref->group, NULL, &gi, why);
	if (err)
		return err;
	static const char *const resets[] = { "earliest", "latest", "none" };
	mk_strbuf_addf(out, "group %s\nstate %s\ngeneration %lld\n", ref->group,
		       gi.nmembers ? "stable" : "empty", (long long)gi.generation);
	mk_strbuf_addf(out, "session.timeout.ms %lld\nauto.offset.reset %s\n",
		       (long long)gi.session_timeout_ms, resets[gi.reset]);
	mk_strbuf_addf(out, "members %zu\n", gi.nmembers);
	for (size_t i = 0; i < gi.nmembers; i++) {
		const mk_group_member_info *m = &gi.members[i];
		mk_strbuf_addf(out, "  member %s topics ", m->name);
		for (size_t k = 0; k < m->ntopics; k++)
			mk_strbuf_addf(out, "%s%s", k ? "," : "", m->topics[k]);
		mk_strbuf_addf(out, " last_heartbeat_ms %lld (%lld ms ago) assignment",
			       (long long)m->last_seen_ms,
			       (long long)(gi.now_ms - m->last_seen_ms));
		for (size_t k = 0; k < gi.nparts; k++)
			if (gi.parts[k].owner && !strcmp(gi.parts[k].owner, m->name))
				mk_strbuf_addf(out, " %s/%d", gi.parts[k].topic,
					       gi.parts[k].partition);
		mk_strbuf_addch(out, '\n');
	}
	int64_t max = 0;
	for (size_t k = 0; k < gi.nparts; k++)
		if (gi.parts[k].hw > max)
			max = gi.parts[k].hw;
	mk_strbuf_addf(out, "\npartitions (# committed, + read by the owner, . lag to the hw):\n");
	for (size_t k = 0; k < gi.nparts; k++) {
		const mk_group_part_info *p = &gi.parts[k];
		mk_strbuf_addf(out, "  %s/%d owner %s ", p->topic, p->partition,
			       p->owner ? p->owner : "-");
		draw_progress(out, p, max, 30);
		mk_strbuf_addstr(out, " committed ");
		add_value(out, p->committed);
		mk_strbuf_addstr(out, " position ");
		add_value(out, p->position);
		mk_strbuf_addstr(out, " hw ");
		add_value(out, p->hw);
		mk_strbuf_addstr(out, " lag ");
		if (p->hw >= 0)
			add_value(out, p->hw - (p->committed < 0 ? (p->log_start < 0 ? 0 : p->log_start)
						    : p->committed));
		else
			mk_strbuf_addstr(out, "none");
		mk_strbuf_addch(out, '\n');
	}
	mk_group_info_free(&gi);
	return MK_OK;
}

mk_err mk_groups_read_generation(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	NEED_GROUPS(fs, why);
	mk_group_info gi;
	mk_err err = mk_group_describe(fs->groups, ref->group,
				       ref->member[0] ? ref->member : NULL, &gi, why);
	if (!err)
		mk_strbuf_addf(out, "%lld\n", (long long)gi.generation);
	mk_group_info_free(&gi);
	return err;
}

mk_err mk_groups_read_offsets(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	NEED_GROUPS(fs, why);
	mk_group_info gi;
	mk_err err = mk_group_describe(fs->groups, ref->group, NULL, &gi, why);
	for (size_t k = 0; !err && k < gi.nparts; k++)
		if (gi.parts[k].committed >= 0)
			mk_strbuf_addf(out, "%s %d %lld\n", gi.parts[k].topic,
				       gi.parts[k].partition,
				       (long long)gi.parts[k].committed);
	mk_group_info_free(&gi);
	return err;
}

mk_err mk_groups_read_config(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	NEED_GROUPS(fs, why);
	return mk_group_config_format(fs->groups, ref->group, out, why);
}

mk_err mk_groups_write_config(mkfs *fs, const node_ref *ref, char *line,
			      mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	char *w[16];
	int n = words(line, w, 16);
	if (n <= 0)
		return usage(why, "", "KEY=VALUE");
	const char *dup = mk_duplicate_key(w, n);
	if (dup) {
		mk_strbuf_addf(why, "key given twice: %s", dup);
		return MK_INVALID_REQUEST;
	}
	return mk_group_configure(fs->groups, ref->group, (const char *const *)w,
				  (size_t)n, call, why);
}

/* ---- member files --------------------------------------------------------------- */

static mk_err member_info(mkfs *fs, const node_ref *ref, mk_group_info *gi,
			  mk_strbuf *why)
{
	NEED_GROUPS(fs, why);
	return mk_group_describe(fs->groups, ref->group, ref->member, gi, why);
}

/* The member's partitions, one a line, with their positions or not. */
static mk_err member_parts(mkfs *fs, const node_ref *ref, bool positions,
			   mk_strbuf *out, mk_strbuf *why)
{
	mk_group_info gi;
	mk_err err = member_info(fs, ref, &gi, why);
	for (size_t k = 0; !err && k < gi.nparts; k++) {
		if (!positions) {
			mk_strbuf_addf(out, "%s/%d\n", gi.parts[k].topic, gi.parts[k].partition);
			continue;
		}
		mk_strbuf_addf(out, "%s %d ", gi.parts[k].topic, gi.parts[k].partition);
		add_value(out, gi.parts[k].position);
		mk_strbuf_addch(out, '\n');
	}
	mk_group_info_free(&gi);
	return err;
}

mk_err mk_groups_read_assignment(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	return member_parts(fs, ref, false, out, why);
}

mk_err mk_groups_read_positions(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	return member_parts(fs, ref, true, out, why);
}

mk_err mk_groups_read_lag(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	mk_group_info gi;
	mk_err err = member_info(fs, ref, &gi, why);
	for (size_t k = 0; !err && k < gi.nparts; k++) {
		const mk_group_part_info *p = &gi.parts[k];
		mk_strbuf_addf(out, "%s %d ", p->topic, p->partition);
		if (p->hw >= 0 && p->position >= 0)
			mk_strbuf_addf(out, "%lld\n", (long long)(p->hw > p->position
								 ? p->hw - p->position : 0));
		else
			mk_strbuf_addstr(out, "none\n");
	}
	mk_group_info_free(&gi);
	return err;
}

mk_err mk_groups_write_seek(mkfs *fs, const node_ref *ref, char *line,
			    mk_coord_call *call, mk_strbuf *why)
{
	(void)call;
	NEED_GROUPS(fs, why);
	char copy[1024];
	snprintf(copy, sizeof(copy), "%s", line);
	char *w[2];
	const char *topic;
	int part;
	int64_t off;
	if (words(line, w, 2) != 2 || !parse_tp(w[0], &topic, &part) ||
	    !mk_parse_i64(w[1], &off) || off < 0)
		return usage(why, copy, "TOPIC/PARTITION OFFSET");
	return mk_group_seek(fs->groups, ref->group, ref->member, topic, part, off, why);
}

/*
 * The whole write: an optional line generation=N, then either nothing (or
 * one "1": the current positions) or TOPIC/PARTITION OFFSET lines. All
 * lines parse before anything is committed; the commit is one batch.
 */
mk_err mk_groups_write_commit(mkfs *fs, const node_ref *ref, const char *buf,
			      size_t len, mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	if (memchr(buf, '\0', len)) {
		mk_strbuf_addstr(why, "command contains a NUL byte");
		return MK_INVALID_REQUEST;
	}
	mk_strbuf text = MK_STRBUF_INIT;
	mk_strbuf_add(&text, buf, len);
	int64_t gen = -1;
	mk_commit_entry *e = NULL;
	size_t n = 0, alloc = 0, lines = 0;
	bool plain = false;
	mk_err err = MK_OK;
	char *save = NULL;
	for (char *l = strtok_r(text.buf, "\n", &save); l && !err;
	     l = strtok_r(NULL, "\n", &save)) {
		size_t ll = strlen(l);
		while (ll && (l[ll - 1] == '\r' || l[ll - 1] == ' ' || l[ll - 1] == '\t'))
			l[--ll] = '\0';
		if (!ll)
			continue;
		lines++;
		char copy[1024];
		snprintf(copy, sizeof(copy), "%s", l);
		char *w[2];
		int nw = words(l, w, 2);
		const char *topic;
		int part;
		int64_t v;
		if (nw == 1 && !strncmp(w[0], "generation=", 11) && gen < 0 &&
		    mk_parse_i64(w[0] + 11, &v) && v >= 0) {
			gen = v;
		} else if (nw == 1 && !strcmp(w[0], "1") && !plain && !n) {
			plain = true;
		} else if (nw == 2 && !plain && parse_tp(w[0], &topic, &part) &&
			   mk_parse_i64(w[1], &v) && v >= 0) {
			for (size_t k = 0; k < n && !err; k++)
				if (e[k].partition == part && !strcmp(e[k].topic, topic)) {
					mk_strbuf_addf(why, "%s/%d given twice", topic, part);
					err = MK_INVALID_REQUEST;
				}
			if (err)
				break;
			if (n == alloc) {
				alloc = alloc ? alloc * 2 : 8;
				e = mk_xrealloc(e, alloc * sizeof(*e));
			}
			e[n++] = (mk_commit_entry){ topic, part, v };
		} else {
			err = usage(why, copy, "nothing or 1 (the current positions), generation=N, TOPIC/PARTITION OFFSET lines");
		}
	}
	if (!err)
		err = mk_group_commit(fs->groups, ref->group, ref->member, gen, e, n, call, why);
	free(e);
	mk_strbuf_release(&text);
	return err;
}

/* ---- mkdir, rmdir, /ctl ------------------------------------------------------------- */

mk_err mk_groups_mkdir(mkfs *fs, const char *name, mk_coord_call *call,
		       mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	return mk_group_create(fs->groups, name, call, why);
}

mk_err mk_groups_rmdir(mkfs *fs, const char *name, mk_coord_call *call,
		       mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	return mk_group_delete(fs->groups, name, call, why);
}

mk_err mk_groups_expire_members(mkfs *fs, mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	return mk_groups_expire(fs->groups, NULL, call, why);
}
