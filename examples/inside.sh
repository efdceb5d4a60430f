#!/usr/bin/env bash
# inside.sh — follow one batch from the append to the bytes of a segment,
# to its sparse-index entry, to a follower's copy (chapter 2's log, chapter
# 5's follower fetch, seen through /topics/T/P/batches, segments/, the
# decoded index N.index:txt and /brokers/B/logs/T/P).
#
# Two brokers, replication factor 2, manual clock (so timestamps are known)
# and manual replication (followers fetch when we say so). The appends use
# acks=1: the leader alone acknowledges, which is what lets one shell run
# this lab. (With the default acks=all the append would wait for broker 2
# to fetch: `echo > brokers/fetch` from another shell.)
#
# Run it: bash examples/inside.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
show() { echo "\$ $*"; "$@"; }
run() { echo "\$ $1"; eval "$1"; }

mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
clock = manual
[log]
index.interval.bytes = 200'
cd "$MNT"
run 'echo 1700000000000 > clock'
run 'mkdir topics/orders'

say "one write to a partition append file is one batch: three records"
# /usr/bin/printf writes its whole output in one write(2); bash's builtin
# would write line by line (three batches).
run '/usr/bin/printf "alice\nbob\ncarol\n" > topics/orders/0/append:acks=1'
show cat topics/orders/0/batches
read -r base last count bytes file pos epoch pid pepoch bseq txn control maxts crc codec \
	< topics/orders/0/batches
echo "base=$base last=$last count=$count bytes=$bytes file=$file position=$pos"
echo "leader_epoch=$epoch producer_id=$pid max_timestamp=$maxts crc=$crc compresscodec=$codec"
assert_eq "0 2 3 00000000000000000000.log 0 0 -1" \
	"$base $last $count $file $pos $epoch $pid" \
	"one batch: offsets 0-2, three records, at byte 0 of the first segment, epoch 0"
assert_eq "1700000000000" "$maxts" "its max timestamp is the manual clock's time"

say "the same batch as JSON"
show cat topics/orders/0/batches:json
assert_match "\"crc\":\"$crc\"" "$(cat topics/orders/0/batches:json)" "JSON says the same CRC"

say "the batch's bytes in the segment: $bytes bytes at position $pos of $file"
run "xxd -s $pos -l $bytes topics/orders/0/segments/$file"
frame=$MK_TMP/frame
dd if="topics/orders/0/segments/$file" of="$frame" bs=1 skip="$pos" count="$bytes" status=none
# Kafka's RecordBatch v2 (DefaultRecordBatch), big-endian, field by field.
num() { echo $((16#$(xxd -p -s "$1" -l "$2" "$frame" | tr -d '\n'))); }
echo "baseOffset            $(num 0 8)     bytes 0-7, stamped by the leader, outside the CRC"
echo "batchLength           $(num 8 4)    bytes 8-11: what follows it (the batch is batchLength + 12)"
echo "partitionLeaderEpoch  $(num 12 4)     bytes 12-15, stamped by the leader, outside the CRC"
echo "magic                 $(num 16 1)     byte 16: RecordBatch v2"
echo "crc                   $(xxd -p -s 17 -l 4 "$frame")  bytes 17-20: CRC-32C of bytes 21 to the end"
echo "attributes            $(num 21 2)     bytes 21-22: codec 0 (none), CreateTime, not transactional, not control"
echo "lastOffsetDelta       $(num 23 4)     bytes 23-26: the last record is baseOffset + 2"
echo "baseTimestamp         $(num 27 8)  bytes 27-34"
echo "maxTimestamp          $(num 35 8)  bytes 35-42"
echo "producerId            $(xxd -p -s 43 -l 8 "$frame")  bytes 43-50: -1, no producer id"
echo "producerEpoch, baseSequence: $(xxd -p -s 51 -l 6 "$frame")  bytes 51-56: -1, -1"
echo "recordsCount          $(num 57 4)     bytes 57-60; the records start at byte 61"
assert_eq "2" "$(num 16 1)" "byte 16 is the magic, 2"
assert_eq "$((bytes - 12))" "$(num 8 4)" "batchLength counts the bytes after it"
assert_eq "0 0" "$(num 0 8) $(num 12 4)" "the leader stamped base offset 0 and epoch 0 before the CRC'd region"
assert_eq "$crc" "$(xxd -p -s 17 -l 4 "$frame")" "then the CRC that batches shows"
assert_eq "2 1700000000000 3" "$(num 23 4) $(num 27 8) $(num 57 4)" \
	"lastOffsetDelta 2, baseTimestamp the clock's time, 3 records"

say "the first record, byte by byte (zigzag varints: the value 2n is n, 2n-1 is -n)"
run "xxd -s 61 -l 12 $frame"
echo "16  length 11 (the bytes after it)"
echo "00  attributes"
echo "00  timestampDelta 0 (baseTimestamp + 0)"
echo "00  offsetDelta 0 (baseOffset + 0)"
echo "01  keyLength -1: a null key"
echo "0a  valueLength 5, then the value: $(xxd -p -s 66 -l 5 "$frame") = alice"
echo "00  headers count 0"
assert_eq "1600000001 0a 616c696365 00" \
	"$(xxd -p -s 61 -l 5 "$frame") $(xxd -p -s 66 -l 1 "$frame") $(xxd -p -s 67 -l 5 "$frame") $(xxd -p -s 72 -l 1 "$frame")" \
	"the first record: length 11, attributes, deltas 0, null key, value alice, no headers"

say "the CRC-32C protects everything from the attributes on: recompute it"
echo '$ python3 -c "...crc32c(batch[21:])" FRAME    (Castagnoli, as Kafka'"'"'s Crc32C)'
mine=$("$MK_PYTHON" -c "$MK_BATCH_WALK"'
d = open(sys.argv[1], "rb").read()
print("%08x" % crc32c(d[21:]))' "$frame")
echo "$mine"
assert_eq "$crc" "$mine" "CRC-32C of bytes 21 on is the stored CRC"
assert_true "the values are in the batch" grep -q carol "$frame"
if /usr/bin/python3 -c 'import kafka.record' 2>/dev/null; then
	say "an independent reader: kafka-python's own record classes"
	echo '$ python3 -c "from kafka.record import MemoryRecords; ..." segments/'"$file"
	/usr/bin/python3 -c '
import sys
from kafka.record import MemoryRecords
b = MemoryRecords(open(sys.argv[1], "rb").read()).next_batch()
print("crc valid:", b.validate_crc(), "records:", [(r.offset, r.value.decode()) for r in b])
' "topics/orders/0/segments/$file" | tee "$MK_TMP/kp"
	assert_eq "crc valid: True records: [(0, 'alice'), (1, 'bob'), (2, 'carol')]" "$(cat "$MK_TMP/kp")" \
		"kafka-python reads the segment as a Kafka broker's"
fi

say "more batches; the sparse index gets an entry every index.interval.bytes (200)"
for who in dave erin frank grace heidi; do
	run "echo $who > topics/orders/0/append:acks=1"
done
show cat topics/orders/0/batches
show cat topics/orders/0/segments/00000000000000000000.index:txt
echo "(Kafka's offset index: OFFSET POSITION, the absolute offset of a batch and its byte position"
echo " in 00000000000000000000.log)"
show xxd topics/orders/0/segments/00000000000000000000.index
echo "(the raw file, 8 bytes an entry: u32 offset relative to the segment base, u32 position, big-endian)"
show cat topics/orders/0/segments/00000000000000000000.timeindex:txt
echo "(Kafka's time index: TIMESTAMP OFFSET, the largest record timestamp so far and the batch that"
echo " first reached it; raw, 12 bytes an entry: i64 timestamp, u32 relative offset)"
tidx=$(cat topics/orders/0/segments/00000000000000000000.timeindex:txt)
assert_eq "0" "$(head -n 1 <<<"$tidx" | cut -d' ' -f2)" "the first batch has a time entry too"
assert_eq "$(( $(wc -l <<<"$tidx") * 12 ))" "$(stat -c %s topics/orders/0/segments/00000000000000000000.timeindex)" \
	"the .timeindex holds 12 bytes an entry, nothing else"
idx=$(cat topics/orders/0/segments/00000000000000000000.index:txt)
assert_eq "0 0" "$(head -n 1 <<<"$idx" | cut -d' ' -f1,2)" "the first batch always has an entry"
assert_true "more than one entry: the index is sparse, not empty" test "$(wc -l <<<"$idx")" -ge 2
ok=1
while read -r o p; do
	awk -v o="$o" -v p="$p" '$1 == o && $6 == p { f = 1 } END { exit !f }' topics/orders/0/batches || ok=0
done <<<"$idx"
assert_eq 1 "$ok" "every index entry is the offset and position of a batch"

say "a lookup: the largest entry at or below the offset, then scan forward"
target=6
read -r eo ep < <(awk -v t=$target '$1 <= t { o = $1; p = $2 } END { print o, p }' <<<"$idx")
echo "offset $target: start at the entry ($eo, byte $ep), scan batches from there"
show cat topics/orders/0/batches@$target
assert_match "^$target $target 1 [0-9]+ 00000000000000000000.log [0-9]+ " \
	"$(cat topics/orders/0/batches@$target)" "batches@$target starts with the batch holding offset $target"

say "the follower, broker 2, has fetched nothing: look at its own log"
show ls brokers/2/logs/orders/0
show cat brokers/2/logs/orders/0/leo brokers/2/logs/orders/0/hw
assert_eq "0 0" "$(cat brokers/2/logs/orders/0/leo) $(cat brokers/2/logs/orders/0/hw)" "broker 2: leo 0, hw 0"
show cat topics/orders/0/hw
assert_eq "0" "$(cat topics/orders/0/hw)" "the HW waits for broker 2 (it is in the ISR)"

say "one fetch round: broker 2 copies the batches, byte for byte"
run 'echo > brokers/fetch'
show cat brokers/2/logs/orders/0/batches
assert_eq "$(cat topics/orders/0/batches)" "$(cat brokers/2/logs/orders/0/batches)" \
	"broker 2's batches: same offsets, positions, epochs and CRCs"
run "cmp topics/orders/0/segments/$file brokers/2/logs/orders/0/segments/$file && echo same bytes"
assert_true "broker 2's segment is the leader's, byte for byte" \
	cmp -s "topics/orders/0/segments/$file" "brokers/2/logs/orders/0/segments/$file"
show cat brokers/2/logs/orders/0/records@0:max=3
assert_eq "alice bob carol" "$(cat brokers/2/logs/orders/0/records@0:max=3 | tr '\n' ' ' | sed 's/ $//')" \
	"broker 2 reads the first batch's records from its own log"

say "the follower learns the HW from the fetch responses: one round late"
show cat brokers/2/logs/orders/0/leo brokers/2/logs/orders/0/hw topics/orders/0/hw
assert_eq "8 0 8" "$(cat brokers/2/logs/orders/0/leo) $(cat brokers/2/logs/orders/0/hw) $(cat topics/orders/0/hw)" \
	"broker 2 has everything, the leader's HW moved to 8, broker 2 still knows 0"
run 'echo > brokers/fetch'
show cat brokers/2/logs/orders/0/hw
assert_eq "8" "$(cat brokers/2/logs/orders/0/hw)" "after the next fetch broker 2 knows HW 8"
show cat brokers/2/logs/orders/0/epochs
assert_eq "0 0" "$(cat brokers/2/logs/orders/0/epochs)" "its epoch cache: epoch 0 starts at offset 0"

cd /
mk_unmount
