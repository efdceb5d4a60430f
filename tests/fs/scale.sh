#!/usr/bin/env bash
# scale.sh — under the default 1024-descriptor limit, a cluster of 1,000
# partitions with replication factor 3 is created, written, read, unmounted
# and mounted again: segment descriptors are a bounded cache, so no replica
# fails to open, and the daemon holds fewer descriptors than the limit.
. "$(dirname "$0")/lib.sh"

ulimit -n 1024 || bail "cannot lower the descriptor limit"
MK_MOUNT_WAIT=60   # 3,000 logs to open on a loaded machine

mk_mount '[cluster]
brokers = 1,2,3
default.replication.factor = 3
min.insync.replicas = 2
clock = manual'
assert_ok "create-topic with 1000 partitions, RF 3" mk_ctl "create-topic big partitions=1000"
assert_eq "" "$(mk_read "$MNT/errors")" "no replica failed to open"
nfd=$(ls "/proc/$MK_PID/fd" | wc -l)
assert_true "the daemon holds fewer than 1024 descriptors ($nfd)" test "$nfd" -lt 1024
for p in 0 333 999; do
	mk_write "$MNT/topics/big/$p/append:acks=1" "v$p" || fail "append to partition $p"
done
assert_ok "a replication round" mk_ctl "replicate"
for p in 0 333 999; do
	assert_eq "1" "$(mk_read "$MNT/topics/big/$p/hw")" "partition $p: hw 1"
	assert_eq "v$p" "$(mk_read "$MNT/topics/big/$p/records")" "partition $p reads back"
done
mk_unmount
mk_mount
assert_eq "" "$(mk_read "$MNT/errors")" "after the remount no replica failed to open"
assert_eq "1000" "$(ls "$MNT/topics/big" | grep -c '^[0-9]*$')" "1000 partitions"
for p in 0 333 999; do
	assert_eq "v$p" "$(mk_read "$MNT/topics/big/$p/records")" "after the remount partition $p reads back"
	assert_eq "3" "$(mk_read "$MNT/topics/big/$p/isr" | wc -w)" "partition $p: three replicas in the ISR"
done
mk_unmount
