/*
 * dump.h — `segments/F:dump`: a segment file printed as Kafka's
 * kafka-dump-log.sh --deep-iteration --print-data-log prints it
 * (org.apache.kafka.tools.DumpLogSegments), so that what a user reads
 * here can be set beside Kafka's documentation and a real broker's dump
 * line by line.
 *
 *   N.log        "Log starting offset: N", then per batch its line
 *                (baseOffset: ... lastOffset: ... count: ... position:
 *                ... CreateTime: ... size: ... magic: 2 compresscodec:
 *                none crc: ... isvalid: true) and per record its "| offset:
 *                ..." line with key and payload (markers: endTxnMarker and
 *                coordinatorEpoch instead); bytes after the last valid
 *                batch are "Found N invalid bytes at the end of N.log";
 *   N.index      "offset: O position: P" per entry;
 *   N.timeindex  "timestamp: T offset: O" per entry;
 *   N.txnindex   "version: 0 producerId: P firstOffset: F lastOffset: L
 *                lastStableOffset: S" per aborted transaction.
 *
 * Pure formatting over a file's bytes (the node reads them); nothing is
 * changed. The first line, as Kafka's, is "Dumping NAME".
 */
#ifndef MK_DUMP_H
#define MK_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

/* The kinds of file a dump reads, by suffix. */
typedef enum {
	MK_DUMP_LOG,
	MK_DUMP_INDEX,
	MK_DUMP_TIMEINDEX,
	MK_DUMP_TXNINDEX,
	MK_DUMP_UNKNOWN,
} mk_dump_kind;

/* The kind of file name (by its suffix). */
mk_dump_kind mk_dump_kind_of(const char *name);

/*
 * Print the dump of file `name` (its 20-digit base offset first), whose
 * bytes are buf[0, len), into out. MK_INVALID_REQUEST for a name that is
 * no segment file (why says so); damage is printed, as Kafka's tool
 * prints it, not an error.
 */
mk_err mk_dump(const char *name, const uint8_t *buf, size_t len,
	       mk_strbuf *out, mk_strbuf *why);

#endif
