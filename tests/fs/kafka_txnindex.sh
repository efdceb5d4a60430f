#!/usr/bin/env bash
# kafka_txnindex.sh — Kafka's .txnindex files (docs/filesystem.md, "Kafka's
# files"): a segment holding an abort marker has a NNN.txnindex of Kafka's
# 34-byte AbortedTxn entries (version, producerId, firstOffset, lastOffset,
# lastStableOffset), decoded here with Python's struct, independently of
# the daemon; the LSO field is the earliest transaction still open; ls
# lists the file only where it exists; :dump prints kafka-dump-log's lines;
# a lost file is rewritten at the next open, an entry of a tail a crash
# lost goes with it, compaction keeps the entries of the markers it keeps.
#
# Manual clock; no timing.
. "$(dirname "$0")/lib.sh"

SEG=00000000000000000000
T=$MNT/transactions
# The entries of a .txnindex file, one "PID FIRST LAST LSO" line each
# (version 0 checked).
entries() {
	"$MK_PYTHON" -c '
import struct, sys
data = open(sys.argv[1], "rb").read()
assert len(data) % 34 == 0, "not whole 34-byte entries: %d bytes" % len(data)
for i in range(0, len(data), 34):
    v, pid, first, last, lso = struct.unpack(">hqqqq", data[i:i + 34])
    assert v == 0, "version %d" % v
    print(pid, first, last, lso)
' "$1"
}

mk_mount '[cluster]
clock = manual'
mk_ctl "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0
D=$DATA/broker-1/t-0
mk_mkdir "$T/a" && mk_mkdir "$T/b" || bail "mkdir transactions a, b"
A=$(mk_read "$T/a/producer_id")
B=$(mk_read "$T/b/producer_id")

# a at 0, b at 1 (still open), a aborted: marker at 2, LSO then b's 1;
# b commits at 3; a again at 4, aborted at 5 with nothing open: LSO 6.
mk_write_e "$P/append:txn=a" 'a1\n' && mk_write_e "$P/append:txn=b" 'b1\n' || bail "appends"
assert_true "no .txnindex before an abort" test ! -e "$D/$SEG.txnindex"
assert_eq "$SEG.index $SEG.log $SEG.timeindex" "$(ls "$P/segments" | tr '\n' ' ' | sed 's/ $//')" \
	"ls segments/ lists no .txnindex where there is none"
mk_write "$T/a/abort" 1 && mk_write "$T/b/commit" 1 || bail "abort a, commit b"
mk_write_e "$P/append:txn=a" 'a2\n' && mk_write "$T/a/abort" 1 || bail "a again, aborted"
assert_eq "6" "$(mk_read "$P/lso")" "every transaction ended: LSO 6"
assert_eq "$(printf '%s\n' "$A 0 2 1" "$A 4 5 6")" "$(entries "$D/$SEG.txnindex")" \
	"two AbortedTxn entries: producer a, first and last offsets, the LSO once each ended"
assert_eq "$SEG.index $SEG.log $SEG.timeindex $SEG.txnindex" \
	"$(ls "$P/segments" | tr '\n' ' ' | sed 's/ $//')" "ls segments/ lists the .txnindex"
assert_files_eq "$D/$SEG.txnindex" "$P/segments/$SEG.txnindex" "segments/N.txnindex reads the file"
assert_eq "Dumping $SEG.txnindex
version: 0 producerId: $A firstOffset: 0 lastOffset: 2 lastStableOffset: 1
version: 0 producerId: $A firstOffset: 4 lastOffset: 5 lastStableOffset: 6" \
	"$(mk_read "$P/segments/$SEG.txnindex:dump")" ":dump prints kafka-dump-log's lines"
assert_eq "b1" "$(mk_read "$P/records:committed")" "read_committed hides a's records"
assert_fails_with ENOENT mk_read "$P/segments/$SEG.txnindex:txt"

# ---- rewritten at open ---------------------------------------------------------
cp "$D/$SEG.txnindex" "$MK_TMP/expected"
mk_ctl flush || bail "flush"
mk_unmount
rm "$D/$SEG.txnindex"
mk_mount
assert_files_eq "$MK_TMP/expected" "$D/$SEG.txnindex" "a removed .txnindex is written again at open, the same bytes"
assert_eq "b1" "$(mk_read "$P/records:committed")" "  ... and read_committed still hides a's records"
# A stray entry (of no marker the log holds) is dropped at the next open.
cat "$MK_TMP/expected" "$MK_TMP/expected" >"$D/$SEG.txnindex"
mk_unmount
mk_mount
assert_files_eq "$MK_TMP/expected" "$D/$SEG.txnindex" "a .txnindex with stray entries is set right at open"

# ---- a crash that loses the tail loses its entry -------------------------------------
mk_ctl flush || bail "flush"
mk_write_e "$P/append:txn=a" 'a3\n' && mk_write "$T/a/abort" 1 || bail "a a third time, aborted"
assert_eq "3" "$(entries "$D/$SEG.txnindex" | wc -l)" "the third abort's entry is appended"
mk_write "$MNT/brokers/1/crash" 1 || bail "crash 1"
mk_write "$MNT/brokers/1/restart" 1 || bail "restart 1"
assert_eq "6" "$(mk_read "$P/leo")" "the crash lost the unflushed transaction and its marker"
assert_files_eq "$MK_TMP/expected" "$D/$SEG.txnindex" "  ... and the restart dropped its entry"

# ---- DeleteRecords past the marker: the entries stay with their segment ----------
assert_ok "delete-records 6" mk_write "$P/delete-records" 6
mk_unmount
mk_mount
assert_files_eq "$MK_TMP/expected" "$D/$SEG.txnindex" \
	"after DeleteRecords past both markers and a remount the segment's .txnindex is whole (Kafka drops entries only with their segment)"
assert_eq "" "$(mk_read "$P/records:committed")" "  ... and nothing below the log start is read"

# ---- compaction keeps the markers, and so the entries ------------------------------
mk_ctl "create-topic c cleanup.policy=compact segment.bytes=100" || bail "create-topic c"
C=$MNT/topics/c/0
mk_write_e "$C/append:tsv" 'k\t1\n' || bail "k=1"
mk_write_e "$C/append:tsv:txn=a" 'k\t2\n' && mk_write "$T/a/abort" 1 || bail "k=2 aborted"
for v in 3 4 5; do mk_write_e "$C/append:tsv" "k\\t$v\\n" || bail "k=$v"; done
before=$(entries "$DATA/broker-1/c-0/00000000000000000002.txnindex")
assert_eq "$A 1 2 3" "$before" "the marker's segment (base 2) holds the entry"
assert_ok "/ctl compact" mk_ctl compact
assert_eq "4 5" "$(mk_read "$C/records:tsv" | cut -f4 | tr '\n' ' ' | sed 's/ $//')" \
	"compaction kept the last k of the cleaned segments (and the active one's)"
got=$(for f in "$DATA"/broker-1/c-0/*.txnindex; do entries "$f"; done)
assert_eq "$before" "$got" "after compaction the entry is still there, once"
mk_unmount

# ---- a follower writes the same entries ------------------------------------------
# Auto mode: the markers wait for the follower's fetcher, which appends
# them as the leader did (note_append), entries included.
rm -rf "$DATA" && mkdir -p "$DATA"
mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
[replication]
mode = auto'
mk_ctl "create-topic r" || bail "create-topic r"
mk_mkdir "$T/a" || bail "mkdir transactions/a"
mk_write_e "$MNT/topics/r/0/append:txn=a" 'r1\n' && mk_write "$T/a/abort" 1 || bail "r1 aborted"
L=$(mk_read "$MNT/topics/r/0/leader")
F=$((3 - L))
same() { cmp -s "$DATA/broker-$L/r-0/$SEG.txnindex" "$DATA/broker-$F/r-0/$SEG.txnindex"; }
assert_true "the follower (broker $F) has the leader's .txnindex, byte for byte" mk_wait_for 20 same
assert_eq "$(mk_read "$T/a/producer_id") 0 1 2" "$(entries "$DATA/broker-$F/r-0/$SEG.txnindex")" \
	"  ... one entry: the transaction 0-1, LSO 2"
mk_unmount
