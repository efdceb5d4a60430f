/*
 * kserver.h — the Kafka protocol's listeners and connections: a TCP
 * listener for every online broker and the connections it accepts, each
 * read as Kafka's size-prefixed requests and answered in order.
 *
 * Owns: the sockets, one network thread that runs them all (epoll), the
 * framing (a request or response is an int32 size and that many bytes),
 * the bounds on what a client may send, and the broker's listener state
 * that /brokers/B/listener shows. It knows no API: each whole request is
 * handed to the handler given at creation (khandlers.h), which writes the
 * response (header included, size prefix excluded) or says to close.
 *
 * Addresses: broker 1 listens on the configured [network] listeners
 * HOST:PORT, broker B on PORT - 1 + B; with port 0 each broker takes a
 * free port the first time it opens and keeps it across its restarts
 * (clients cache the addresses Metadata gave them). A port that cannot be
 * bound (taken, or past 65535) leaves that broker without a listener and
 * an /errors line; the mount goes on. A broker that crashes closes its
 * listener and every connection it accepted at once
 * (mk_kserver_broker, which returns once that is done); a restart opens
 * the listener again.
 *
 * Requests of one connection are taken one at a time, in order, as
 * Kafka's network layer does (a connection is muted while its request is
 * served): the next is read once the response to this one is queued.
 * A request longer than MK_KSERVER_MAX_REQUEST (Kafka's
 * socket.request.max.bytes default, 100 MiB) or shorter than a request
 * header, and bytes that start a TLS handshake, close the connection
 * with an /errors line naming the client: this is a PLAINTEXT listener.
 *
 * Threads: one network thread. mk_kserver_broker and mk_kserver_listener
 * may be called from any thread: the first hands its change to the
 * network thread and waits for it; the second reads under the server's
 * lock. The handler runs on the network thread and must not block.
 */
#ifndef MK_KSERVER_H
#define MK_KSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "errlog.h"
#include "strbuf.h"

#define MK_KSERVER_MAX_REQUEST (100 * 1024 * 1024)

typedef struct mk_kserver mk_kserver;

/* What a handler knows of the connection a request came on. */
typedef struct {
	int broker;             /* the broker whose listener accepted it */
	const char *peer;       /* "HOST:PORT" of the client */
	struct mk_kserver *server;
	void *conn;             /* the server's own (mk_kserver_defer) */
} mk_kconn_info;

/* A response owed for a request its handler could not answer at once. */
typedef struct mk_kdefer mk_kdefer;

/*
 * Answer one request: req[0, len) is its header and body (no size
 * prefix). Append the response (header and body, no size prefix) to out;
 * an empty out sends nothing (Produce with acks=0). Return false to close
 * the connection once out is sent.
 */
typedef bool mk_khandler(void *arg, const mk_kconn_info *conn,
			 const uint8_t *req, size_t len, mk_strbuf *out);

/*
 * A server for the brokers ids[0, n) of cfg's [network] listeners (NULL
 * when listeners = off). Nothing is opened until mk_kserver_start.
 * online(online_arg, id) tells whether a broker is up now (what
 * mk_kserver_broker's change is checked against). At most a quarter of
 * the descriptor limit of connections (the rest is the segments' and
 * the files'): one more is closed at once with an /errors line.
 */
mk_kserver *mk_kserver_new(const mk_config *cfg, const int *ids, int n,
			   mk_errlog *errlog, mk_khandler *handler,
			   void *handler_arg,
			   bool (*online)(void *arg, int id), void *online_arg);
/* Open the listeners of the brokers online[i] says are up, and start the
 * network thread. */
void mk_kserver_start(mk_kserver *s, const bool *online);
/* Broker id went down (close its listener and connections) or came up
 * (open its listener). Returns once done. NULL s: nothing. */
void mk_kserver_broker(mk_kserver *s, int id, bool online);
/* Broker id's listener as "HOST:PORT" into out; false (out untouched)
 * when it has none. NULL s: false. */
bool mk_kserver_listener(mk_kserver *s, int id, mk_strbuf *out);
/* The host and port a broker advertises in Metadata; false when it has
 * no listener. */
bool mk_kserver_address(mk_kserver *s, int id, char *host, size_t hostlen,
			int *port);
/*
 * Waiting without holding a thread (an acks=all produce, a fetch's long
 * poll). In a handler, mk_kserver_defer says the response to this request
 * comes later: the handler leaves out empty and returns true, the
 * connection takes no further request meanwhile (its responses stay in
 * order), and mk_kserver_answer hands the response later from any thread
 * (header and body, no size prefix), which ends the token. If the
 * connection closes first, cancel(arg) runs on the network thread
 * instead (the owner drops its request and must not answer), and the
 * token ends there.
 */
mk_kdefer *mk_kserver_defer(const mk_kconn_info *conn,
			    void (*cancel)(void *arg), void *arg);
void mk_kserver_answer(mk_kdefer *d, const void *resp, size_t len);
/*
 * Run fn(arg, false) on the network thread soon: from any thread, under
 * any lock (it only queues; the watchers of partitions call it). Once
 * the server is stopping, fn(arg, true) instead, at once or when freed:
 * fn then only lets go of arg.
 */
void mk_kserver_post(mk_kserver *s, void (*fn)(void *arg, bool dropped),
		     void *arg);
/*
 * Run fn(arg) on the network thread once ms of wall time have passed
 * (a fetch's max_wait_ms); returns an id for mk_kserver_cancel, which (on
 * the network thread) makes sure it will not run.
 */
uint64_t mk_kserver_after(mk_kserver *s, int64_t ms, void (*fn)(void *arg),
			  void *arg);
void mk_kserver_cancel(mk_kserver *s, uint64_t id);
/* Before the thread stops (mk_kserver_free): fn(arg) on the network
 * thread, so that what waits is answered or dropped while the cluster
 * still runs. One hook. */
void mk_kserver_on_stop(mk_kserver *s, void (*fn)(void *arg), void *arg);

/* Stop the thread, close every socket, free. NULL is fine. */
void mk_kserver_free(mk_kserver *s);

#endif
