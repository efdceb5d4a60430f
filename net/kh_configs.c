/*
 * kh_configs.c — DescribeConfigs (0-2) and AlterConfigs (0-1)
 * (khandlers.h): a topic's config file over the wire.
 *
 * DescribeConfigs of a topic (resource type 2): every key of
 * /topics/T/config, or those asked for, each with is_default (v0) or its
 * source (v1+: DYNAMIC_TOPIC_CONFIG for an override, DEFAULT_CONFIG
 * otherwise), none read-only or sensitive, no synonyms. A broker (type
 * 4) answers with no configs: its configuration is the mount's [sections]
 * (/config). Other types: INVALID_REQUEST.
 *
 * AlterConfigs of a topic: the given keys set as overrides, all validated
 * before any is applied (mk_cluster_topic_configure), or only validated
 * (validate_only). **Decision** (docs/filesystem.md): the keys not given
 * keep their values, as a write to /topics/T/config does, where Kafka's
 * AlterConfigs replaces the whole set (IncrementalAlterConfigs, Kafka's
 * newer API, is what this behaves like).
 */
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "config.h"
#include "khandlers.h"
#include "topic_name.h"
#include "xalloc.h"

enum { RES_TOPIC = 2, RES_BROKER = 4 };
enum { SOURCE_DYNAMIC_TOPIC = 1, SOURCE_DEFAULT = 5 };

/* Is key one of the overrides ("K=V K=V")? */
static bool overridden(const char *overrides, const char *key, size_t klen)
{
	for (const char *p = overrides; *p;) {
		const char *eq = strchr(p, '=');
		if (!eq)
			break;
		if ((size_t)(eq - p) == klen && !memcmp(p, key, klen))
			return true;
		const char *sp = strchr(eq, ' ');
		if (!sp)
			break;
		p = sp + 1;
	}
	return false;
}

static bool asked(char **keys, int32_t nkeys, const char *key, size_t klen)
{
	if (nkeys < 0)
		return true;            /* null: every key */
	for (int32_t i = 0; i < nkeys; i++)
		if (strlen(keys[i]) == klen && !memcmp(keys[i], key, klen))
			return true;
	return false;
}

/* One topic's configs, from its config file's KEY=VALUE lines. */
static void write_topic_configs(mk_kreq *q, mk_topic *t, char **keys,
				int32_t nkeys, mk_strbuf *out)
{
	int16_t v = q->hdr->api_version;
	mk_topic_config tc;
	mk_cluster_topic_config(q->h->cluster, t, &tc);
	mk_strbuf all = MK_STRBUF_INIT, over = MK_STRBUF_INIT, entries = MK_STRBUF_INIT;
	mk_topic_config_format(&tc, &all);
	mk_topic_config_format_overrides(&tc, &over);
	size_t n = 0;
	for (char *line = all.buf; line && *line;) {
		char *nl = strchr(line, '\n'), *eq = strchr(line, '=');
		if (!nl || !eq || eq > nl)
			break;
		size_t klen = (size_t)(eq - line);
		if (asked(keys, nkeys, line, klen)) {
			bool o = overridden(over.buf, line, klen);
			mk_kstr k = { line, klen }, val = { eq + 1, (size_t)(nl - eq - 1) };
			mk_kw_kstr(&entries, k, false);
			mk_kw_kstr(&entries, val, false);
			mk_kw_bool(&entries, false);         /* read_only */
			if (v == 0)
				mk_kw_bool(&entries, !o);    /* is_default */
			else
				mk_kw_int8(&entries, o ? SOURCE_DYNAMIC_TOPIC : SOURCE_DEFAULT);
			mk_kw_bool(&entries, false);         /* is_sensitive */
			if (v >= 1)
				mk_kw_array_len(&entries, 0, false);   /* synonyms */
			n++;
		}
		line = nl + 1;
	}
	mk_kw_array_len(out, n, false);
	mk_strbuf_add(out, entries.buf, entries.len);
	mk_strbuf_release(&all);
	mk_strbuf_release(&over);
	mk_strbuf_release(&entries);
}

/* A resource of either request: its type and name, checked. */
static int16_t resource(mk_kreq *q, int8_t type, const char *name, mk_topic **t)
{
	*t = NULL;
	if (type == RES_BROKER)
		return MK_KERR_NONE;
	if (type != RES_TOPIC)
		return MK_KERR_INVALID_REQUEST;
	if (!mk_topic_name_valid(name))
		return MK_KERR_INVALID_TOPIC_EXCEPTION;
	*t = mk_cluster_topic(q->h->cluster, name);
	return *t ? MK_KERR_NONE : MK_KERR_UNKNOWN_TOPIC_OR_PARTITION;
}

bool mk_kh_describe_configs(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	int16_t v = q->hdr->api_version;
	int32_t nr = mk_kr_array_len(r, false);
	mk_strbuf body = MK_STRBUF_INIT;
	mk_kw_int32(&body, 0);                    /* throttle_time_ms */
	mk_kw_array_len(&body, nr > 0 ? (size_t)nr : 0, false);
	/* Each resource answered as read: reading changes nothing. */
	for (int32_t i = 0; i < nr && i < MK_KREQ_MAX_PARTITIONS && !r->err; i++) {
		int8_t type = mk_kr_int8(r);
		char *name = mk_kr_name(r);
		int32_t nk = mk_kr_nullable_array_len(r, false);
		char **keys = mk_xcalloc(nk > 0 ? (size_t)nk : 1, sizeof(*keys));
		int32_t got = 0;
		for (; got < nk && !r->err; got++)
			keys[got] = mk_kr_name(r);
		if (!r->err) {
			mk_topic *t;
			int16_t err = resource(q, type, name, &t);
			if (err)
				mk_kreq_error(q, err, "resource %d %s", type, name);
			mk_kw_int16(&body, err);
			mk_kw_nullable_string(&body, NULL, false);
			mk_kw_int8(&body, type);
			mk_kw_string(&body, name, false);
			if (t)
				write_topic_configs(q, t, keys, nk, &body);
			else
				mk_kw_array_len(&body, 0, false);
			mk_topic_put(t);
		}
		for (int32_t k = 0; k < got; k++)
			free(keys[k]);
		free(keys);
		free(name);
	}
	if (nr > MK_KREQ_MAX_PARTITIONS)
		mk_kr_fail(r);
	if (v >= 1)
		(void)mk_kr_bool(r);              /* include_synonyms */
	bool ok = !r->err;
	if (ok)
		mk_strbuf_add(q->out, body.buf, body.len);
	mk_strbuf_release(&body);
	return ok;
}

/* One topic's AlterConfigs: validated on a copy, then applied unless
 * validate_only. */
static int16_t alter_topic(mk_kreq *q, mk_topic *t, char **kv, size_t n,
			   bool validate_only, mk_strbuf *msg)
{
	mk_topic_config tc;
	mk_cluster_topic_config(q->h->cluster, t, &tc);
	for (size_t i = 0; i < n; i++) {
		char *eq = strchr(kv[i], '=');
		*eq = '\0';
		mk_err err = mk_topic_config_set(&tc, kv[i], eq + 1, msg);
		*eq = '=';
		if (err)
			return mk_kerr_from(err);
	}
	if (validate_only)
		return MK_KERR_NONE;
	mk_err err = mk_cluster_topic_configure(q->h->cluster, t,
						(const char *const *)kv, n, msg);
	return err ? mk_kerr_from(err) : MK_KERR_NONE;
}

bool mk_kh_alter_configs(mk_kreq *q)
{
	mk_kreader *r = &q->body;
	int32_t nr = mk_kr_array_len(r, false);
	typedef struct {
		int8_t type;
		char *name;
		char **kv;
		size_t nkv;
	} res;
	res *v = mk_xcalloc(nr > 0 ? (size_t)nr : 1, sizeof(*v));
	int32_t n = 0;
	/* Read whole first (validate_only comes last), then act. */
	for (; n < nr && n < MK_KREQ_MAX_PARTITIONS && !r->err; n++) {
		v[n].type = mk_kr_int8(r);
		v[n].name = mk_kr_name(r);
		v[n].kv = mk_kr_config_pairs(r, &v[n].nkv);
	}
	if (n < nr)
		mk_kr_fail(r);
	bool validate_only = mk_kr_bool(r);
	bool ok = !r->err;
	mk_strbuf msg = MK_STRBUF_INIT;
	if (ok) {
		mk_kw_int32(q->out, 0);           /* throttle_time_ms */
		mk_kw_array_len(q->out, (size_t)n, false);
	}
	for (int32_t i = 0; i < n; i++) {
		if (ok) {
			mk_topic *t;
			mk_strbuf_reset(&msg);
			int16_t err = resource(q, v[i].type, v[i].name, &t);
			if (!err && v[i].type == RES_BROKER) {
				err = MK_KERR_INVALID_REQUEST;
				mk_strbuf_addstr(&msg, "a broker's configuration is the mount's [sections]");
			}
			if (!err)
				err = alter_topic(q, t, v[i].kv, v[i].nkv, validate_only, &msg);
			mk_topic_put(t);
			if (err)
				mk_kreq_error(q, err, "%s: %s", v[i].name, msg.len ? msg.buf : "refused");
			mk_kw_int16(q->out, err);
			mk_kw_nullable_string(q->out, err && msg.len ? msg.buf : NULL, false);
			mk_kw_int8(q->out, v[i].type);
			mk_kw_string(q->out, v[i].name, false);
		}
		for (size_t k = 0; k < v[i].nkv; k++)
			free(v[i].kv[k]);
		free(v[i].kv);
		free(v[i].name);
	}
	free(v);
	mk_strbuf_release(&msg);
	return ok;
}
