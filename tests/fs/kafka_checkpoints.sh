#!/usr/bin/env bash
# kafka_checkpoints.sh — the data directory holds Kafka's own checkpoint
# files, in Kafka's text formats (docs/filesystem.md, "Kafka's checkpoint
# files"): after appends and a flush, each broker directory has
# recovery-point-offset-checkpoint, log-start-offset-checkpoint and
# replication-offset-checkpoint ("0", the count, then one "TOPIC PARTITION
# OFFSET" line per replica it hosts), each replica directory a
# leader-epoch-checkpoint ("0", the count, "EPOCH START_OFFSET" lines);
# DeleteRecords, a promotion and a topic's deletion show in them; a remount
# goes by what they say.
#
# Manual clock and explicit fetch rounds; no timing.
. "$(dirname "$0")/lib.sh"

val() { mk_read "$MNT/topics/$1/$2/$3"; }
fetch() { mk_write "$MNT/brokers/fetch" $'\n'; }
# The text of a file of the data directory (trailing newline dropped, as
# $(...) does).
in_data() { cat "$DATA/$1"; }
lines() { printf '%s\n' "$@" | head -c -1; }

mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
clock = manual'
mk_ctl "create-topic orders partitions=2" || bail "create-topic orders"
mk_ctl "create-topic audit" || bail "create-topic audit"
seq 1 5 >"$MK_TMP/five"
seq 1 3 >"$MK_TMP/three"
mk_write_file "$MNT/topics/orders/0/append:acks=1" "$MK_TMP/five" || bail "append orders/0"
mk_write_file "$MNT/topics/orders/1/append:acks=1" "$MK_TMP/three" || bail "append orders/1"
mk_write "$MNT/topics/audit/0/append:acks=1" $'a\n' || bail "append audit/0"
fetch && fetch || bail "fetch"
assert_eq "5 3 1" "$(val orders 0 hw) $(val orders 1 hw) $(val audit 0 hw)" "every record committed"
mk_ctl "flush" || bail "flush"
e0=$(val orders 0 leader_epoch)

# ---- the files after appends ------------------------------------------------
for b in 1 2; do
	assert_eq "$(lines 0 3 'audit 0 1' 'orders 0 5' 'orders 1 3')" \
		"$(in_data broker-$b/recovery-point-offset-checkpoint)" \
		"broker $b: recovery-point-offset-checkpoint, one line per replica (flushed to the end)"
	assert_eq "$(lines 0 3 'audit 0 0' 'orders 0 0' 'orders 1 0')" \
		"$(in_data broker-$b/log-start-offset-checkpoint)" \
		"broker $b: log-start-offset-checkpoint"
	assert_eq "$(lines 0 3 'audit 0 1' 'orders 0 5' 'orders 1 3')" \
		"$(in_data broker-$b/replication-offset-checkpoint)" \
		"broker $b: replication-offset-checkpoint (the high watermarks)"
	assert_eq "$(lines 0 1 "$e0 0")" "$(in_data broker-$b/orders-0/leader-epoch-checkpoint)" \
		"broker $b: orders-0/leader-epoch-checkpoint"
	assert_eq "$(lines 'version 2' 'segments 0')" "$(in_data broker-$b/orders-0/checkpoint)" \
		"broker $b: the project's own checkpoint keeps only the durable segments' list"
	assert_true "broker $b: no high-watermark file of before" test ! -e "$DATA/broker-$b/orders-0/high-watermark"
done

# ---- DeleteRecords, then a promotion: the files follow -----------------------
mk_write "$MNT/topics/orders/0/delete-records" "2" || bail "delete-records"
fetch && fetch || bail "fetch"
leader=$(val orders 0 leader)
other=$((3 - leader))
mk_write "$MNT/brokers/$other/promote" $'orders/0\n' || bail "promote broker $other"
e1=$(val orders 0 leader_epoch)
assert_eq "$((e0 + 1))" "$e1" "the promotion takes a new epoch"
mk_write "$MNT/topics/orders/0/append:acks=1" $'six\n' || bail "append under the new epoch"
fetch && fetch || bail "fetch"
mk_ctl "flush" || bail "flush"
for b in 1 2; do
	assert_eq "$(lines 0 3 'audit 0 0' 'orders 0 2' 'orders 1 0')" \
		"$(in_data broker-$b/log-start-offset-checkpoint)" \
		"broker $b: the log start DeleteRecords moved (the follower's too)"
	assert_eq "$(lines 0 3 'audit 0 1' 'orders 0 6' 'orders 1 3')" \
		"$(in_data broker-$b/replication-offset-checkpoint)" \
		"broker $b: the HW past the new epoch's record"
	assert_eq "$(lines 0 2 "$e0 0" "$e1 5")" "$(in_data broker-$b/orders-0/leader-epoch-checkpoint)" \
		"broker $b: the new epoch's first offset in leader-epoch-checkpoint"
done

# ---- a deleted topic's lines go ----------------------------------------------
mk_rmdir "$MNT/topics/audit" || bail "rmdir audit"
mk_ctl "flush" || bail "flush"
assert_eq "$(lines 0 2 'orders 0 6' 'orders 1 3')" \
	"$(in_data broker-1/recovery-point-offset-checkpoint)" "audit's line is gone from broker 1's recovery points"
mk_unmount

# ---- a remount goes by the files ------------------------------------------------
# (A log start moved in the files, within what the HW allows, is the log's.)
for b in 1 2; do
	sed -i 's/^orders 1 0$/orders 1 1/' "$DATA/broker-$b/log-start-offset-checkpoint"
done
mk_mount
assert_eq "2 1" "$(val orders 0 log_start_offset) $(val orders 1 log_start_offset)" \
	"the log starts are the files' after the remount"
assert_eq "6 3" "$(val orders 0 hw) $(val orders 1 hw)" "the HWs"
assert_eq "2" "$(mk_read "$MNT/topics/orders/1/records" | wc -l)" "orders/1 serves from its log start"
assert_eq "$e1" "$(val orders 0 leader_epoch)" "the leader epoch"
# Nothing changed: no file rewritten by a mount that found them right.
before=$(stat -c %i "$DATA/broker-1/recovery-point-offset-checkpoint")
mk_unmount
mk_mount
assert_eq "$before" "$(stat -c %i "$DATA/broker-1/recovery-point-offset-checkpoint")" \
	"a clean remount leaves recovery-point-offset-checkpoint as it was (the same inode)"
mk_unmount
