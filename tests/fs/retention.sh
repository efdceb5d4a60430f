#!/usr/bin/env bash
# retention.sh — retention, DeleteRecords and compaction through the mount
# (docs/filesystem.md 5 "Retention and compaction", 6, 7): the log
# start moving by time and size, ERANGE below it, records@earliest, a
# follower below its leader's log start reset there, delete-records and its
# bound, a keyless record refused by a compacted topic, /ctl compact with
# offset gaps and the cleaner's state, and a daemon killed in the middle of
# a compaction swap (MKFS_FAILPOINTS) recovering to the compacted log.
#
# Time is the manual clock; replication moves only by explicit fetches, so
# appends use acks=1 (the HW moves at the next fetch round).
. "$(dirname "$0")/lib.sh"

INI='[cluster]
brokers = 1,2
clock = manual
default.replication.factor = 2'
mk_mount "$INI"

field() { mk_read "$1" | awk -v k="$2" '$1 == k { print $2 }'; }

# ---- retention by time ----------------------------------------------------------
mk_ctl "create-topic r segment.bytes=100 retention.ms=1000" || bail "create-topic r"
R=$MNT/topics/r/0
for i in 0 1 2 3 4 5; do
	mk_write "$R/append:acks=1" "old-$i" || fail "append old-$i"
done
mk_ctl replicate || fail "replicate"
assert_eq "6" "$(mk_read "$R/hw")" "hw after a fetch round"
nsegs=$(ls "$R/segments" | grep -c '\.log$')
assert_true "several segments ($nsegs)" test "$nsegs" -ge 4
assert_ok "/ctl retention too early" mk_ctl retention
assert_eq "0" "$(mk_read "$R/log_start_offset")" "nothing older than retention.ms yet"
mk_write "$MNT/clock" "+5000"
mk_write "$R/append:acks=1" "new-6" || fail "append new-6"
mk_ctl replicate || fail "replicate"
assert_ok "/ctl retention" mk_ctl retention
start=$(mk_read "$R/log_start_offset")
assert_eq "6" "$start" "closed segments past retention.ms are gone; the log start is the next offset"
assert_eq "6" "$(field "$R/state" log_start_offset)" "state shows the log start"
assert_eq "0" "$(ls "$R/segments" | grep -c '^0\{20\}\.log$')" "segments/ no longer lists the first segment"
mark=$(mk_errors_mark)
assert_fails_with ERANGE mk_read "$R/records@5"
assert_error_since "$mark" OFFSET_OUT_OF_RANGE "records below the log start"
assert_eq "new-6" "$(mk_read "$R/records@earliest")" "records@earliest starts at the log start"
assert_eq "new-6" "$(mk_read "$R/records")" "records starts at the log start"
assert_eq "new-6" "$(mk_read "$R/records@-10")" "records@-N is clamped at the log start"
assert_true "the follower's segments went too" \
	test ! -e "$DATA/broker-2/r-0/00000000000000000000.log"

# ---- retention by size ------------------------------------------------------------
mk_ctl "create-topic s segment.bytes=100 retention.bytes=1" || bail "create-topic s"
S=$MNT/topics/s/0
for i in 0 1 2 3; do mk_write "$S/append:acks=1" "s-$i" || fail "append s-$i"; done
mk_ctl replicate || fail "replicate"
mk_ctl retention || fail "retention"
assert_eq "3" "$(mk_read "$S/log_start_offset")" "retention.bytes keeps only the active segment"
assert_eq "s-3" "$(mk_read "$S/records")" "the active segment is never deleted"

# ---- delete-records -------------------------------------------------------------
mk_ctl "create-topic d segment.bytes=100" || bail "create-topic d"
D=$MNT/topics/d/0
for i in 0 1 2 3 4; do mk_write "$D/append:acks=1" "d-$i" || fail "append d-$i"; done
mk_ctl replicate || fail "replicate"
assert_ok "delete-records 3" mk_write "$D/delete-records" "3"
assert_eq "3" "$(mk_read "$D/log_start_offset")" "DeleteRecords moves the log start"
assert_eq $'d-3\nd-4' "$(mk_read "$D/records")" "records start at the new log start"
mark=$(mk_errors_mark)
assert_fails_with ERANGE mk_write "$D/delete-records" "6"
assert_error_since "$mark" OFFSET_OUT_OF_RANGE "delete-records above the high watermark" delete-records
assert_fails_with EINVAL mk_write "$D/delete-records" "three"
assert_ok "delete-records below the start changes nothing" mk_write "$D/delete-records" "1"
assert_eq "3" "$(mk_read "$D/log_start_offset")" "the log start never moves back"
mk_ctl replicate || fail "replicate"
assert_eq "3" "$(field "$D/state" log_start_offset)" "state after a fetch"
assert_true "the follower's start followed the leader's (its first segments deleted)" \
	test ! -e "$DATA/broker-2/d-0/00000000000000000000.log"

# ---- a follower below its leader's log start ------------------------------------
mk_ctl "create-topic f segment.bytes=100 retention.ms=1000" || bail "create-topic f"
F=$MNT/topics/f/0
leader=$(mk_read "$F/leader")
other=$((3 - leader))
mk_write "$F/append:acks=1" "f-0" || fail "append f-0"
mk_ctl replicate || fail "replicate"
mk_write "$MNT/brokers/$other/crash" "1" || fail "crash $other"
for i in 1 2 3 4; do mk_write "$F/append:acks=1" "f-$i" || fail "append f-$i"; done
mk_write "$MNT/clock" "+5000"
mk_write "$F/append:acks=1" "f-5" || fail "append f-5"
mk_ctl retention || fail "retention"
lstart=$(mk_read "$F/log_start_offset")
assert_eq "5" "$lstart" "the leader's log start passed the crashed follower's end (1)"
mk_write "$MNT/brokers/$other/restart" "1" || fail "restart $other"
assert_ok "fetch on the restarted follower" mk_write "$MNT/brokers/$other/fetch" "1"
row=$(mk_read "$MNT/brokers/$other/replicas" | awk '$1 == "f"')
assert_eq "6" "$(echo "$row" | awk '{ print $4 }')" "the follower restarted at the leader's log start and caught up"
assert_true "the follower's old segment is gone" \
	test ! -e "$DATA/broker-$other/f-0/00000000000000000000.log"
assert_true "the follower's log starts at the leader's log start" \
	test -e "$DATA/broker-$other/f-0/00000000000000000005.log"

# ---- compaction -------------------------------------------------------------------
mk_ctl "create-topic c segment.bytes=100 cleanup.policy=compact delete.retention.ms=1000" ||
	bail "create-topic c"
C=$MNT/topics/c/0
mark=$(mk_errors_mark)
assert_fails_with EINVAL mk_write_e "$C/append:acks=1" "no-key\\n"
assert_error_since "$mark" INVALID_RECORD "a keyless record in a compacted topic"
assert_eq "0" "$(mk_read "$C/leo")" "the refused record appended nothing"
mk_write_e "$C/append:tsv:acks=1" 'a\t1\n' || fail "a=1"
mk_write_e "$C/append:tsv:acks=1" 'b\t1\n' || fail "b=1"
mk_write_e "$C/append:tsv:acks=1" 'a\t2\n' || fail "a=2"
mk_write_e "$C/append:tsv:acks=1" 'b\t\\N\n' || fail "b deleted"
mk_write_e "$C/append:tsv:acks=1" 'c\t1\n' || fail "c=1"
mk_write_e "$C/append:tsv:acks=1" 'z\tlast\n' || fail "z"
mk_ctl replicate || fail "replicate"
assert_eq "dirty_ratio 1.00" "$(mk_read "$C/state" | grep '^dirty_ratio')" "all cleanable bytes are dirty"
assert_ok "/ctl compact" mk_ctl compact
got=$(mk_read "$C/records:tsv" | cut -f1,3,4)
assert_eq $'2\ta\t2\n3\tb\t\\N\n4\tc\t1\n5\tz\tlast' "$got" \
	"the latest record per key, offsets kept (gaps at 0 and 1), the tombstone kept"
assert_eq "dirty_ratio 0.00" "$(mk_read "$C/state" | grep '^dirty_ratio')" "nothing dirty after compaction"
assert_eq "5" "$(field "$C/state" cleaner_checkpoint)" "the cleaner's checkpoint is the end of the cleaned range"
assert_eq $'2\ta\t2\n3\tb\t\\N\n4\tc\t1\n5\tz\tlast' \
	"$(mk_read "$C/records@1:tsv" | cut -f1,3,4)" "a read from inside a gap starts at the next record"
mk_write "$MNT/clock" "+1000"
mk_ctl compact || fail "compact"
assert_eq $'2\ta\t2\n4\tc\t1\n5\tz\tlast' "$(mk_read "$C/records:tsv" | cut -f1,3,4)" \
	"the tombstone is gone delete.retention.ms after its segment was cleaned"
assert_eq "0" "$(mk_read "$C/log_start_offset")" "compaction does not move the log start"

# ---- a crash in the middle of a compaction swap --------------------------------------
mk_ctl "create-topic k segment.bytes=100 cleanup.policy=compact replication.factor=1" ||
	bail "create-topic k"
K=$MNT/topics/k/0
for v in 1 2 3; do
	for key in x y; do
		mk_write "$K/append:key=$key:acks=1" "$key$v" || fail "append $key$v"
	done
done
mk_ctl replicate || fail "replicate"
mk_ctl flush || fail "flush"
before=$(mk_read "$K/records:tsv" | cut -f1,3,4)
mk_unmount
export MKFS_FAILPOINTS=cleaner.swap.moved
mk_mount
unset MKFS_FAILPOINTS
mk_write "$MNT/ctl" "compact" >/dev/null 2>&1
mk_wait_for 10 eval '! mk_alive' || fail "the daemon did not die at cleaner.swap.moved"
wait "$MK_PID" 2>/dev/null
MK_PID=""
fusermount3 -u -z "$MNT" 2>/dev/null
mk_wait_for 10 eval '! mk_in_mounts' || bail "dead mount not cleared"
KDIR=$(ls -d "$DATA"/broker-*/k-0)
assert_true "the swap journal was left by the crash" test -e "$KDIR/swap-journal"
mk_mount
after=$(mk_read "$K/records:tsv" | cut -f1,3,4)
assert_eq $'3\ty\ty2\n4\tx\tx3\n5\ty\ty3' "$after" \
	"recovery finished the committed swap: exactly the compacted log"
assert_true "no journal left after recovery" test ! -e "$KDIR/swap-journal"
assert_eq "" "$(ls "$KDIR/cleaned")" "nothing left staged"
assert_eq "6" "$(mk_read "$K/leo")" "the log end is kept"
assert_ok "append after recovery" mk_write "$K/append:key=x:acks=1" "x4"
assert_eq "x4" "$(mk_read "$K/records@6")" "the new record follows"
note "before the crash: $(echo "$before" | tr '\n' ' ')"
mk_unmount

# ---- auto mode: the background cleaner --------------------------------------------
mk_mount '[cluster]
brokers = 1
clock = manual
[replication]
mode = auto
[log]
log.retention.check.interval.ms = 20'
assert_eq "log.retention.check.interval.ms = 20" \
	"$(mk_read "$MNT/config" | grep '^log.retention.check.interval.ms')" "the key is shown in /config"
mk_ctl "create-topic auto segment.bytes=100 retention.ms=1000" || bail "create-topic auto"
mk_ctl "create-topic autoc segment.bytes=100 cleanup.policy=compact" || bail "create-topic autoc"
A=$MNT/topics/auto/0
AC=$MNT/topics/autoc/0
for i in 0 1 2; do mk_write "$A/append" "a-$i" || fail "append a-$i"; done
for v in 1 2 3; do mk_write "$AC/append:key=k" "k$v" || fail "append k$v"; done
mk_write "$MNT/clock" "+5000"
mk_write "$A/append" "a-3" || fail "append a-3"
start_moved() { [ "$(mk_read "$A/log_start_offset")" = 3 ]; }
assert_true "the background cleaner applied retention" mk_wait_for 10 start_moved
# k1 (offset 0) is superseded inside the cleanable range; k3 is in the
# active segment, so k2 (offset 1, the latest below it) stays too.
compacted() { [ "$(mk_read "$AC/records")" = $'k2\nk3' ]; }
assert_true "the background cleaner compacted" mk_wait_for 10 compacted
mk_unmount
