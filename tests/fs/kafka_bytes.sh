#!/usr/bin/env bash
# kafka_bytes.sh — the segments the daemon writes are Kafka's RecordBatch v2,
# read by an independent decoder: kafka-python 2.0's record classes
# (tests/compat/kafka_decode.py, Debian's python3-kafka). Keys, null and
# empty keys and values, headers with null values, an idempotent producer,
# a transaction committed and one aborted (Kafka's control batches), a
# compacted topic with gaps: every batch of every log in the data
# directory decodes with a valid CRC-32C, and the records equal what the
# mount reads. Then every codec of compression.type, and LogAppendTime.
. "$(dirname "$0")/lib.sh"

KPY=/usr/bin/python3
DEC="$MKFS_SRC/tests/compat/kafka_decode.py"
"$KPY" -c 'import kafka.record' 2>/dev/null ||
	bail "kafka-python (python3-kafka, scripts/install-deps.sh) is not installed"

mk_mount '[cluster]
clock = manual'
mk_ctl "create-topic b" || bail "create-topic b"
P=$MNT/topics/b/0

# ---- keys, nulls, empties, headers ---------------------------------------------
assert_ok "tsv: key, value, headers (one with a null value)" \
	mk_write_e "$P/append:tsv" 'k1\tv1\th1=x\th2=\\N\n'
assert_ok "tsv: null key (a value alone)" mk_write_e "$P/append:tsv" 'only-value\n'
assert_ok "tsv: empty key" mk_write_e "$P/append:tsv" '\tv-empty-key\n'
assert_ok "tsv: null value, empty value" mk_write_e "$P/append:tsv" 'k2\t\\N\nk3\t\n'
assert_ok "plain: three lines, one batch" mk_write_e "$P/append" 'p1\np2\n\n'

# ---- an idempotent producer ------------------------------------------------------
assert_ok "mkdir /producers/p" mk_mkdir "$MNT/producers/p"
assert_ok "append:producer=p" mk_write_e "$P/append:producer=p" 'i1\ni2\n'
assert_ok "append:producer=p again" mk_write_e "$P/append:producer=p" 'i3\n'

# ---- transactions: a commit and an abort -------------------------------------------
assert_ok "mkdir /transactions/tx" mk_mkdir "$MNT/transactions/tx"
assert_ok "append:txn=tx" mk_write_e "$P/append:txn=tx" 't1\nt2\n'
assert_ok "commit" mk_write "$MNT/transactions/tx/commit" "1"
assert_ok "append:txn=tx" mk_write_e "$P/append:txn=tx" 't3\n'
assert_ok "abort" mk_write "$MNT/transactions/tx/abort" "1"

# ---- a compacted topic: gaps ---------------------------------------------------------
mk_ctl "create-topic c segment.bytes=100 cleanup.policy=compact" || bail "create-topic c"
C=$MNT/topics/c/0
# One batch of three records (offsets 0-2), then a, b and z again: the
# cleaner keeps only c of the first batch, whose base offset stays 0.
mk_write_e "$C/append:tsv" 'a\t1\nb\t1\nc\t1\n' || fail "a b c to c"
for kv in 'a\t2\th=1' 'b\t\\N' 'z\tlast'; do
	mk_write_e "$C/append:tsv" "$kv\\n" || fail "append $kv to c"
done
assert_ok "/ctl compact" mk_ctl compact
assert_eq "2 3 4 5" "$(mk_read "$C/records:tsv" | cut -f1 | tr '\n' ' ' | sed 's/ $//')" \
	"compaction left gaps at 0 and 1"
mk_ctl flush || fail "/ctl flush"

# ---- decode with kafka-python --------------------------------------------------------
mk_read "$P/records@0:json" >"$MK_TMP/b.json"
out=$("$KPY" "$DEC" compare "$MK_TMP/b.json" "$DATA"/broker-1/b-0/*.log)
note "b: $out"
assert_match "equal=14( |$)" "$out" "kafka-python reads topic b's 14 records as the mount does (keys, nulls, empties, headers)"
assert_match "commit=1 " "$out" "one COMMIT control batch (key version 0, type 1)"
assert_match "abort=1 " "$out" "one ABORT control batch (key version 0, type 0)"
assert_match "idempotent=4 " "$out" "the producer's two batches and the transaction's two carry a producer id"
assert_match "transactional=2( |$)" "$out" "two transactional data batches"
assert_match "gaps=0 " "$out" "no gaps in topic b"

mk_read "$C/records@0:json" >"$MK_TMP/c.json"
out=$("$KPY" "$DEC" compare "$MK_TMP/c.json" "$DATA"/broker-1/c-0/*.log)
note "c: $out"
assert_match "equal=4( |$)" "$out" "kafka-python reads the compacted topic's 4 records as the mount does"
assert_match "gaps=1 " "$out" "a compacted batch keeps its base offset with its first records gone (Kafka's v2 rule)"

# ---- every codec, and LogAppendTime -------------------------------------------------
# A file append compresses by the topic's compression.type; reads
# decompress; kafka-python's codecs (python3-lz4, -snappy, -zstandard)
# read the stored batches. 300 records of 100 bytes compress well.
"$MK_PYTHON" -c '
import sys
with open(sys.argv[1], "w") as f:
    for i in range(300):
        f.write("k%d\t%s\th=%d\n" % (i % 7, ("record %05d " % i) * 8 + "x" * 4, i))
' "$MK_TMP/recs.tsv"
for codec in gzip snappy lz4 zstd; do
	mk_ctl "create-topic z-$codec compression.type=$codec" || bail "create-topic z-$codec"
	Z=$MNT/topics/z-$codec/0
	assert_ok "$codec: append:tsv of 300 records" mk_write_file "$Z/append:tsv" "$MK_TMP/recs.tsv"
	assert_eq "$(cat "$MK_TMP/recs.tsv")" "$(mk_read "$Z/records:tsv" | cut -f3-)" \
		"$codec: records:tsv reads back every key, value and header"
	mk_read "$Z/records@0:json" >"$MK_TMP/z.json"
	out=$("$KPY" "$DEC" compare "$MK_TMP/z.json" "$DATA"/broker-1/z-$codec-0/*.log)
	note "z-$codec: $out"
	assert_match "codec_$codec=1 " "$out" "$codec: the batch is stored $codec-compressed (kafka-python's attributes)"
	assert_match "equal=300( |$)" "$out" "$codec: kafka-python decompresses and reads the 300 records as the mount does"
	size=$(stat -c %s "$DATA"/broker-1/z-$codec-0/00000000000000000000.log)
	assert_true "$codec: the segment ($size bytes) is smaller than its input ($(stat -c %s "$MK_TMP/recs.tsv"))" \
		test "$size" -lt "$(stat -c %s "$MK_TMP/recs.tsv")"
done
# Compaction keeps a batch's codec: a compressed batch that loses records
# is stored compressed again.
mk_ctl "create-topic cz compression.type=lz4 cleanup.policy=compact segment.bytes=100" ||
	bail "create-topic cz"
X=$(printf 'x%.0s' $(seq 200))
mk_write_e "$MNT/topics/cz/0/append:tsv" "a\\t$X\\nb\\t$X\\nc\\t$X\\n" || fail "a b c to cz"
mk_write_e "$MNT/topics/cz/0/append:tsv" "a\\t2\\n" || fail "a=2 to cz"
mk_write_e "$MNT/topics/cz/0/append:tsv" "z\\tlast\\n" || fail "z to cz"
assert_ok "/ctl compact" mk_ctl compact
mk_read "$MNT/topics/cz/0/records@0:json" >"$MK_TMP/cz.json"
out=$("$KPY" "$DEC" compare "$MK_TMP/cz.json" "$DATA"/broker-1/cz-0/*.log)
note "cz: $out"
assert_match "codec_lz4=1 .*equal=4 gaps=1 " "$out" \
	"compaction: the lz4 batch lost record 0, kept its base offset and stayed lz4 (kafka-python reads it)"

mk_ctl "create-topic lat message.timestamp.type=LogAppendTime" || bail "create-topic lat"
mk_write "$MNT/clock" 5000 || fail "clock 5000"
mk_write_e "$MNT/topics/lat/0/append" 'a\nb\n' || fail "append to lat"
assert_eq $'0\t5000\n1\t5000' "$(mk_read "$MNT/topics/lat/0/records:tsv" | cut -f1,2)" \
	"LogAppendTime: each record reads the leader's append time"
out=$("$KPY" -c '
import sys
from kafka.record import MemoryRecords
b = MemoryRecords(open(sys.argv[1], "rb").read()).next_batch()
print(b.timestamp_type, b.max_timestamp, b.validate_crc(), [r.timestamp for r in b])
' "$DATA"/broker-1/lat-0/00000000000000000000.log)
assert_eq "1 5000 True [5000, 5000]" "$out" "kafka-python: timestamp type LogAppendTime (1), maxTimestamp 5000, CRC valid"

# ---- segments/F:dump: kafka-dump-log's lines -----------------------------------------
SEG=00000000000000000000
dump=$(mk_read "$P/segments/$SEG.log:dump")
assert_eq "Dumping $SEG.log" "$(head -n 1 <<<"$dump")" "the dump starts as kafka-dump-log's"
assert_eq "Log starting offset: 0" "$(sed -n 2p <<<"$dump")" "then the segment's base offset"
assert_eq "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 0 size: $(mk_read "$P/batches" | head -n 1 | cut -d' ' -f4) magic: 2 compresscodec: none crc: $((16#$(mk_read "$P/batches" | head -n 1 | cut -d' ' -f14))) isvalid: true" \
	"$(sed -n 3p <<<"$dump")" "a batch line: Kafka's field names, the CRC-32C in decimal"
assert_eq "| offset: 0 CreateTime: 0 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [h1,h2] key: k1 payload: v1" \
	"$(sed -n 4p <<<"$dump")" "a record line: sizes, header keys, key and payload"
assert_match "endTxnMarker: COMMIT coordinatorEpoch: 0" "$dump" "the COMMIT marker's record line"
assert_match "endTxnMarker: ABORT coordinatorEpoch: 0" "$dump" "the ABORT marker's record line"
assert_match "producerId: [0-9]+ producerEpoch: 0 .* isTransactional: true isControl: true" "$dump" \
	"a control batch's line"
assert_eq "$(mk_read "$P/batches" | wc -l)" "$(grep -c '^baseOffset: ' <<<"$dump")" "one batch line per batch"
assert_eq "14" "$(grep '^| offset: ' <<<"$dump" | grep -vc endTxnMarker)" "one record line per record"
zd=$(mk_read "$MNT/topics/z-zstd/0/segments/$SEG.log:dump")
assert_match "compresscodec: zstd crc: [0-9]+ isvalid: true" "$zd" "a zstd batch's line names its codec"
assert_eq "300" "$(grep -c '^| offset: ' <<<"$zd")" "the deep iteration decompresses its 300 records"
idx=$(mk_read "$P/segments/$SEG.index:dump")
assert_eq $'Dumping '"$SEG"$'.index\noffset: 0 position: 0' "$idx" "the .index dump: offset and position per entry"
assert_match $'^Dumping '"$SEG"$'.timeindex\ntimestamp: 0 offset: 0' "$(mk_read "$P/segments/$SEG.timeindex:dump")" \
	"the .timeindex dump: timestamp and offset per entry"
assert_fails_with ENOENT mk_read "$P/segments/00000000000000000999.log:dump"

logs=$(find "$DATA" -name '*.log' -size +0 | sort)
n=$(printf '%s\n' "$logs" | wc -l)
out=$(printf '%s\n' "$logs" | xargs "$KPY" "$DEC" check)
assert_ok "every one of the $n non-empty .log files in the data directory decodes with valid CRCs ($out)" \
	test -n "$out"
