/*
 * kserver.c — listeners, connections and framing (kserver.h).
 *
 * Organisation:
 *   - listeners: one per broker, opened and closed only on the network
 *     thread (at start, and by the commands mk_kserver_broker queues);
 *   - connections: a read buffer of whole and partial requests, a write
 *     buffer of responses; serve() takes whole requests one at a time
 *     while the unsent responses stay under OUT_HIGH, so a client that
 *     sends and never reads stops being read, not the daemon growing;
 *   - the loop: epoll over the listeners, the connections and an eventfd
 *     that the commands ring. Each epoll item points to a `source`
 *     (kind and owner); a connection closed while the batch of events is
 *     walked is only marked dead, and freed after the batch.
 */
#include "kserver.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "xalloc.h"

#define READ_CHUNK (64u * 1024)
#define READ_BUDGET (4 * READ_CHUNK)  /* a connection's turn */
#define OUT_HIGH (4u * 1024 * 1024)   /* unsent bytes that stop serving */
#define MAX_EVENTS 64
#define REQUEST_HEADER_MIN 8          /* api key, version, correlation id */

typedef enum { SRC_EVENT, SRC_LISTENER, SRC_CONN } src_kind;

typedef struct {
	src_kind kind;
	void *owner;
} source;

typedef struct {
	int id;
	int port;               /* to bind: configured, or the first bound */
	int fd;                 /* -1: no listener */
	int bound_port;
	source src;
} listener;

typedef struct conn {
	int fd;
	int broker;
	char peer[64];
	mk_strbuf in;           /* bytes read, from in_off on not yet served */
	size_t in_off;
	mk_strbuf out;          /* responses, from out_off on not yet sent */
	size_t out_off;
	uint32_t events;        /* what epoll is asked for now */
	bool closing;           /* close once out is sent */
	bool dead;              /* closed: freed after this batch of events */
	struct mk_kdefer *owed; /* a response its handler will give later */
	source src;
	struct conn *next;
} conn;

struct mk_kdefer {
	struct mk_kserver *server;
	void (*cancel)(void *arg);   /* the connection closed first */
	void *cancel_arg;
	conn *c;                /* NULL once the connection closed */
	struct mk_kdefer *next; /* in the answered queue */
	mk_strbuf resp;
};

typedef struct post {
	void (*fn)(void *arg, bool dropped);
	void *arg;
	struct post *next;
} post;

typedef struct timer {
	uint64_t id;
	int64_t due_ms;         /* wall clock */
	void (*fn)(void *arg);
	void *arg;
	struct timer *next;     /* by due time */
} timer;

typedef struct {
	int id;
	bool online;
} command;

struct mk_kserver {
	char host[64];          /* to bind */
	char advertised[64];    /* what Metadata says (a wildcard: 127.0.0.1) */
	listener *ls;
	int nls;
	mk_errlog *errlog;
	mk_khandler *handler;
	void *handler_arg;
	int epfd, evfd;
	source evsrc;
	conn *conns;
	pthread_t thread;
	bool started;
	/* guarded by lock: */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	command *cmds;
	size_t ncmds, cmds_cap;
	uint64_t cmd_seq, done_seq;
	bool stop;
	bool stopping;          /* no new request is served, no post taken */
	struct mk_kdefer *answered, **answered_tail;   /* FIFO */
	post *posts, **posts_tail;                     /* FIFO */
	/* the network thread's alone: */
	timer *timers;
	uint64_t next_timer;
	size_t nconns, max_conns;
	bool listeners_paused;  /* out of descriptors: accept later */
	bool (*online)(void *arg, int id);
	void *online_arg;
	void (*stop_fn)(void *arg);
	void *stop_arg;
};

/* ---- listeners --------------------------------------------------------- */

static listener *find_listener(mk_kserver *s, int id)
{
	for (int i = 0; i < s->nls; i++)
		if (s->ls[i].id == id)
			return &s->ls[i];
	return NULL;
}

static int bind_listener(const char *host, int port, int *bound,
			 mk_strbuf *why)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", port);
	int rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc) {
		mk_why(why, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -1;
	}
	int fd = -1, err = 0;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
				SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		int one = 1;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0) {
		mk_why(why, "%s", strerror(err ? err : EADDRNOTAVAIL));
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	*bound = port;
	if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
		*bound = ntohs(ss.ss_family == AF_INET6
			       ? ((struct sockaddr_in6 *)&ss)->sin6_port
			       : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

static void open_listener(mk_kserver *s, listener *l)
{
	if (l->fd >= 0)
		return;
	char addr[96];
	snprintf(addr, sizeof(addr), "%s:%d", s->host, l->port);
	if (l->port > 65535) {
		mk_errlog_add(s->errlog, mk_wall_ms(), NULL, MK_BROKER_NOT_AVAILABLE,
			      "broker %d: no listener: its port %d (listeners' port - 1 + broker id) is past 65535",
			      l->id, l->port);
		return;
	}
	mk_strbuf why = MK_STRBUF_INIT;
	int bound;
	int fd = bind_listener(s->host, l->port, &bound, &why);
	if (fd < 0) {
		mk_errlog_add(s->errlog, mk_wall_ms(), NULL, MK_BROKER_NOT_AVAILABLE,
			      "broker %d: no listener on %s: %s (the mount goes on without it)",
			      l->id, addr, why.buf);
		mk_strbuf_release(&why);
		return;
	}
	mk_strbuf_release(&why);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &l->src };
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&s->lock);
	l->fd = fd;
	l->bound_port = bound;
	if (l->port == 0)
		l->port = bound;     /* kept across restarts */
	pthread_mutex_unlock(&s->lock);
}

/* ---- connections ------------------------------------------------------- */

/* Out of descriptors: the listeners are not polled (a readable listener
 * that cannot accept would spin) until a connection closes. */
static void pause_listeners(mk_kserver *s)
{
	for (int i = 0; i < s->nls; i++)
		if (s->ls[i].fd >= 0)
			epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->ls[i].fd, NULL);
	s->listeners_paused = true;
}

static void resume_listeners(mk_kserver *s)
{
	for (int i = 0; i < s->nls; i++)
		if (s->ls[i].fd >= 0) {
			struct epoll_event ev = { .events = EPOLLIN,
						  .data.ptr = &s->ls[i].src };
			epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->ls[i].fd, &ev);
		}
	s->listeners_paused = false;
}

static void conn_close(mk_kserver *s, conn *c)
{
	if (c->dead)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->dead = true;
	s->nconns--;
	if (c->owed) {
		/* Its owner drops the request (no answer will come), and the
		 * token goes: nothing else holds it. */
		mk_kdefer *d = c->owed;
		c->owed = NULL;
		d->c = NULL;
		if (d->cancel)
			d->cancel(d->cancel_arg);
		mk_strbuf_release(&d->resp);
		free(d);
	}
	if (s->listeners_paused)
		resume_listeners(s);
}

static void close_listener(mk_kserver *s, listener *l)
{
	if (l->fd < 0)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, l->fd, NULL);
	close(l->fd);
	pthread_mutex_lock(&s->lock);
	l->fd = -1;
	pthread_mutex_unlock(&s->lock);
	for (conn *c = s->conns; c; c = c->next)
		if (c->broker == l->id)
			conn_close(s, c);
}

/*
 * Ask epoll for what c needs now: reading unless muted (a response owed,
 * closing, or OUT_HIGH unsent: Kafka mutes a channel so), writing while
 * responses are unsent. A muted connection is not polled for reading at
 * all, so it costs nothing until it unmutes.
 */
static void conn_events(mk_kserver *s, conn *c)
{
	if (c->dead)
		return;
	size_t unsent = c->out.len - c->out_off;
	bool muted = c->owed || c->closing || unsent >= OUT_HIGH;
	uint32_t want = (muted ? 0 : EPOLLIN | EPOLLRDHUP) |
			(unsent ? EPOLLOUT : 0);
	if (want == c->events)
		return;
	struct epoll_event ev = { .events = want, .data.ptr = &c->src };
	if (!epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		c->events = want;
}

/* Send what can be sent now. */
static void conn_flush(mk_kserver *s, conn *c)
{
	while (!c->dead && c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.buf + c->out_off,
				 c->out.len - c->out_off, MSG_NOSIGNAL);
		if (n > 0) {
			c->out_off += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			conn_events(s, c);
			return;
		} else {
			conn_close(s, c);
			return;
		}
	}
	if (c->dead)
		return;
	mk_strbuf_reset(&c->out);
	if (c->out.alloc > OUT_HIGH)
		mk_strbuf_release(&c->out);    /* no idle 100 MiB buffers */
	c->out_off = 0;
	if (c->closing)
		conn_close(s, c);
	else
		conn_events(s, c);
}

/* Refuse what the client sent: an /errors line, then close. */
static void conn_refuse(mk_kserver *s, conn *c, const char *what)
{
	mk_errlog_add(s->errlog, mk_wall_ms(), NULL, MK_INVALID_REQUEST,
		      "client %s (broker %d's listener): %s; connection closed",
		      c->peer, c->broker, what);
	c->closing = true;
}

/* Serve the whole requests read so far, one at a time, in order. */
static void serve(mk_kserver *s, conn *c)
{
	while (!c->dead && !c->closing && !c->owed && !s->stopping &&
	       c->out.len - c->out_off < OUT_HIGH) {
		size_t have = c->in.len - c->in_off;
		const uint8_t *p = (const uint8_t *)c->in.buf + c->in_off;
		/* A TLS record (change cipher spec, alert, handshake, data:
		 * 0x14-0x17, then version 3.x) is no size Kafka allows. */
		if (have >= 2 && p[0] >= 0x14 && p[0] <= 0x17 && p[1] == 0x03) {
			conn_refuse(s, c, "sent a TLS handshake to a PLAINTEXT listener (no TLS or SASL here)");
			break;
		}
		if (have < 4)
			break;
		int32_t size = (int32_t)mk_load_be32(p);
		if (size < REQUEST_HEADER_MIN || size > MK_KSERVER_MAX_REQUEST) {
			char what[160];
			snprintf(what, sizeof(what),
				 "sent a request size of %d bytes (a request is %d to %d bytes)",
				 size, REQUEST_HEADER_MIN, MK_KSERVER_MAX_REQUEST);
			conn_refuse(s, c, what);
			break;
		}
		if (have < 4 + (size_t)size)
			break;
		size_t before = c->out.len;
		mk_strbuf_add(&c->out, "\0\0\0\0", 4);
		mk_kconn_info info = { c->broker, c->peer, s, c };
		bool keep = s->handler(s->handler_arg, &info, p + 4, (size_t)size,
				       &c->out);
		size_t body = c->out.len - before - 4;
		if (body)
			mk_store_be32((uint8_t *)c->out.buf + before, (uint32_t)body);
		else
			mk_strbuf_setlen(&c->out, before);   /* no response */
		c->in_off += 4 + (size_t)size;
		if (!keep)
			c->closing = true;
	}
	/* Drop what was served; keep a partial request. */
	if (c->in_off == c->in.len) {
		mk_strbuf_reset(&c->in);
		if (c->in.alloc > 4 * READ_CHUNK)
			mk_strbuf_release(&c->in);
		c->in_off = 0;
	} else if (c->in_off > READ_CHUNK) {
		memmove(c->in.buf, c->in.buf + c->in_off, c->in.len - c->in_off);
		mk_strbuf_setlen(&c->in, c->in.len - c->in_off);
		c->in_off = 0;
	}
	conn_flush(s, c);
}

/* Read what c sent, at most READ_BUDGET a call: level-triggered epoll
 * brings a busy connection back, after the others had their turn. */
static void conn_read(mk_kserver *s, conn *c)
{
	for (size_t got = 0; got < READ_BUDGET;) {
		if (c->owed || c->closing || c->out.len - c->out_off >= OUT_HIGH)
			break;          /* muted (conn_events) */
		mk_strbuf_grow(&c->in, READ_CHUNK);
		ssize_t n = recv(c->fd, c->in.buf + c->in.len, READ_CHUNK, 0);
		if (n > 0) {
			got += (size_t)n;
			mk_strbuf_setlen(&c->in, c->in.len + (size_t)n);
			serve(s, c);
			if (c->dead)
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		conn_close(s, c);    /* EOF or a reset: the client went */
		return;
	}
	conn_events(s, c);
}

static void format_peer(const struct sockaddr_storage *ss, char *out,
			size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	snprintf(out, n, "%s:%d", host, port);
}

static void accept_all(mk_kserver *s, listener *l)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE)
				pause_listeners(s);   /* until one closes */
			return;
		}
		if (s->nconns >= s->max_conns) {
			char peer[64];
			format_peer(&ss, peer, sizeof(peer));
			mk_errlog_add(s->errlog, mk_wall_ms(), NULL, MK_INVALID_REQUEST,
				      "client %s (broker %d's listener): refused: %zu connections already (at most a quarter of the descriptor limit)",
				      peer, l->id, s->nconns);
			close(fd);
			continue;
		}
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		conn *c = mk_xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->broker = l->id;
		format_peer(&ss, c->peer, sizeof(c->peer));
		mk_strbuf_init(&c->in, 0);
		mk_strbuf_init(&c->out, 0);
		c->src = (source){ SRC_CONN, c };
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP,
					  .data.ptr = &c->src };
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			mk_strbuf_release(&c->in);
			mk_strbuf_release(&c->out);
			free(c);
			continue;
		}
		c->events = EPOLLIN | EPOLLRDHUP;
		c->next = s->conns;
		s->conns = c;
		s->nconns++;
	}
}

static void free_dead(mk_kserver *s)
{
	for (conn **pp = &s->conns; *pp;) {
		conn *c = *pp;
		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		mk_strbuf_release(&c->in);
		mk_strbuf_release(&c->out);
		free(c);
	}
}

/* ---- commands and the loop ---------------------------------------------- */

static void apply(mk_kserver *s, const command *cmd)
{
	listener *l = find_listener(s, cmd->id);
	if (!l)
		return;
	/* The broker's state now, not the command's: a crash and a restart
	 * racing to here leave the listener as the broker is. */
	bool up = s->online ? s->online(s->online_arg, cmd->id) : cmd->online;
	if (up)
		open_listener(s, l);
	else
		close_listener(s, l);
}

/* The responses handed in by mk_kserver_answer, in order. */
static void deliver_answers(mk_kserver *s)
{
	pthread_mutex_lock(&s->lock);
	struct mk_kdefer *d = s->answered;
	s->answered = NULL;
	s->answered_tail = &s->answered;
	pthread_mutex_unlock(&s->lock);
	while (d) {
		struct mk_kdefer *next = d->next;
		conn *c = d->c;     /* set only here and in conn_close: ours */
		if (c && !c->dead) {
			uint8_t size[4];
			mk_store_be32(size, (uint32_t)d->resp.len);
			if (d->resp.len) {
				mk_strbuf_add(&c->out, size, 4);
				mk_strbuf_add(&c->out, d->resp.buf, d->resp.len);
			}
			c->owed = NULL;
			serve(s, c);    /* the next request, and the flush */
		}
		mk_strbuf_release(&d->resp);
		free(d);
		d = next;
	}
}

static void run_posts(mk_kserver *s)
{
	pthread_mutex_lock(&s->lock);
	post *p = s->posts;
	s->posts = NULL;
	s->posts_tail = &s->posts;
	pthread_mutex_unlock(&s->lock);
	while (p) {
		post *next = p->next;
		p->fn(p->arg, false);
		free(p);
		p = next;
	}
}

static int64_t run_timers(mk_kserver *s)
{
	int64_t now = mk_wall_ms();
	while (s->timers && s->timers->due_ms <= now) {
		timer *t = s->timers;
		s->timers = t->next;
		t->fn(t->arg);
		free(t);
		now = mk_wall_ms();
	}
	return s->timers ? s->timers->due_ms - now : -1;
}

static bool run_commands(mk_kserver *s)
{
	uint64_t v;
	ssize_t r = read(s->evfd, &v, sizeof(v));
	(void)r;
	run_posts(s);
	deliver_answers(s);
	pthread_mutex_lock(&s->lock);
	bool stop = s->stop;
	while (s->ncmds) {
		command batch[16];
		size_t n = s->ncmds < 16 ? s->ncmds : 16;
		memcpy(batch, s->cmds, n * sizeof(*batch));
		memmove(s->cmds, s->cmds + n, (s->ncmds - n) * sizeof(*batch));
		s->ncmds -= n;
		pthread_mutex_unlock(&s->lock);
		for (size_t i = 0; i < n; i++)
			apply(s, &batch[i]);
		pthread_mutex_lock(&s->lock);
		s->done_seq += n;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return !stop;
}

static void *loop(void *arg)
{
	mk_kserver *s = arg;
	struct epoll_event evs[MAX_EVENTS];
	for (bool go = true; go;) {
		int64_t wait = run_timers(s);
		int n = epoll_wait(s->epfd, evs, MAX_EVENTS,
				   wait < 0 ? -1 : wait > 60000 ? 60000 : (int)wait);
		for (int i = 0; i < n; i++) {
			source *src = evs[i].data.ptr;
			if (src->kind == SRC_EVENT) {
				go = run_commands(s);
			} else if (src->kind == SRC_LISTENER) {
				listener *l = src->owner;
				if (l->fd >= 0)
					accept_all(s, l);
			} else {
				conn *c = src->owner;
				if (c->dead)
					continue;
				if (evs[i].events & EPOLLOUT)
					conn_flush(s, c);
				if (!c->dead && (evs[i].events &
						 (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)))
					conn_read(s, c);
				/* A flush may have unmuted it. */
				if (!c->dead && !c->owed &&
				    c->out.len == c->out_off &&
				    c->in.len > c->in_off)
					serve(s, c);
			}
		}
		free_dead(s);
	}
	/* What still waits is answered or dropped while the cluster runs;
	 * no request is served from here on (serve), so none parks again,
	 * and no post is taken (mk_kserver_post). */
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_mutex_unlock(&s->lock);
	if (s->stop_fn)
		s->stop_fn(s->stop_arg);
	run_posts(s);
	deliver_answers(s);
	for (conn *c = s->conns; c; c = c->next)
		conn_flush(s, c);     /* best effort: non-blocking */
	return NULL;
}

/* ---- the API -------------------------------------------------------------- */

mk_kserver *mk_kserver_new(const mk_config *cfg, const int *ids, int n,
			   mk_errlog *errlog, mk_khandler *handler,
			   void *handler_arg,
			   bool (*online)(void *arg, int id), void *online_arg)
{
	if (cfg->listen_off)
		return NULL;
	mk_kserver *s = mk_xcalloc(1, sizeof(*s));
	s->online = online;
	s->online_arg = online_arg;
	struct rlimit rl;
	s->max_conns = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY
		? 256 : (size_t)rl.rlim_cur / 4;
	if (s->max_conns < 16)
		s->max_conns = 16;
	snprintf(s->host, sizeof(s->host), "%s", cfg->listen_host);
	bool wildcard = !strcmp(s->host, "0.0.0.0") || !strcmp(s->host, "::");
	snprintf(s->advertised, sizeof(s->advertised), "%s",
		 wildcard ? "127.0.0.1" : s->host);
	s->ls = mk_xcalloc((size_t)(n ? n : 1), sizeof(*s->ls));
	s->nls = n;
	for (int i = 0; i < n; i++) {
		s->ls[i].id = ids[i];
		s->ls[i].port = cfg->listen_port == 0
			? 0 : (int)(cfg->listen_port - 1 + ids[i]);
		s->ls[i].fd = -1;
		s->ls[i].src = (source){ SRC_LISTENER, &s->ls[i] };
	}
	s->errlog = errlog;
	s->handler = handler;
	s->handler_arg = handler_arg;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->epfd < 0 || s->evfd < 0)
		abort();     /* out of descriptors at start-up */
	s->evsrc = (source){ SRC_EVENT, s };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->evsrc };
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ev))
		abort();
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->answered_tail = &s->answered;
	s->posts_tail = &s->posts;
	return s;
}

void mk_kserver_start(mk_kserver *s, const bool *online)
{
	if (!s)
		return;
	for (int i = 0; i < s->nls; i++)
		if (online[i])
			open_listener(s, &s->ls[i]);
	if (pthread_create(&s->thread, NULL, loop, s))
		abort();
	s->started = true;
}

static void ring(mk_kserver *s)
{
	uint64_t one = 1;
	ssize_t w = write(s->evfd, &one, sizeof(one));
	(void)w;
}

void mk_kserver_broker(mk_kserver *s, int id, bool online)
{
	if (!s)
		return;
	command cmd = { id, online };
	if (!s->started) {
		apply(s, &cmd);
		return;
	}
	if (pthread_equal(pthread_self(), s->thread)) {
		apply(s, &cmd);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (s->ncmds == s->cmds_cap) {
		s->cmds_cap = s->cmds_cap ? s->cmds_cap * 2 : 8;
		s->cmds = mk_xrealloc(s->cmds, s->cmds_cap * sizeof(*s->cmds));
	}
	s->cmds[s->ncmds++] = cmd;
	uint64_t mine = ++s->cmd_seq;
	ring(s);
	while (s->done_seq < mine && !s->stop)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

bool mk_kserver_address(mk_kserver *s, int id, char *host, size_t hostlen,
			int *port)
{
	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	listener *l = find_listener(s, id);
	bool up = l && l->fd >= 0;
	if (up) {
		snprintf(host, hostlen, "%s", s->advertised);
		*port = l->bound_port;
	}
	pthread_mutex_unlock(&s->lock);
	return up;
}

bool mk_kserver_listener(mk_kserver *s, int id, mk_strbuf *out)
{
	char host[64];
	int port;
	if (!mk_kserver_address(s, id, host, sizeof(host), &port))
		return false;
	mk_strbuf_addf(out, "%s:%d", host, port);
	return true;
}

mk_kdefer *mk_kserver_defer(const mk_kconn_info *info,
			    void (*cancel)(void *arg), void *arg)
{
	conn *c = info->conn;
	assert(!c->owed);
	mk_kdefer *d = mk_xcalloc(1, sizeof(*d));
	d->server = info->server;
	d->cancel = cancel;
	d->cancel_arg = arg;
	d->c = c;
	mk_strbuf_init(&d->resp, 0);
	c->owed = d;
	return d;
}

void mk_kserver_answer(mk_kdefer *d, const void *resp, size_t len)
{
	/* Only queued: the network thread alone reads d->c (deliver_answers),
	 * and frees a token whose connection closed (conn_close: its owner's
	 * cancel ran, so no answer comes for it). */
	mk_strbuf_add(&d->resp, resp, len);
	mk_kserver *s = d->server;
	pthread_mutex_lock(&s->lock);
	d->next = NULL;
	*s->answered_tail = d;
	s->answered_tail = &d->next;
	ring(s);
	pthread_mutex_unlock(&s->lock);
}

void mk_kserver_post(mk_kserver *s, void (*fn)(void *arg, bool dropped),
		     void *arg)
{
	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->lock);
		fn(arg, true);
		return;
	}
	post *p = mk_xcalloc(1, sizeof(*p));
	p->fn = fn;
	p->arg = arg;
	*s->posts_tail = p;
	s->posts_tail = &p->next;
	ring(s);
	pthread_mutex_unlock(&s->lock);
}

uint64_t mk_kserver_after(mk_kserver *s, int64_t ms, void (*fn)(void *arg),
			  void *arg)
{
	timer *t = mk_xcalloc(1, sizeof(*t));
	t->id = ++s->next_timer;
	t->due_ms = mk_wall_ms() + (ms > 0 ? ms : 0);
	t->fn = fn;
	t->arg = arg;
	timer **pp = &s->timers;
	while (*pp && (*pp)->due_ms <= t->due_ms)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
	return t->id;
}

void mk_kserver_cancel(mk_kserver *s, uint64_t id)
{
	for (timer **pp = &s->timers; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			timer *t = *pp;
			*pp = t->next;
			free(t);
			return;
		}
}

void mk_kserver_on_stop(mk_kserver *s, void (*fn)(void *arg), void *arg)
{
	s->stop_fn = fn;
	s->stop_arg = arg;
}

void mk_kserver_free(mk_kserver *s)
{
	if (!s)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		ring(s);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	for (int i = 0; i < s->nls; i++)
		close_listener(s, &s->ls[i]);
	for (conn *c = s->conns; c; c = c->next)
		conn_close(s, c);
	free_dead(s);
	while (s->timers) {
		timer *t = s->timers;
		s->timers = t->next;
		free(t);
	}
	/* Posts and answers that came after the thread stopped: dropped. */
	while (s->posts) {
		post *p = s->posts;
		s->posts = p->next;
		p->fn(p->arg, true);
		free(p);
	}
	while (s->answered) {
		mk_kdefer *d = s->answered;
		s->answered = d->next;
		mk_strbuf_release(&d->resp);
		free(d);
	}
	close(s->epfd);
	close(s->evfd);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->cmds);
	free(s->ls);
	free(s);
}
