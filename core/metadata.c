#include "metadata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "topic_name.h"

static void add_ids(mk_strbuf *out, const int *ids, int n)
{
	for (int i = 0; i < n; i++)
		mk_strbuf_addf(out, "%s%d", i ? "," : "", ids[i]);
}

mk_err mk_metadata_save(mk_cluster *c)
{
	mk_strbuf out = MK_STRBUF_INIT, path = MK_STRBUF_INIT;
	uint64_t version = atomic_load(&c->meta_dirty);
	mk_strbuf_addstr(&out, "minikafka-metadata 1\n");
	pthread_rwlock_rdlock(&c->lock);
	for (int b = 0; b < c->nbrokers; b++)
		mk_strbuf_addf(&out, "broker %d %s\n", c->brokers[b].id,
			       c->brokers[b].online ? "online" : "offline");
	for (size_t i = 0; i < c->ntopics; i++) {
		mk_topic *t = c->topics[i];
		mk_strbuf_addf(&out, "topic %s %d %d", t->name, t->npartitions,
			       t->replication_factor);
		if (t->cfg.overrides) {
			mk_strbuf_addch(&out, ' ');
			mk_topic_config_format_overrides(&t->cfg, &out);
		}
		mk_strbuf_addch(&out, '\n');
		for (int p = 0; p < t->npartitions; p++) {
			mk_partition_state st;
			mk_partition_state_get(t->partitions[p], &st);
			mk_strbuf_addf(&out, "partition %s %d leader=", t->name, p);
			if (st.leader < 0)
				mk_strbuf_addstr(&out, "none");
			else
				mk_strbuf_addf(&out, "%d", st.leader);
			mk_strbuf_addf(&out, " epoch=%d replicas=", st.leader_epoch);
			add_ids(&out, st.brokers, st.nreplicas);
			mk_strbuf_addstr(&out, " isr=");
			add_ids(&out, st.isr, st.nisr);
			mk_strbuf_addch(&out, '\n');
		}
	}
	if (c->clock.manual)
		mk_strbuf_addf(&out, "clock %lld\n", (long long)mk_clock_now(&c->clock));
	mk_strbuf_addf(&out, "next_producer_id %lld\n", (long long)c->next_producer_id);
	for (size_t i = 0; i < c->nproducers; i++)
		mk_strbuf_addf(&out, "producer %s %lld %d\n", c->producers[i].name,
			       (long long)c->producers[i].id, c->producers[i].epoch);
	pthread_rwlock_unlock(&c->lock);
	mk_strbuf_addf(&path, "%s/metadata", c->data_dir);
	mk_err err = mk_file_replace(path.buf, out.buf, out.len);
	if (!err)
		c->meta_saved = version;
	else
		mk_errlog_add(&c->errlog, mk_wall_ms(), NULL, err,
			      "cannot write %s", path.buf);
	mk_strbuf_release(&out);
	mk_strbuf_release(&path);
	return err;
}

static bool parse_ids(const char *s, int *ids, int *n)
{
	*n = 0;
	if (!*s)
		return true;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 0 || *n == MK_MAX_BROKERS)
			return false;
		ids[(*n)++] = (int)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return false;
	}
	return true;
}

static mk_metadata_topic *find_topic(mk_metadata *md, const char *name)
{
	for (size_t i = 0; i < md->ntopics; i++)
		if (!strcmp(md->topics[i].name, name))
			return &md->topics[i];
	return NULL;
}

static mk_err parse_line(mk_metadata *md, char *line, mk_strbuf *why)
{
	char *save = NULL;
	char *kind = strtok_r(line, " ", &save);
	if (!kind)
		return MK_OK;
	if (!strcmp(kind, "minikafka-metadata")) {
		char *v = strtok_r(NULL, " ", &save);
		if (!v || strcmp(v, "1"))
			goto bad;
		return MK_OK;
	}
	if (!strcmp(kind, "broker")) {
		char *id = strtok_r(NULL, " ", &save), *st = strtok_r(NULL, " ", &save);
		if (!id || !st || md->nbrokers == MK_MAX_BROKERS)
			goto bad;
		md->broker_ids[md->nbrokers] = atoi(id);
		md->broker_online[md->nbrokers++] = !strcmp(st, "online");
		return MK_OK;
	}
	if (!strcmp(kind, "clock")) {
		char *v = strtok_r(NULL, " ", &save);
		if (!v || atoll(v) < 0)
			goto bad;
		md->clock_ms = atoll(v);
		return MK_OK;
	}
	if (!strcmp(kind, "next_producer_id")) {
		char *v = strtok_r(NULL, " ", &save);
		if (!v || atoll(v) < 0)
			goto bad;
		md->next_producer_id = atoll(v);
		return MK_OK;
	}
	if (!strcmp(kind, "producer")) {
		char *name = strtok_r(NULL, " ", &save);
		char *id = strtok_r(NULL, " ", &save), *ep = strtok_r(NULL, " ", &save);
		if (!name || !id || !ep || !mk_topic_name_valid(name) || atoll(id) < 0 ||
		    atoi(ep) < 0 || atoi(ep) > INT16_MAX)
			goto bad;
		mk_producer_id *v = realloc(md->producers, (md->nproducers + 1) * sizeof(*v));
		if (!v)
			return MK_OUT_OF_MEMORY;
		md->producers = v;
		v[md->nproducers].name = strdup(name);
		v[md->nproducers].id = atoll(id);
		v[md->nproducers].epoch = (int16_t)atoi(ep);
		md->nproducers++;
		return MK_OK;
	}
	if (!strcmp(kind, "topic")) {
		char *name = strtok_r(NULL, " ", &save);
		char *np = strtok_r(NULL, " ", &save), *rf = strtok_r(NULL, " ", &save);
		if (!name || !np || !rf || !mk_topic_name_valid(name) ||
		    find_topic(md, name))
			goto bad;
		int n = atoi(np);
		if (n < 1 || n > 1024 || atoi(rf) < 1)
			goto bad;
		mk_metadata_topic *nt = realloc(md->topics, (md->ntopics + 1) * sizeof(*nt));
		if (!nt)
			return MK_OUT_OF_MEMORY;
		md->topics = nt;
		mk_metadata_topic *t = &md->topics[md->ntopics++];
		memset(t, 0, sizeof(*t));
		t->name = strdup(name);
		t->npartitions = n;
		t->rf = atoi(rf);
		t->parts = calloc((size_t)n, sizeof(*t->parts));
		for (int p = 0; p < n; p++)
			t->parts[p].leader = -2;   /* not yet read */
		for (char *kv = strtok_r(NULL, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
			t->overrides = realloc(t->overrides, (t->noverrides + 1) * sizeof(char *));
			t->overrides[t->noverrides++] = strdup(kv);
		}
		return MK_OK;
	}
	if (!strcmp(kind, "partition")) {
		char *name = strtok_r(NULL, " ", &save);
		char *pid = strtok_r(NULL, " ", &save);
		mk_metadata_topic *t = name ? find_topic(md, name) : NULL;
		if (!t || !pid)
			goto bad;
		int p = atoi(pid);
		if (p < 0 || p >= t->npartitions)
			goto bad;
		mk_partition_state *st = &t->parts[p];
		for (char *kv = strtok_r(NULL, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
			if (!strncmp(kv, "leader=", 7))
				st->leader = !strcmp(kv + 7, "none") ? -1 : atoi(kv + 7);
			else if (!strncmp(kv, "epoch=", 6))
				st->leader_epoch = atoi(kv + 6);
			else if (!strncmp(kv, "replicas=", 9)) {
				if (!parse_ids(kv + 9, st->brokers, &st->nreplicas))
					goto bad;
			} else if (!strncmp(kv, "isr=", 4)) {
				if (!parse_ids(kv + 4, st->isr, &st->nisr))
					goto bad;
			} else
				goto bad;
		}
		if (st->nreplicas < 1 || st->leader == -2)
			goto bad;
		return MK_OK;
	}
bad:
	if (why)
		mk_strbuf_addf(why, "malformed metadata line starting '%s'", kind);
	return MK_INVALID_CONFIG;
}

mk_err mk_metadata_load(const char *data_dir, mk_metadata *md, mk_strbuf *why)
{
	memset(md, 0, sizeof(*md));
	mk_strbuf path = MK_STRBUF_INIT, text = MK_STRBUF_INIT;
	mk_strbuf_addf(&path, "%s/metadata", data_dir);
	bool missing;
	mk_err err = mk_file_read(path.buf, &text, &missing);
	if (err) {
		if (why)
			mk_strbuf_addf(why, "cannot read %s", path.buf);
		goto out;
	}
	md->present = !missing;
	char *save = NULL;
	for (char *line = strtok_r(text.buf, "\n", &save); line && !err;
	     line = strtok_r(NULL, "\n", &save))
		err = parse_line(md, line, why);
	for (size_t i = 0; i < md->ntopics && !err; i++)
		for (int p = 0; p < md->topics[i].npartitions; p++)
			if (md->topics[i].parts[p].leader == -2) {
				if (why)
					mk_strbuf_addf(why, "metadata lacks partition %s-%d",
						       md->topics[i].name, p);
				err = MK_INVALID_CONFIG;
				break;
			}
	if (err && why)
		mk_strbuf_addf(why, " in %s", path.buf);
out:
	if (err)
		mk_metadata_free(md);    /* the caller gets nothing to free */
	mk_strbuf_release(&path);
	mk_strbuf_release(&text);
	return err;
}

void mk_metadata_free(mk_metadata *md)
{
	for (size_t i = 0; i < md->ntopics; i++) {
		mk_metadata_topic *t = &md->topics[i];
		free(t->name);
		for (size_t j = 0; j < t->noverrides; j++)
			free(t->overrides[j]);
		free(t->overrides);
		free(t->parts);
	}
	free(md->topics);
	for (size_t i = 0; i < md->nproducers; i++)
		free(md->producers[i].name);
	free(md->producers);
	memset(md, 0, sizeof(*md));
}
