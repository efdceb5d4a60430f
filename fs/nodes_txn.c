/*
 * nodes_txn.c — /transactions/ID/... as text (nodes_txn.h).
 */
#include "nodes_txn.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "topic_name.h"
#include "txn.h"

#define NEED_TXNS(fs, why)                                                   \
	NEED_COORDINATOR((fs)->txns, "transaction", MK_TRANSACTIONAL_ID_NOT_FOUND, \
			 false, NULL, why)
#define NEED_CALL(fs, call, why)                                             \
	NEED_COORDINATOR((fs)->txns, "transaction", MK_TRANSACTIONAL_ID_NOT_FOUND, \
			 true, call, why)

/* An empty line or "1" (docs/filesystem.md 2). */
static mk_err no_argument(const char *line, const char *file, mk_strbuf *why)
{
	if (!*line || !strcmp(line, "1"))
		return MK_OK;
	mk_strbuf_addf(why, "bad command '%s'; %s takes nothing or 1", line, file);
	return MK_INVALID_REQUEST;
}

bool mk_txn_node_match(mkfs *fs, node_ref *ref, const char *name)
{
	(void)ref;
	return fs->txns && mk_topic_name_valid(name) && mk_txn_exists(fs->txns, name);
}

void mk_txn_node_list(mkfs *fs, const node_ref *ref,
		      void (*add)(void *, const char *, bool), void *arg)
{
	(void)ref;
	if (!fs->txns)
		return;
	char **names;
	size_t n = mk_txn_names(fs->txns, &names);
	for (size_t i = 0; i < n; i++) {
		add(arg, names[i], true);
		free(names[i]);
	}
	free(names);
}

/* The id is the directory's name: the parent of every file below. */
static mk_err describe(mkfs *fs, const node_ref *ref, mk_txn_info *ti,
		       mk_strbuf *why)
{
	NEED_TXNS(fs, why);
	return mk_txn_describe(fs->txns, ref->parent_name, ti, why);
}

mk_err mk_txn_node_read_state(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	mk_txn_info ti;
	mk_err err = describe(fs, ref, &ti, why);
	if (err)
		return err;
	mk_strbuf_addf(out, "%s\n", mk_txn_state_name(ti.state));
	mk_txn_info_free(&ti);
	return MK_OK;
}

mk_err mk_txn_node_read_partitions(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	mk_txn_info ti;
	mk_err err = describe(fs, ref, &ti, why);
	if (err)
		return err;
	for (size_t i = 0; i < ti.nparts; i++)
		mk_strbuf_addf(out, "%s/%d\n", ti.parts[i].topic, ti.parts[i].partition);
	mk_txn_info_free(&ti);
	return MK_OK;
}

mk_err mk_txn_node_read_pid(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	mk_txn_info ti;
	mk_err err = describe(fs, ref, &ti, why);
	if (err)
		return err;
	mk_strbuf_addf(out, "%lld\n", (long long)ti.pid);
	mk_txn_info_free(&ti);
	return MK_OK;
}

mk_err mk_txn_node_read_epoch(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	mk_txn_info ti;
	mk_err err = describe(fs, ref, &ti, why);
	if (err)
		return err;
	mk_strbuf_addf(out, "%d\n", ti.epoch);
	mk_txn_info_free(&ti);
	return MK_OK;
}

mk_err mk_txn_node_read_offsets(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why)
{
	mk_txn_info ti;
	mk_err err = describe(fs, ref, &ti, why);
	if (err)
		return err;
	for (size_t i = 0; i < ti.noffsets; i++)
		mk_strbuf_addf(out, "%s %s/%d %lld\n", ti.offsets[i].group,
			       ti.offsets[i].topic, ti.offsets[i].partition,
			       (long long)ti.offsets[i].offset);
	mk_txn_info_free(&ti);
	return MK_OK;
}

/* "TOPIC/PARTITION" in place: *topic points into s. */
static bool parse_tp(char *s, const char **topic, int *part)
{
	char *slash = strrchr(s, '/');
	int64_t v;
	if (!slash || slash == s || slash[1] < '0' || slash[1] > '9' ||
	    !mk_parse_range(slash + 1, 0, INT32_MAX, &v))
		return false;
	*slash = '\0';
	*topic = s;
	*part = (int)v;
	return true;
}

mk_err mk_txn_node_write_offsets(mkfs *fs, const node_ref *ref, const char *buf,
				 size_t len, mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	if (memchr(buf, '\0', len)) {
		mk_strbuf_addstr(why, "command contains a NUL byte");
		return MK_INVALID_REQUEST;
	}
	mk_strbuf text = MK_STRBUF_INIT;
	mk_strbuf_add(&text, buf, len);
	mk_txn_offset *o = NULL;
	size_t n = 0, alloc = 0;
	mk_err err = MK_OK;
	char *save = NULL;
	for (char *l = strtok_r(text.buf, "\n", &save); l && !err;
	     l = strtok_r(NULL, "\n", &save)) {
		size_t ll = strlen(l);
		while (ll && (l[ll - 1] == '\r' || l[ll - 1] == ' ' || l[ll - 1] == '\t'))
			l[--ll] = '\0';
		if (!ll)
			continue;
		char copy[1024];
		snprintf(copy, sizeof(copy), "%s", l);
		char *w[4], *s2 = NULL;
		int nw = 0;
		for (char *t = strtok_r(l, " \t", &s2); t && nw < 4; t = strtok_r(NULL, " \t", &s2))
			w[nw++] = t;
		const char *topic;
		int part;
		int64_t off;
		if (nw != 3 || !mk_topic_name_valid(w[0]) || !parse_tp(w[1], &topic, &part) ||
		    !mk_topic_name_valid(topic) || !mk_parse_range(w[2], 0, INT64_MAX, &off)) {
			mk_strbuf_addf(why, "bad line '%s'; expected GROUP TOPIC/PARTITION OFFSET lines", copy);
			err = MK_INVALID_REQUEST;
			break;
		}
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 8;
			o = mk_xrealloc(o, alloc * sizeof(*o));
		}
		o[n++] = (mk_txn_offset){ w[0], topic, part, off };
	}
	if (!err && !n) {
		mk_strbuf_addstr(why, "nothing to stage; expected GROUP TOPIC/PARTITION OFFSET lines");
		err = MK_INVALID_REQUEST;
	}
	if (!err)
		err = mk_txn_stage_offsets(fs->txns, ref->parent_name, o, n, call, why);
	free(o);
	mk_strbuf_release(&text);
	return err;
}

mk_err mk_txn_node_write_init(mkfs *fs, const node_ref *ref, char *line,
			      mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	mk_err err = no_argument(line, "init", why);
	return err ? err : mk_txn_init(fs->txns, ref->parent_name, call, why);
}

mk_err mk_txn_node_write_commit(mkfs *fs, const node_ref *ref, char *line,
				mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	mk_err err = no_argument(line, "commit", why);
	return err ? err : mk_txn_end(fs->txns, ref->parent_name, true, call, why);
}

mk_err mk_txn_node_write_abort(mkfs *fs, const node_ref *ref, char *line,
			       mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	mk_err err = no_argument(line, "abort", why);
	return err ? err : mk_txn_end(fs->txns, ref->parent_name, false, call, why);
}

mk_err mk_txn_node_mkdir(mkfs *fs, const char *name, mk_coord_call *call,
			 mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	return mk_txn_create(fs->txns, name, call, why);
}

mk_err mk_txn_node_rmdir(mkfs *fs, const char *name, mk_coord_call *call,
			 mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	return mk_txn_delete(fs->txns, name, call, why);
}

mk_err mk_txn_node_expire(mkfs *fs, mk_coord_call *call, mk_strbuf *why)
{
	NEED_CALL(fs, call, why);
	return mk_txns_expire(fs->txns, NULL, call, why);
}
