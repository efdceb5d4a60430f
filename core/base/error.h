/*
 * error.h — the one error enum of the core.
 *
 * Every core function that can fail returns an mk_err. The names are
 * Kafka's error codes (NOT_ENOUGH_REPLICAS, OFFSET_OUT_OF_RANGE, ...), so a
 * reader who knows Kafka knows what each means. The core never speaks of
 * errnos: fs/errno_map.c turns these into errnos in one table.
 *
 * MK_OK is zero so that `if (err)` reads naturally.
 *
 * The reason a person reads goes into an optional mk_strbuf (`why`,
 * NULL when the caller does not want it). mk_error is the one way to
 * report: git's error() returns -1 after printing; ours adds the reason
 * when one is wanted and returns the code, so a refusal is one statement,
 *     return mk_error(why, MK_INVALID_CONFIG, "bad value for %s", key);
 * and mk_why adds a reason where no code is returned with it.
 */
#ifndef MK_ERROR_H
#define MK_ERROR_H

#include "strbuf.h"

#define MK_ERR_LIST(X)                                                     \
	X(OK)                                                              \
	X(UNKNOWN_TOPIC_OR_PARTITION)  /* no such topic or partition */    \
	X(UNKNOWN_BROKER)              /* no such broker id */             \
	X(UNKNOWN_MEMBER_ID)           /* no such group member */          \
	X(GROUP_ID_NOT_FOUND)          /* no such group */                 \
	X(UNKNOWN_PRODUCER_ID)         /* no such producer */              \
	X(TRANSACTIONAL_ID_NOT_FOUND)  /* no such transaction */           \
	X(TOPIC_ALREADY_EXISTS)                                            \
	X(PRODUCER_ALREADY_EXISTS)                                         \
	X(TRANSACTION_ALREADY_EXISTS)                                      \
	X(INVALID_TOPIC_EXCEPTION)     /* bad topic name */                \
	X(INVALID_REQUEST)             /* malformed command or parameter */\
	X(INVALID_CONFIG)              /* bad configuration value */       \
	X(INVALID_RECORD)              /* malformed record input */        \
	X(CORRUPT_MESSAGE)             /* frame failed a decoder check */  \
	X(OFFSET_OUT_OF_RANGE)                                             \
	X(MESSAGE_TOO_LARGE)                                               \
	X(LEADER_NOT_AVAILABLE)        /* partition has no online leader */\
	X(BROKER_NOT_AVAILABLE)        /* broker is offline */             \
	X(NOT_LEADER_OR_FOLLOWER)                                          \
	X(NOT_ENOUGH_REPLICAS)                                             \
	X(NOT_ENOUGH_REPLICAS_AFTER_APPEND)                                \
	X(REQUEST_TIMED_OUT)                                               \
	X(FENCED_LEADER_EPOCH)                                             \
	X(PRODUCER_FENCED)                                                 \
	X(ILLEGAL_GENERATION)                                              \
	X(OUT_OF_ORDER_SEQUENCE_NUMBER)                                    \
	X(INELIGIBLE_REPLICA)          /* promotion of out-of-sync replica */\
	X(TOPIC_AUTHORIZATION_FAILED)  /* commit of an unowned partition */\
	X(REBALANCE_IN_PROGRESS)                                           \
	X(NON_EMPTY_GROUP)             /* delete of a group with members */\
	X(GROUP_ALREADY_EXISTS)                                            \
	X(CONCURRENT_TRANSACTIONS)     /* a transaction is open or ending */\
	X(INVALID_TXN_STATE)           /* e.g. abort of a prepared commit */\
	X(KAFKA_STORAGE_ERROR)         /* I/O failure, replica offline */  \
	X(INTERRUPTED)                 /* a blocked wait was interrupted */\
	X(OUT_OF_MEMORY)

typedef enum {
#define MK_ERR_ENUM(name) MK_##name,
	MK_ERR_LIST(MK_ERR_ENUM)
#undef MK_ERR_ENUM
	MK_ERR__COUNT
} mk_err;

/* The Kafka-style name of an error, e.g. "NOT_ENOUGH_REPLICAS". */
const char *mk_err_name(mk_err err);

/* Add the formatted reason to why (when not NULL) and return err. */
mk_err mk_error(mk_strbuf *why, mk_err err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Add the formatted reason to why, when not NULL. */
void mk_why(mk_strbuf *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A failed system call on a file: "PATH: WHAT: strerror(errno)" and
 * KAFKA_STORAGE_ERROR (the code Kafka gives a replica's I/O failure). */
mk_err mk_io_error(mk_strbuf *why, const char *path, const char *what);

#endif
