/*
 * config.c — table-driven configuration. Every key is one row of `keys`:
 * where it lives, its type and bounds. Topic-level keys are the rows with
 * `topic` set; their order gives the bits of mk_topic_config.overrides.
 */
#include "config.h"
#include "fileio.h"
#include "parse.h"
#include "xalloc.h"

#include <errno.h>
#include <iniparser.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { T_INT, T_BOOL, T_ENUM, T_BROKERS, T_LISTENERS } key_type;

typedef struct {
	const char *section;
	const char *name;
	key_type type;
	size_t off;            /* offset in mk_config */
	int64_t min, max;
	const char *const *enums;   /* T_ENUM: names, index = value (or bits) */
	bool topic;            /* also a topic-level key */
} key_def;

static const char *const clock_names[] = { "system", "manual", NULL };
static const char *const mode_names[] = { "manual", "auto", NULL };
static const char *const trunc_names[] = { "epoch", "hw", NULL };
static const char *const acks_names[] = { "all", "0", "1", NULL };
static const char *const reset_names[] = { "earliest", "latest", "none", NULL };
/* In the order of mk_partitioner (partitioner.h). */
static const char *const partitioner_names[] = { "murmur2", "crc32", NULL };
/* cleanup.policy: delete, compact, or both ("compact,delete"). */
static const char *const cleanup_names[] = { "", "delete", "compact",
					     "compact,delete", NULL };
/* compression.type: Kafka's codec ids 0-4 (uncompressed is "none" in a
 * batch), then producer: keep the batch's codec. */
static const char *const compression_names[] = { "uncompressed", "gzip",
	"snappy", "lz4", "zstd", "producer", NULL };
static const char *const timestamp_names[] = { "CreateTime", "LogAppendTime",
					       NULL };

#define C(field) offsetof(mk_config, field)
#define L(field) (offsetof(mk_config, log) + offsetof(mk_topic_config, field))
#define BIG INT64_MAX

static const key_def keys[] = {
	{ "cluster", "brokers", T_BROKERS, 0, 0, 0, NULL, false },
	{ "cluster", "num.partitions", T_INT, C(num_partitions), 1, 1024, NULL, false },
	{ "cluster", "default.replication.factor", T_INT, C(default_replication_factor), 1, MK_MAX_BROKERS, NULL, false },
	{ "cluster", "min.insync.replicas", T_INT, L(min_insync_replicas), 1, MK_MAX_BROKERS, NULL, true },
	{ "cluster", "unclean.leader.election.enable", T_BOOL, L(unclean_leader_election), 0, 1, NULL, true },
	{ "cluster", "clock", T_ENUM, C(manual_clock), 0, 1, clock_names, false },
	{ "replication", "mode", T_ENUM, C(auto_replication), 0, 1, mode_names, false },
	{ "replication", "fetch.interval.ms", T_INT, C(fetch_interval_ms), 1, 3600000, NULL, false },
	{ "replication", "replica.lag.time.max.ms", T_INT, C(replica_lag_time_max_ms), 1, BIG, NULL, false },
	{ "replication", "replica.lag.max.messages", T_INT, C(replica_lag_max_messages), 1, BIG, NULL, false },
	{ "replication", "replica.fetch.max.bytes", T_INT, C(replica_fetch_max_bytes), 1, 1 << 30, NULL, false },
	{ "replication", "replica.fetch.wait.max.ms", T_INT, C(replica_fetch_wait_max_ms), 0, 3600000, NULL, false },
	{ "replication", "replica.fetch.min.bytes", T_INT, C(replica_fetch_min_bytes), 1, 1 << 30, NULL, false },
	{ "replication", "truncation", T_ENUM, C(truncation), 0, 1, trunc_names, false },
	{ "log", "segment.bytes", T_INT, L(segment_bytes), 64, 1LL << 40, NULL, true },
	{ "log", "index.interval.bytes", T_INT, L(index_interval_bytes), 1, 1 << 30, NULL, true },
	{ "log", "cleanup.policy", T_ENUM, L(cleanup_policy), 1, 3, cleanup_names, true },
	{ "log", "retention.ms", T_INT, L(retention_ms), -1, BIG, NULL, true },
	{ "log", "retention.bytes", T_INT, L(retention_bytes), -1, BIG, NULL, true },
	{ "log", "delete.retention.ms", T_INT, L(delete_retention_ms), 0, BIG, NULL, true },
	{ "log", "message.max.bytes", T_INT, L(message_max_bytes), 64, 64 << 20, NULL, true },
	{ "log", "flush.messages", T_INT, L(flush_messages), 0, BIG, NULL, true },
	{ "log", "compression.type", T_ENUM, L(compression_type), 0, 5, compression_names, true },
	{ "log", "message.timestamp.type", T_ENUM, L(log_append_time), 0, 1, timestamp_names, true },
	{ "log", "log.retention.check.interval.ms", T_INT, C(retention_check_interval_ms), 1, BIG, NULL, false },
	{ "producer", "acks", T_ENUM, C(acks), -1, 1, acks_names, false },
	{ "producer", "batch.size", T_INT, C(batch_size), 1, 64 << 20, NULL, false },
	{ "producer", "linger.ms", T_INT, C(linger_ms), 0, 3600000, NULL, false },
	{ "producer", "partitioner", T_ENUM, C(partitioner), 0, 1, partitioner_names, false },
	{ "producer", "request.timeout.ms", T_INT, C(request_timeout_ms), 1, BIG, NULL, false },
	{ "producer", "transaction.timeout.ms", T_INT, C(transaction_timeout_ms), 1, BIG, NULL, false },
	{ "group", "session.timeout.ms", T_INT, C(session_timeout_ms), 1, BIG, NULL, false },
	{ "group", "auto.offset.reset", T_ENUM, C(auto_offset_reset), 0, 2, reset_names, false },
	{ "group", "max.poll.records", T_INT, C(max_poll_records), 1, 1 << 30, NULL, false },
	{ "group", "offsets.topic.num.partitions", T_INT, C(offsets_topic_num_partitions), 1, 1024, NULL, false },
	{ "group", "offsets.topic.replication.factor", T_INT, C(offsets_topic_replication_factor), 1, MK_MAX_BROKERS, NULL, false },
	{ "network", "listeners", T_LISTENERS, 0, 0, 0, NULL, false },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

void mk_config_defaults(mk_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->broker_ids[0] = 1;
	cfg->nbrokers = 1;
	cfg->num_partitions = 1;
	cfg->default_replication_factor = 1;
	cfg->manual_clock = 0;
	cfg->auto_replication = 0;
	cfg->fetch_interval_ms = 100;
	cfg->replica_lag_time_max_ms = 10000;
	cfg->replica_lag_max_messages = 10000;
	cfg->replica_fetch_max_bytes = 1048576;
	cfg->replica_fetch_wait_max_ms = 500;
	cfg->replica_fetch_min_bytes = 1;
	cfg->truncation = MK_TRUNCATE_EPOCH;
	cfg->log.segment_bytes = 1048576;
	cfg->log.index_interval_bytes = 4096;
	cfg->log.cleanup_policy = MK_CLEANUP_DELETE;
	cfg->log.retention_ms = -1;
	cfg->log.retention_bytes = -1;
	cfg->log.delete_retention_ms = 86400000;
	cfg->log.message_max_bytes = 1048588;
	cfg->log.flush_messages = 0;
	cfg->log.compression_type = MK_COMPRESSION_PRODUCER;
	cfg->log.log_append_time = 0;
	cfg->retention_check_interval_ms = 300000;
	strcpy(cfg->listen_host, "127.0.0.1");
	cfg->listen_port = 9092;
	cfg->listen_off = false;
	cfg->log.min_insync_replicas = 1;
	cfg->log.unclean_leader_election = 0;
	cfg->acks = -1;
	cfg->batch_size = 16384;
	cfg->linger_ms = 0;
	cfg->request_timeout_ms = 30000;
	cfg->transaction_timeout_ms = 60000;
	cfg->session_timeout_ms = 10000;
	cfg->auto_offset_reset = MK_RESET_EARLIEST;
	cfg->max_poll_records = 500;
	cfg->offsets_topic_num_partitions = 1;
	cfg->offsets_topic_replication_factor = 1;
}

static int64_t *field(void *base, const key_def *k, bool topic)
{
	size_t off = k->off;
	if (topic)
		off -= offsetof(mk_config, log);
	return (int64_t *)((char *)base + off);
}

static const char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}


static mk_err parse_brokers(mk_config *cfg, const char *s, mk_strbuf *why)
{
	int ids[MK_MAX_BROKERS];
	int n = 0;
	char buf[256];
	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int64_t v;
		if (!mk_parse_i64(trim(tok), &v) || v < 0 || v > 1000000 ||
		    n == MK_MAX_BROKERS)
			goto bad;
		for (int i = 0; i < n; i++)
			if (ids[i] == v)
				goto bad;
		ids[n++] = (int)v;
	}
	if (n == 0)
		goto bad;
	memcpy(cfg->broker_ids, ids, sizeof(ids[0]) * (size_t)n);
	cfg->nbrokers = n;
	return MK_OK;
bad:
	return mk_error(why, MK_INVALID_CONFIG, "brokers: expected 1 to %d distinct ids >= 0, comma separated, got '%s'",
			MK_MAX_BROKERS, s);
}

/*
 * listeners: "off", or broker 1's HOST:PORT (PLAINTEXT://HOST:PORT too, as
 * Kafka writes it; any other security protocol is refused: there is
 * only PLAINTEXT).
 */
static mk_err parse_listeners(mk_config *cfg, const char *s, mk_strbuf *why)
{
	char buf[256];
	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	char *v = buf + (trim(buf) - buf);     /* trim's, writable */
	if (!strcmp(v, "off")) {
		cfg->listen_off = true;
		return MK_OK;
	}
	char *scheme = strstr(v, "://");
	if (scheme) {
		*scheme = '\0';
		if (strcasecmp(v, "PLAINTEXT"))
			return mk_error(why, MK_INVALID_CONFIG, "listeners: only PLAINTEXT listeners are supported (no TLS or SASL), got '%s'",
					s);
		v = scheme + 3;
	}
	char *colon = strrchr(v, ':');
	int64_t port;
	if (!colon || colon == v || (size_t)(colon - v) >= sizeof(cfg->listen_host) ||
	    !mk_parse_i64(colon + 1, &port) || port < 0 || port > 65535)
		goto bad;
	*colon = '\0';
	for (const char *c = v; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'))
			goto bad;
	strcpy(cfg->listen_host, v);
	cfg->listen_port = port;
	cfg->listen_off = false;
	return MK_OK;
bad:
	return mk_error(why, MK_INVALID_CONFIG, "listeners: expected HOST:PORT (broker 1's address; broker B listens on PORT - 1 + B; port 0: free ports) or off, got '%s'",
			s);
}

/* Parse value for key k into *dst; the message names the key. */
static mk_err parse_value(const key_def *k, const char *raw, int64_t *dst,
			  mk_strbuf *why)
{
	char buf[256];
	if (strlen(raw) >= sizeof(buf))
		goto bad;
	strcpy(buf, raw);
	const char *s = trim(buf);
	int64_t v;
	switch (k->type) {
	case T_INT:
		if (!mk_parse_i64(s, &v) || v < k->min || v > k->max)
			goto bad;
		break;
	case T_BOOL:
		if (!strcmp(s, "true") || !strcmp(s, "1"))
			v = 1;
		else if (!strcmp(s, "false") || !strcmp(s, "0"))
			v = 0;
		else
			goto bad;
		break;
	case T_ENUM:
		if (k->enums == acks_names && !strcmp(s, "-1"))
			s = "all";
		if (k->enums == cleanup_names && !strcmp(s, "delete,compact"))
			s = "compact,delete";
		for (v = 0; k->enums[v]; v++)
			if (*k->enums[v] && !strcmp(k->enums[v], s))
				break;
		if (!k->enums[v])
			goto bad;
		if (k->enums == acks_names)
			v = v == 0 ? -1 : v - 1;
		break;
	default:
		goto bad;
	}
	*dst = v;
	return MK_OK;
bad:
	if (why) {
		mk_strbuf_addf(why, "%s: bad value '%s'", k->name, raw);
		if (k->type == T_INT)
			mk_strbuf_addf(why, " (an integer from %lld to %lld)",
				       (long long)k->min, (long long)k->max);
		else if (k->type == T_BOOL)
			mk_strbuf_addstr(why, " (true or false)");
		else if (k->enums) {
			mk_strbuf_addstr(why, " (one of");
			for (int i = 0; k->enums[i]; i++)
				if (*k->enums[i])
					mk_strbuf_addf(why, " %s", k->enums[i]);
			mk_strbuf_addch(why, ')');
		}
	}
	return MK_INVALID_CONFIG;
}

static const key_def *find_key(const char *name)
{
	const char *colon = strchr(name, ':');
	for (size_t i = 0; i < NKEYS; i++) {
		if (colon) {
			size_t sl = (size_t)(colon - name);
			if (strlen(keys[i].section) == sl &&
			    !strncmp(keys[i].section, name, sl) &&
			    !strcmp(keys[i].name, colon + 1))
				return &keys[i];
		} else if (!strcmp(keys[i].name, name)) {
			return &keys[i];
		}
	}
	return NULL;
}

mk_err mk_config_set(mk_config *cfg, const char *key, const char *value,
		     mk_strbuf *why)
{
	const key_def *k = find_key(key);
	if (!k)
		return mk_error(why, MK_INVALID_CONFIG, "unknown configuration key '%s'", key);
	if (k->type == T_BROKERS)
		return parse_brokers(cfg, value, why);
	if (k->type == T_LISTENERS)
		return parse_listeners(cfg, value, why);
	return parse_value(k, value, field(cfg, k, false), why);
}

void mk_config_explain_brokers(const mk_config *cfg, const char *what,
			       int64_t needed, mk_strbuf *why)
{
	if (!why)
		return;
	mk_strbuf_addf(why, "%s %lld needs %lld brokers; this cluster has %d",
		       what, (long long)needed, (long long)needed, cfg->nbrokers);
	/* "brokers = 3" read as a count is the usual slip. */
	mk_strbuf ids = MK_STRBUF_INIT;
	for (int64_t b = 1; b <= needed && b <= 16; b++)
		mk_strbuf_addf(&ids, "%s%lld", b > 1 ? "," : "", (long long)b);
	if (needed > 16)
		mk_strbuf_addstr(&ids, ",...");
	if (cfg->nbrokers == 1 && cfg->broker_ids[0] > 1)
		mk_strbuf_addf(why, " (brokers = %d in [cluster] is a list of broker ids: write brokers = %s)",
			       cfg->broker_ids[0], ids.buf);
	else
		mk_strbuf_addf(why, " (list %lld broker ids in [cluster]: brokers = %s)",
			       (long long)needed, ids.buf);
	mk_strbuf_release(&ids);
}

static mk_err check_consistent(const mk_config *cfg, mk_strbuf *why)
{
	if (cfg->default_replication_factor > cfg->nbrokers) {
		mk_config_explain_brokers(cfg, "default.replication.factor",
					  cfg->default_replication_factor, why);
		return MK_INVALID_CONFIG;
	}
	if (cfg->log.min_insync_replicas > cfg->nbrokers) {
		mk_config_explain_brokers(cfg, "min.insync.replicas",
					  cfg->log.min_insync_replicas, why);
		return MK_INVALID_CONFIG;
	}
	return MK_OK;
}

/* iniparser reports syntax errors on stderr by itself; ini_scan has
 * reported them first, as one line. */
static int quiet(const char *fmt, ...)
{
	(void)fmt;
	return 0;
}

/*
 * The file's lines, for messages that name one: with want NULL, the first
 * line that is not blank, a comment (; or #), a [section] or KEY = VALUE
 * (0 when all are); with want "section:key", the line setting it (0 when
 * none does). Sections and keys compare as iniparser does (lower case).
 */
static int ini_scan(const char *text, const char *want)
{
	char sec[128] = "";
	int lineno = 0;
	for (const char *l = text, *next; *l; l = next) {
		lineno++;
		next = strchr(l, '\n');
		size_t n = next ? (size_t)(next - l) : strlen(l);
		next = next ? next + 1 : l + n;
		while (n && (*l == ' ' || *l == '\t'))
			l++, n--;
		while (n && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r'))
			n--;
		if (!n || *l == ';' || *l == '#')
			continue;
		if (*l == '[') {
			if (l[n - 1] != ']' || n - 2 >= sizeof sec)
				return want ? 0 : lineno;
			for (size_t i = 0; i < n - 2; i++)
				sec[i] = (char)(l[i + 1] >= 'A' && l[i + 1] <= 'Z'
						? l[i + 1] + 32 : l[i + 1]);
			sec[n - 2] = '\0';
			continue;
		}
		const char *eq = memchr(l, '=', n);
		if (!eq || eq == l)
			return want ? 0 : lineno;
		if (!want)
			continue;
		size_t kl = (size_t)(eq - l);
		while (kl && (l[kl - 1] == ' ' || l[kl - 1] == '\t'))
			kl--;
		size_t sl = strlen(sec);
		if (!strncmp(want, sec, sl) && want[sl] == ':' &&
		    strlen(want + sl + 1) == kl &&
		    !strncasecmp(want + sl + 1, l, kl))
			return lineno;
	}
	return 0;
}

/* "PATH:LINE: " before what why holds from byte `from` on. */
static void at_line(mk_strbuf *why, size_t from, const char *path, int line)
{
	if (!why)
		return;
	mk_strbuf msg = MK_STRBUF_INIT;
	mk_strbuf_addf(&msg, "%s:%d: ", path, line);
	mk_strbuf_add(&msg, why->buf + from, why->len - from);
	mk_strbuf_setlen(why, from);
	mk_strbuf_add(why, msg.buf, msg.len);
	mk_strbuf_release(&msg);
}

mk_err mk_config_load(mk_config *cfg, const char *path, mk_strbuf *why)
{
	mk_strbuf text = MK_STRBUF_INIT;
	bool missing;
	if (mk_file_read(path, &text, &missing) || missing) {
		mk_why(why, "%s: cannot read the configuration", path);
		mk_strbuf_release(&text);
		return MK_INVALID_CONFIG;
	}
	int bad = ini_scan(text.buf, NULL);
	if (bad || memchr(text.buf, '\0', text.len)) {
		mk_why(why, "%s:%d: not a [section], KEY = VALUE, comment or blank line",
		       path, bad ? bad : 1);
		mk_strbuf_release(&text);
		return MK_INVALID_CONFIG;
	}
	iniparser_set_error_callback(quiet);
	dictionary *d = iniparser_load(path);
	if (!d) {
		mk_why(why, "%s: cannot read or parse configuration", path);
		mk_strbuf_release(&text);
		return MK_INVALID_CONFIG;
	}
	mk_err err = MK_OK;
	int nsec = iniparser_getnsec(d);
	for (int s = 0; s < nsec && !err; s++) {
		const char *sec = iniparser_getsecname(d, s);
		int nk = iniparser_getsecnkeys(d, sec);
		if (nk <= 0)
			continue;
		const char **names = mk_xcalloc((size_t)nk, sizeof(*names));
		iniparser_getseckeys(d, sec, names);
		for (int i = 0; i < nk && !err; i++) {
			/* iniparser lowercases and joins as "section:key". */
			const key_def *k = find_key(names[i]);
			size_t from = why ? why->len : 0;
			if (!k) {
				mk_why(why, "unknown key '%s'", names[i]);
				at_line(why, from, path, ini_scan(text.buf, names[i]));
				err = MK_INVALID_CONFIG;
				break;
			}
			const char *v = iniparser_getstring(d, names[i], "");
			if (k->type == T_BROKERS)
				err = parse_brokers(cfg, v, why);
			else if (k->type == T_LISTENERS)
				err = parse_listeners(cfg, v, why);
			else
				err = parse_value(k, v, field(cfg, k, false), why);
			if (err && why) {
				mk_strbuf_addf(why, " [%s]", sec);
				at_line(why, from, path, ini_scan(text.buf, names[i]));
			}
		}
		free(names);
	}
	iniparser_freedict(d);
	mk_strbuf_release(&text);
	if (!err)
		err = check_consistent(cfg, why);
	return err;
}

static void format_value(const key_def *k, int64_t v, mk_strbuf *out)
{
	if (k->type == T_BOOL)
		mk_strbuf_addstr(out, v ? "true" : "false");
	else if (k->type == T_ENUM && k->enums == acks_names)
		mk_strbuf_addstr(out, v < 0 ? "all" : v ? "1" : "0");
	else if (k->type == T_ENUM)
		mk_strbuf_addstr(out, k->enums[v]);
	else
		mk_strbuf_addf(out, "%lld", (long long)v);
}

void mk_config_format(const mk_config *cfg, mk_strbuf *out)
{
	const char *section = "";
	for (size_t i = 0; i < NKEYS; i++) {
		const key_def *k = &keys[i];
		if (strcmp(section, k->section)) {
			mk_strbuf_addf(out, "%s[%s]\n", *section ? "\n" : "", k->section);
			section = k->section;
		}
		mk_strbuf_addf(out, "%s = ", k->name);
		if (k->type == T_BROKERS) {
			for (int b = 0; b < cfg->nbrokers; b++)
				mk_strbuf_addf(out, "%s%d", b ? "," : "", cfg->broker_ids[b]);
		} else if (k->type == T_LISTENERS) {
			if (cfg->listen_off)
				mk_strbuf_addstr(out, "off");
			else
				mk_strbuf_addf(out, "%s:%lld", cfg->listen_host,
					       (long long)cfg->listen_port);
		} else {
			format_value(k, *field((void *)cfg, k, false), out);
		}
		mk_strbuf_addch(out, '\n');
	}
}

/* Index of k among the topic-level keys (its override bit). */
static int topic_bit(const key_def *k)
{
	int bit = 0;
	for (size_t i = 0; i < NKEYS; i++) {
		if (&keys[i] == k)
			return bit;
		if (keys[i].topic)
			bit++;
	}
	return -1;
}

void mk_topic_config_init(mk_topic_config *tc, const mk_config *cfg)
{
	*tc = cfg->log;
	tc->overrides = 0;
}

void mk_topic_config_rebase(mk_topic_config *tc, const mk_config *cfg)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const key_def *k = &keys[i];
		if (!k->topic || (tc->overrides & (1u << topic_bit(k))))
			continue;
		*field(tc, k, true) = *field((void *)&cfg->log, k, true);
	}
}

mk_err mk_topic_config_set(mk_topic_config *tc, const char *key,
			   const char *value, mk_strbuf *why)
{
	const key_def *k = find_key(key);
	if (!k || !k->topic)
		return mk_error(why, MK_INVALID_CONFIG, "'%s' is not a topic configuration key",
				key);
	mk_err err = parse_value(k, value, field(tc, k, true), why);
	if (!err)
		tc->overrides |= 1u << topic_bit(k);
	return err;
}

static void topic_format(const mk_topic_config *tc, mk_strbuf *out,
			 bool only_overrides, const char *sep)
{
	bool first = true;
	for (size_t i = 0; i < NKEYS; i++) {
		const key_def *k = &keys[i];
		if (!k->topic)
			continue;
		if (only_overrides && !(tc->overrides & (1u << topic_bit(k))))
			continue;
		if (!first && sep)
			mk_strbuf_addstr(out, sep);
		mk_strbuf_addf(out, "%s=", k->name);
		format_value(k, *field((void *)tc, k, true), out);
		if (!sep)
			mk_strbuf_addch(out, '\n');
		first = false;
	}
}

void mk_topic_config_format(const mk_topic_config *tc, mk_strbuf *out)
{
	topic_format(tc, out, false, NULL);
}

void mk_topic_config_format_overrides(const mk_topic_config *tc,
				      mk_strbuf *out)
{
	topic_format(tc, out, true, " ");
}
