#!/usr/bin/env bash
# raw_runway.sh — the active segment's runway (core/storage/segment.h: zeros
# past the frames, ahead of small appends) is no part of the log: the raw
# segments/ view of the active .log ends at the log's size and reads whole
# frames only, while DATA_DIR's file is longer; an unmount cuts the file.
. "$(dirname "$0")/lib.sh"

mk_mount '[cluster]
clock = manual'
assert_ok "create-topic r" mk_ctl "create-topic r"
P=$MNT/topics/r/0
D=$DATA/broker-1/r-0
F=00000000000000000000.log

# 70 KB in one append (past the 64 KiB a runway waits for), then a small one.
big=$("$MK_PYTHON" -c 'print("\n".join("record-%06d-%s" % (i, "x" * 100) for i in range(640)))')
assert_ok "a 70 KB append" mk_write "$P/append" "$big"$'\n'
assert_ok "a small append" mk_write "$P/append" $'small\n'
assert_eq "641" "$(mk_read "$P/leo")" "641 records"

valid=$(mk_valid_size "$D/$F")
real=$(mk_size "$D/$F")
assert_true "DATA_DIR's active .log holds a runway ($real bytes, frames $valid)" \
	test "$real" -gt "$valid"
assert_eq "$valid" "$(stat -c %s "$P/segments/$F")" \
	"the raw active .log's st_size is the log's size, not the file's"
cp "$P/segments/$F" "$MK_TMP/raw.log"
assert_eq "$valid" "$(mk_size "$MK_TMP/raw.log")" "a raw read ends at the log's size"
assert_eq "$valid" "$(mk_valid_size "$MK_TMP/raw.log")" "the raw active .log is whole frames"
assert_true "the raw bytes are DATA_DIR's first bytes" \
	cmp -s "$MK_TMP/raw.log" <(head -c "$valid" "$D/$F")
assert_eq "" "$(dd if="$P/segments/$F" bs=1 skip="$valid" count=16 2>/dev/null)" \
	"a read past the log's size gets nothing"
# The index files have no runway (nor Kafka's preallocation): raw view and
# DATA_DIR's file agree, both exactly their entries.
for x in index timeindex; do
	assert_files_eq "$D/${F%.log}.$x" "$P/segments/${F%.log}.$x" "the raw active .$x is DATA_DIR's"
done
assert_eq 0 "$(( $(mk_size "$D/${F%.log}.timeindex") % 12 ))" "the .timeindex is whole 12-byte entries"

# A roll seals the segment: its file is cut, raw view and file agree.
assert_ok "segment.bytes=70000" mk_write "$MNT/topics/r/config" "segment.bytes=70000"
assert_ok "an append that rolls" mk_write "$P/append" $'after-roll\n'
assert_eq "$valid" "$(mk_size "$D/$F")" "the sealed segment's file is its frames"
assert_eq "$valid" "$(stat -c %s "$P/segments/$F")" "and the raw view shows all of it"

mk_unmount
assert_eq "$(mk_valid_size "$D/$F")" "$(mk_size "$D/$F")" "after the unmount the file is its frames"

# ---- SIGKILL with a runway: the remount cuts the zeros, loses nothing ----------
mk_mount
assert_ok "create-topic k" mk_ctl "create-topic k"
K=$MNT/topics/k/0
DK=$DATA/broker-1/k-0
assert_ok "a 70 KB append to k" mk_write "$K/append" "$big"$'\n'
assert_ok "a small append to k" mk_write "$K/append" $'last\n'
kvalid=$(mk_valid_size "$DK/$F")
mk_kill
assert_true "the kill left the runway ($(mk_size "$DK/$F") bytes, frames $kvalid)" \
	test "$(mk_size "$DK/$F")" -gt "$kvalid"
mk_mount
assert_eq "641" "$(mk_read "$K/leo")" "k: every record after the remount"
assert_eq "last" "$(mk_read "$K/records@640")" "k: the last record"
assert_eq "$kvalid" "$(mk_size "$DK/$F")" "the remount cut the zeros"
assert_eq "$kvalid" "$(stat -c %s "$K/segments/$F")" "the raw view agrees"
# A roll after a runway, then a kill: the closed segment is its frames.
assert_ok "a small append to k" mk_write "$K/append" $'more\n'
assert_true "a runway again" test "$(mk_size "$DK/$F")" -gt "$(mk_valid_size "$DK/$F")"
assert_ok "k: segment.bytes=70000" mk_write "$MNT/topics/k/config" "segment.bytes=70000"
assert_ok "an append that rolls k" mk_write "$K/append" $'rolled\n'
mk_kill
assert_eq "$(mk_valid_size "$DK/$F")" "$(mk_size "$DK/$F")" "the sealed segment is its frames after the kill"
mk_mount
assert_eq "643" "$(mk_read "$K/leo")" "k: every record after the second remount"
assert_eq "$(printf 'last\nmore\nrolled')" "$(mk_read "$K/records@640")" "k: the records around the roll"
mk_unmount
