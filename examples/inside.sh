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
read -r base last count bytes file pos epoch pid pepoch bseq txn control maxts crc \
	< topics/orders/0/batches
echo "base=$base last=$last count=$count bytes=$bytes file=$file position=$pos"
echo "leader_epoch=$epoch producer_id=$pid max_timestamp=$maxts crc=$crc"
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
echo "magic:          $(head -c 4 "$frame")"
echo "payload length: $((16#$(xxd -p -s 4 -l 4 "$frame")))   (the frame is 24 header bytes + the payload)"
echo "base offset:    $((16#$(xxd -p -s 8 -l 8 "$frame")))   (stamped by the leader, outside the CRC)"
echo "leader epoch:   $((16#$(xxd -p -s 16 -l 4 "$frame")))"
echo "crc field:      $(xxd -p -s 20 -l 4 "$frame")"
echo "flags:          $((16#$(xxd -p -s 24 -l 2 "$frame")))   (the payload starts here)"
assert_eq "MKF2" "$(head -c 4 "$frame")" "a frame starts with the magic MKF2"
assert_eq "$((bytes - 24))" "$((16#$(xxd -p -s 4 -l 4 "$frame")))" "then the payload length"
assert_eq "0 0" "$((16#$(xxd -p -s 8 -l 8 "$frame"))) $((16#$(xxd -p -s 16 -l 4 "$frame")))" \
	"the leader stamped base offset 0 and epoch 0 before the CRC'd payload"
assert_eq "$crc" "$(xxd -p -s 20 -l 4 "$frame")" "then the CRC that batches shows"

say "the CRC protects the payload: recompute it"
echo '$ python3 -c "import zlib,sys; d=open(sys.argv[1],\"rb\").read(); print(\"%08x\" % zlib.crc32(d[24:]))" FRAME'
mine=$("$MK_PYTHON" -c 'import zlib, sys; d = open(sys.argv[1], "rb").read(); print("%08x" % zlib.crc32(d[24:]))' "$frame")
echo "$mine"
assert_eq "$crc" "$mine" "CRC32 of the payload is the stored CRC"
assert_true "the values are in the payload" grep -q carol "$frame"

say "more batches; the sparse index gets an entry every index.interval.bytes (200)"
for who in dave erin frank grace heidi; do
	run "echo $who > topics/orders/0/append:acks=1"
done
show cat topics/orders/0/batches
show cat topics/orders/0/segments/00000000000000000000.index:txt
echo "(OFFSET POSITION MAX_TIMESTAMP: absolute offset, byte position in 00000000000000000000.log,"
echo " the largest record timestamp up to that batch: the same entries serve time lookups)"
show xxd topics/orders/0/segments/00000000000000000000.index
echo "(the raw file, 16 bytes an entry: i64 max timestamp, u32 offset relative to the segment base, u32 position, big-endian)"
idx=$(cat topics/orders/0/segments/00000000000000000000.index:txt)
assert_eq "0 0" "$(head -n 1 <<<"$idx" | cut -d' ' -f1,2)" "the first batch always has an entry"
assert_true "more than one entry: the index is sparse, not empty" test "$(wc -l <<<"$idx")" -ge 2
ok=1
while read -r o p ts; do
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
