#include "kapi.h"

#include "search.h"

/*
 * Served versions: issue 26's ranges, all below Kafka's first flexible
 * version; where the issue names no range (ListGroups, DescribeGroups,
 * CreatePartitions, AlterConfigs), every non-flexible version. The last
 * column is Kafka's "flexibleVersions" (apache/kafka's schemas of
 * October 2024).
 */
static const mk_kapi table[] = {
	{ MK_KAPI_PRODUCE, "Produce", 3, 8, 9 },
	{ MK_KAPI_FETCH, "Fetch", 4, 11, 12 },
	{ MK_KAPI_LIST_OFFSETS, "ListOffsets", 0, 5, 6 },
	{ MK_KAPI_METADATA, "Metadata", 0, 8, 9 },
	{ MK_KAPI_OFFSET_COMMIT, "OffsetCommit", 0, 7, 8 },
	{ MK_KAPI_OFFSET_FETCH, "OffsetFetch", 0, 5, 6 },
	{ MK_KAPI_FIND_COORDINATOR, "FindCoordinator", 0, 2, 3 },
	{ MK_KAPI_JOIN_GROUP, "JoinGroup", 0, 5, 6 },
	{ MK_KAPI_HEARTBEAT, "Heartbeat", 0, 3, 4 },
	{ MK_KAPI_LEAVE_GROUP, "LeaveGroup", 0, 3, 4 },
	{ MK_KAPI_SYNC_GROUP, "SyncGroup", 0, 3, 4 },
	{ MK_KAPI_DESCRIBE_GROUPS, "DescribeGroups", 0, 4, 5 },
	{ MK_KAPI_LIST_GROUPS, "ListGroups", 0, 2, 3 },
	{ MK_KAPI_API_VERSIONS, "ApiVersions", 0, 2, 3 },
	{ MK_KAPI_CREATE_TOPICS, "CreateTopics", 0, 4, 5 },
	{ MK_KAPI_DELETE_TOPICS, "DeleteTopics", 0, 3, 4 },
	{ MK_KAPI_DELETE_RECORDS, "DeleteRecords", 0, 1, 2 },
	{ MK_KAPI_INIT_PRODUCER_ID, "InitProducerId", 0, 1, 2 },
	{ MK_KAPI_OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", 0, 3, 4 },
	{ MK_KAPI_ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 1, 3 },
	{ MK_KAPI_ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 1, 3 },
	{ MK_KAPI_END_TXN, "EndTxn", 0, 1, 3 },
	{ MK_KAPI_TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 2, 3 },
	{ MK_KAPI_DESCRIBE_CONFIGS, "DescribeConfigs", 0, 2, 4 },
	{ MK_KAPI_ALTER_CONFIGS, "AlterConfigs", 0, 1, 2 },
	{ MK_KAPI_CREATE_PARTITIONS, "CreatePartitions", 0, 1, 2 },
};

#define NAPIS (sizeof table / sizeof table[0])

const mk_kapi *mk_kapi_list(size_t *n)
{
	*n = NAPIS;
	return table;
}

static bool key_before(const void *ctx, size_t i)
{
	return table[i].key < *(const int16_t *)ctx;
}

const mk_kapi *mk_kapi_find(int16_t key)
{
	size_t i = mk_lower_bound(NAPIS, key_before, &key);
	return i < NAPIS && table[i].key == key ? &table[i] : NULL;
}

bool mk_kapi_supported(int16_t key, int16_t version)
{
	const mk_kapi *a = mk_kapi_find(key);
	return a && version >= a->min_version && version <= a->max_version;
}

bool mk_kapi_is_flexible(int16_t key, int16_t version)
{
	const mk_kapi *a = mk_kapi_find(key);
	return a && a->first_flexible >= 0 && version >= a->first_flexible;
}

int mk_kapi_request_header_version(int16_t key, int16_t version)
{
	if (key == MK_KAPI_CONTROLLED_SHUTDOWN && version == 0)
		return 0;
	return mk_kapi_is_flexible(key, version) ? 2 : 1;
}

int mk_kapi_response_header_version(int16_t key, int16_t version)
{
	if (key == MK_KAPI_API_VERSIONS)
		return 0;
	return mk_kapi_is_flexible(key, version) ? 1 : 0;
}

bool mk_kapi_read_request_header(mk_kreader *r, mk_kreq_header *h)
{
	mk_kreader peek = *r;
	int16_t key = mk_kr_int16(&peek);
	int16_t version = mk_kr_int16(&peek);
	return mk_kr_request_header(r, mk_kapi_request_header_version(key, version), h);
}

/* ---- error codes ------------------------------------------------------ */

const char *mk_kerr_name(int16_t code)
{
	switch (code) {
#define MK_KERR_CASE(name, num) case num: return #name;
	MK_KERR_LIST(MK_KERR_CASE)
#undef MK_KERR_CASE
	}
	return NULL;
}

static const int16_t codes[MK_ERR__COUNT] = {
	[MK_OK] = MK_KERR_NONE,
	[MK_UNKNOWN_TOPIC_OR_PARTITION] = MK_KERR_UNKNOWN_TOPIC_OR_PARTITION,
	[MK_UNKNOWN_BROKER] = MK_KERR_BROKER_NOT_AVAILABLE,
	[MK_UNKNOWN_MEMBER_ID] = MK_KERR_UNKNOWN_MEMBER_ID,
	[MK_GROUP_ID_NOT_FOUND] = MK_KERR_GROUP_ID_NOT_FOUND,
	[MK_UNKNOWN_PRODUCER_ID] = MK_KERR_UNKNOWN_PRODUCER_ID,
	[MK_TRANSACTIONAL_ID_NOT_FOUND] = MK_KERR_TRANSACTIONAL_ID_NOT_FOUND,
	[MK_TOPIC_ALREADY_EXISTS] = MK_KERR_TOPIC_ALREADY_EXISTS,
	[MK_PRODUCER_ALREADY_EXISTS] = MK_KERR_UNKNOWN_SERVER_ERROR,
	[MK_TRANSACTION_ALREADY_EXISTS] = MK_KERR_UNKNOWN_SERVER_ERROR,
	[MK_INVALID_TOPIC_EXCEPTION] = MK_KERR_INVALID_TOPIC_EXCEPTION,
	[MK_INVALID_REQUEST] = MK_KERR_INVALID_REQUEST,
	[MK_INVALID_CONFIG] = MK_KERR_INVALID_CONFIG,
	[MK_INVALID_RECORD] = MK_KERR_INVALID_RECORD,
	[MK_CORRUPT_MESSAGE] = MK_KERR_CORRUPT_MESSAGE,
	[MK_OFFSET_OUT_OF_RANGE] = MK_KERR_OFFSET_OUT_OF_RANGE,
	[MK_MESSAGE_TOO_LARGE] = MK_KERR_MESSAGE_TOO_LARGE,
	[MK_LEADER_NOT_AVAILABLE] = MK_KERR_LEADER_NOT_AVAILABLE,
	[MK_BROKER_NOT_AVAILABLE] = MK_KERR_BROKER_NOT_AVAILABLE,
	[MK_NOT_LEADER_OR_FOLLOWER] = MK_KERR_NOT_LEADER_OR_FOLLOWER,
	[MK_NOT_ENOUGH_REPLICAS] = MK_KERR_NOT_ENOUGH_REPLICAS,
	[MK_NOT_ENOUGH_REPLICAS_AFTER_APPEND] = MK_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
	[MK_REQUEST_TIMED_OUT] = MK_KERR_REQUEST_TIMED_OUT,
	[MK_FENCED_LEADER_EPOCH] = MK_KERR_FENCED_LEADER_EPOCH,
	[MK_PRODUCER_FENCED] = MK_KERR_PRODUCER_FENCED,
	[MK_ILLEGAL_GENERATION] = MK_KERR_ILLEGAL_GENERATION,
	[MK_OUT_OF_ORDER_SEQUENCE_NUMBER] = MK_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
	[MK_INELIGIBLE_REPLICA] = MK_KERR_INELIGIBLE_REPLICA,
	[MK_TOPIC_AUTHORIZATION_FAILED] = MK_KERR_TOPIC_AUTHORIZATION_FAILED,
	[MK_REBALANCE_IN_PROGRESS] = MK_KERR_REBALANCE_IN_PROGRESS,
	[MK_NON_EMPTY_GROUP] = MK_KERR_NON_EMPTY_GROUP,
	[MK_GROUP_ALREADY_EXISTS] = MK_KERR_UNKNOWN_SERVER_ERROR,
	[MK_CONCURRENT_TRANSACTIONS] = MK_KERR_CONCURRENT_TRANSACTIONS,
	[MK_INVALID_TXN_STATE] = MK_KERR_INVALID_TXN_STATE,
	[MK_KAFKA_STORAGE_ERROR] = MK_KERR_KAFKA_STORAGE_ERROR,
	[MK_INTERRUPTED] = MK_KERR_REQUEST_TIMED_OUT,
	[MK_OUT_OF_MEMORY] = MK_KERR_UNKNOWN_SERVER_ERROR,
};

int16_t mk_kerr_from(mk_err err)
{
	/* A code the table lacks (a core error added later) is 0 there:
	 * never answer NONE for a failure. */
	if ((unsigned)err >= MK_ERR__COUNT || (err != MK_OK && !codes[err]))
		return MK_KERR_UNKNOWN_SERVER_ERROR;
	return codes[err];
}
