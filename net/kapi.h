/*
 * kapi.h — the Kafka APIs the brokers serve, their versions, and Kafka's
 * error codes on the wire.
 *
 * Owns one table, sorted by API key, of the APIs issue 26 serves: each
 * with Kafka's name, the versions we answer (min..max; any other version
 * of it, and any API not in the table, gets UNSUPPORTED_VERSION), and the
 * first flexible version of Kafka's schema (the API's NAMERequest.json
 * in clients/src/main/resources/common/message/: "flexibleVersions":
 * "N+"). That last number is Kafka's, not ours: it decides the header
 * versions of every version of the API a client may send, the
 * unsupported ones included, so that their correlation ids can be read
 * and answered.
 *
 * Header versions, as Kafka's generated ApiMessageType says:
 *   request:  2 for a flexible version, else 1 (0 for ControlledShutdown
 *             v0 alone, which has no client id). An API not known: 1,
 *             which every later header begins with, so the correlation
 *             id of an unknown request can be read all the same.
 *   response: 1 for a flexible version, else 0; ApiVersions always 0
 *             (KIP-511: a client that sent a version the broker does not
 *             know must still read the answer).
 *
 * Error codes: the core's mk_err (error.h) has Kafka's names but not its
 * numbers, and the wire needs codes the core never returns
 * (UNSUPPORTED_VERSION, NOT_COORDINATOR, ...). MK_KERR_LIST holds the
 * codes the protocol uses, each with Kafka's number; mk_kerr_from maps a
 * core error to one, by name wherever the core's name is Kafka's (the
 * unit test checks that every such name maps to its own code).
 *
 * Constant tables: thread-safe.
 */
#ifndef MK_KAPI_H
#define MK_KAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "kwire.h"

/* Kafka's API keys (ApiKeys.java) of the APIs served. */
enum {
	MK_KAPI_PRODUCE = 0,
	MK_KAPI_FETCH = 1,
	MK_KAPI_LIST_OFFSETS = 2,
	MK_KAPI_METADATA = 3,
	MK_KAPI_CONTROLLED_SHUTDOWN = 7,   /* not served: named for its v0 header */
	MK_KAPI_OFFSET_COMMIT = 8,
	MK_KAPI_OFFSET_FETCH = 9,
	MK_KAPI_FIND_COORDINATOR = 10,
	MK_KAPI_JOIN_GROUP = 11,
	MK_KAPI_HEARTBEAT = 12,
	MK_KAPI_LEAVE_GROUP = 13,
	MK_KAPI_SYNC_GROUP = 14,
	MK_KAPI_DESCRIBE_GROUPS = 15,
	MK_KAPI_LIST_GROUPS = 16,
	MK_KAPI_API_VERSIONS = 18,
	MK_KAPI_CREATE_TOPICS = 19,
	MK_KAPI_DELETE_TOPICS = 20,
	MK_KAPI_DELETE_RECORDS = 21,
	MK_KAPI_INIT_PRODUCER_ID = 22,
	MK_KAPI_OFFSET_FOR_LEADER_EPOCH = 23,
	MK_KAPI_ADD_PARTITIONS_TO_TXN = 24,
	MK_KAPI_ADD_OFFSETS_TO_TXN = 25,
	MK_KAPI_END_TXN = 26,
	MK_KAPI_TXN_OFFSET_COMMIT = 28,
	MK_KAPI_DESCRIBE_CONFIGS = 32,
	MK_KAPI_ALTER_CONFIGS = 33,
	MK_KAPI_CREATE_PARTITIONS = 37,
};

typedef struct {
	int16_t key;
	const char *name;          /* Kafka's: "ApiVersions" */
	int16_t min_version;       /* the versions served */
	int16_t max_version;
	int16_t first_flexible;    /* Kafka's schema's; -1: never flexible */
} mk_kapi;

/* The table in key order (an ApiVersions answer lists it so); *n entries. */
const mk_kapi *mk_kapi_list(size_t *n);
/* The entry of an API key; NULL when it is not served. */
const mk_kapi *mk_kapi_find(int16_t key);
/* True when the API is served in that version. */
bool mk_kapi_supported(int16_t key, int16_t version);
/* True when Kafka encodes that version of the API as flexible (whether
 * we serve it or not); false for an API not in the table. */
bool mk_kapi_is_flexible(int16_t key, int16_t version);
int mk_kapi_request_header_version(int16_t key, int16_t version);
int mk_kapi_response_header_version(int16_t key, int16_t version);

/*
 * Parse the request header at r's position (the first bytes of a request
 * after its size), in the header version its api key and version call
 * for: mk_kr_request_header's contract (false on damage, with the fields
 * read before it kept).
 */
bool mk_kapi_read_request_header(mk_kreader *r, mk_kreq_header *h);

/* ---- error codes ------------------------------------------------------ */

/* Kafka's codes (Errors.java) that the protocol answers with. */
#define MK_KERR_LIST(X)                                                    \
	X(UNKNOWN_SERVER_ERROR, -1)                                        \
	X(NONE, 0)                                                         \
	X(OFFSET_OUT_OF_RANGE, 1)                                          \
	X(CORRUPT_MESSAGE, 2)                                              \
	X(UNKNOWN_TOPIC_OR_PARTITION, 3)                                   \
	X(INVALID_FETCH_SIZE, 4)                                           \
	X(LEADER_NOT_AVAILABLE, 5)                                         \
	X(NOT_LEADER_OR_FOLLOWER, 6)                                       \
	X(REQUEST_TIMED_OUT, 7)                                            \
	X(BROKER_NOT_AVAILABLE, 8)                                         \
	X(REPLICA_NOT_AVAILABLE, 9)                                        \
	X(MESSAGE_TOO_LARGE, 10)                                           \
	X(OFFSET_METADATA_TOO_LARGE, 12)                                   \
	X(NETWORK_EXCEPTION, 13)                                           \
	X(COORDINATOR_LOAD_IN_PROGRESS, 14)                                \
	X(COORDINATOR_NOT_AVAILABLE, 15)                                   \
	X(NOT_COORDINATOR, 16)                                             \
	X(INVALID_TOPIC_EXCEPTION, 17)                                     \
	X(RECORD_LIST_TOO_LARGE, 18)                                       \
	X(NOT_ENOUGH_REPLICAS, 19)                                         \
	X(NOT_ENOUGH_REPLICAS_AFTER_APPEND, 20)                            \
	X(INVALID_REQUIRED_ACKS, 21)                                       \
	X(ILLEGAL_GENERATION, 22)                                          \
	X(INCONSISTENT_GROUP_PROTOCOL, 23)                                 \
	X(INVALID_GROUP_ID, 24)                                            \
	X(UNKNOWN_MEMBER_ID, 25)                                           \
	X(INVALID_SESSION_TIMEOUT, 26)                                     \
	X(REBALANCE_IN_PROGRESS, 27)                                       \
	X(INVALID_COMMIT_OFFSET_SIZE, 28)                                  \
	X(TOPIC_AUTHORIZATION_FAILED, 29)                                  \
	X(GROUP_AUTHORIZATION_FAILED, 30)                                  \
	X(CLUSTER_AUTHORIZATION_FAILED, 31)                                \
	X(INVALID_TIMESTAMP, 32)                                           \
	X(UNSUPPORTED_SASL_MECHANISM, 33)                                  \
	X(ILLEGAL_SASL_STATE, 34)                                          \
	X(UNSUPPORTED_VERSION, 35)                                         \
	X(TOPIC_ALREADY_EXISTS, 36)                                        \
	X(INVALID_PARTITIONS, 37)                                          \
	X(INVALID_REPLICATION_FACTOR, 38)                                  \
	X(INVALID_REPLICA_ASSIGNMENT, 39)                                  \
	X(INVALID_CONFIG, 40)                                              \
	X(NOT_CONTROLLER, 41)                                              \
	X(INVALID_REQUEST, 42)                                             \
	X(UNSUPPORTED_FOR_MESSAGE_FORMAT, 43)                              \
	X(POLICY_VIOLATION, 44)                                            \
	X(OUT_OF_ORDER_SEQUENCE_NUMBER, 45)                                \
	X(DUPLICATE_SEQUENCE_NUMBER, 46)                                   \
	X(INVALID_PRODUCER_EPOCH, 47)                                      \
	X(INVALID_TXN_STATE, 48)                                           \
	X(INVALID_PRODUCER_ID_MAPPING, 49)                                 \
	X(INVALID_TRANSACTION_TIMEOUT, 50)                                 \
	X(CONCURRENT_TRANSACTIONS, 51)                                     \
	X(TRANSACTION_COORDINATOR_FENCED, 52)                              \
	X(TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53)                       \
	X(SECURITY_DISABLED, 54)                                           \
	X(OPERATION_NOT_ATTEMPTED, 55)                                     \
	X(KAFKA_STORAGE_ERROR, 56)                                         \
	X(UNKNOWN_PRODUCER_ID, 59)                                         \
	X(NON_EMPTY_GROUP, 68)                                             \
	X(GROUP_ID_NOT_FOUND, 69)                                          \
	X(FETCH_SESSION_ID_NOT_FOUND, 70)                                  \
	X(INVALID_FETCH_SESSION_EPOCH, 71)                                 \
	X(LISTENER_NOT_FOUND, 72)                                          \
	X(TOPIC_DELETION_DISABLED, 73)                                     \
	X(FENCED_LEADER_EPOCH, 74)                                         \
	X(UNKNOWN_LEADER_EPOCH, 75)                                        \
	X(UNSUPPORTED_COMPRESSION_TYPE, 76)                                \
	X(OFFSET_NOT_AVAILABLE, 78)                                        \
	X(MEMBER_ID_REQUIRED, 79)                                          \
	X(GROUP_MAX_SIZE_REACHED, 81)                                      \
	X(FENCED_INSTANCE_ID, 82)                                          \
	X(INVALID_RECORD, 87)                                              \
	X(UNSTABLE_OFFSET_COMMIT, 88)                                      \
	X(THROTTLING_QUOTA_EXCEEDED, 89)                                   \
	X(PRODUCER_FENCED, 90)                                             \
	X(RESOURCE_NOT_FOUND, 91)                                          \
	X(UNKNOWN_TOPIC_ID, 100)                                           \
	X(TRANSACTIONAL_ID_NOT_FOUND, 105)                                 \
	X(INELIGIBLE_REPLICA, 107)

typedef enum {
#define MK_KERR_ENUM(name, code) MK_KERR_##name = code,
	MK_KERR_LIST(MK_KERR_ENUM)
#undef MK_KERR_ENUM
} mk_kerr;

/* Kafka's name of a code ("NOT_COORDINATOR"); NULL for one not listed. */
const char *mk_kerr_name(int16_t code);
/*
 * The code a core error is answered with where the API gives it no other
 * meaning: Kafka's code of the same name, else (the core's own names)
 * UNKNOWN_BROKER as BROKER_NOT_AVAILABLE, INTERRUPTED (a wait cut short
 * by a shutdown) as REQUEST_TIMED_OUT, and what only the files can meet
 * (PRODUCER_, TRANSACTION_ and GROUP_ALREADY_EXISTS) and OUT_OF_MEMORY
 * as UNKNOWN_SERVER_ERROR. An API that means something else by an error
 * (an older version's code for it) maps it itself.
 */
int16_t mk_kerr_from(mk_err err);

#endif
