#!/usr/bin/env bash
# epoch_vs_hw.sh — one history, two reconciliation rules ([replication]
# truncation, docs/filesystem.md 6). A follower learns the HW one fetch round
# late; truncation = hw cuts a restarted replica to that stale HW and so drops
# a committed record that truncation = epoch (KIP-101) keeps.
#
# History (2 brokers, RF 2, min.insync.replicas 1, unclean election allowed):
#   append m0; fetch round; append m1; fetch round   (broker 2: m0 m1, HW view 1)
#   crash 2; restart 2      hw: cut to its HW view 1; epoch: keeps m1
#   crash 1; promote 2 with "t/0 unclean"
#   records                 epoch: m0 m1; hw: m0
#
# A crash loses what a log has not flushed (docs/filesystem.md 6), and flush.messages = 0
# flushes only on roll, close and /ctl flush: run as written, the crash of
# broker 2 empties its log and both rules end with no records at all. The
# topic therefore sets flush.messages=1; the literal history is checked too.
. "$(dirname "$0")/lib.sh"

cmd() { printf '%s\n' "${2:-}" >"$1"; }
val() { echo "$(<"$MNT/topics/t/0/$1")"; }
replica_of() {
	echo "$(<"$MNT/brokers/$1/replicas")" | awk '$1 == "t" && $2 == 0 { print $3, $4, $5 }'
}
receipt() {
	timeout 20 "$MK_PYTHON" -I -c '
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR)
    os.write(fd, sys.argv[2].encode())
    sys.stdout.write(os.read(fd, 4096).decode())
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno)); sys.exit(1)' "$1" "$2"
}

# history MODE TOPIC-OPTIONS: run the history; LOG gets the records.
history() {
	local mode=$1 opts=$2 tag="[$1${2:+ $2}]"
	[ -z "$MK_PID" ] || mk_unmount
	rm -rf "${DATA:?}"/*
	mk_mount "[cluster]
brokers = 1,2
default.replication.factor = 2
min.insync.replicas = 1
clock = manual
[replication]
truncation = $mode"
	cmd "$MNT/ctl" "create-topic t unclean.leader.election.enable=true $opts" ||
		bail "$tag create-topic"
	local P=$MNT/topics/t/0
	assert_eq "t 0 0 1" "$(receipt "$P/append:acks=1" $'m0\n')" "$tag m0 at offset 0"
	cmd "$MNT/brokers/fetch" || fail "$tag fetch round 1"
	assert_eq "t 0 1 1" "$(receipt "$P/append:acks=1" $'m1\n')" "$tag m1 at offset 1"
	cmd "$MNT/brokers/fetch" || fail "$tag fetch round 2"
	assert_eq "2 2" "$(val leo) $(val hw)" "$tag leo 2, hw 2"
	assert_eq "follower 2 true" "$(replica_of 2)" "$tag broker 2 has m0 m1"
	cmd "$MNT/brokers/2/crash" || fail "$tag crash 2"
	cmd "$MNT/brokers/2/restart" || fail "$tag restart 2"
	AFTER_RESTART=$(replica_of 2)
	cmd "$MNT/brokers/1/crash" || fail "$tag crash 1"
	assert_eq "none" "$(val leader)" "$tag no leader"
	cmd "$MNT/brokers/2/promote" "t/0 unclean" || fail "$tag promote 2 unclean"
	assert_eq "2 1" "$(val leader) $(val leader_epoch)" "$tag broker 2 leads, epoch 1"
	LOG=$(mk_read "$P/records" | tr '\n' ' ' | sed 's/ $//')
	note "$tag broker 2 after restart: $AFTER_RESTART; records: ${LOG:-(none)}"
}

history epoch "flush.messages=1"
assert_eq "follower 2 false" "$AFTER_RESTART" "[epoch] the restart keeps m1 (its epoch agrees with the leader's); out of the ISR until it fetches"
assert_eq "m0 m1" "$LOG" "[epoch] the new leader has m0 m1"
assert_eq "2 2" "$(val leo) $(val hw)" "[epoch] leo 2, hw 2"
epoch_log=$LOG

history hw "flush.messages=1"
assert_eq "follower 1 false" "$AFTER_RESTART" "[hw] the restart cuts broker 2 to its HW view 1"
assert_eq "m0" "$LOG" "[hw] the new leader has m0 only: committed m1 is lost"
assert_eq "1 1" "$(val leo) $(val hw)" "[hw] leo 1, hw 1"
assert_ne "$epoch_log" "$LOG" "the two rules give different logs"

# The literal history, nothing flushed: the crash itself empties broker 2.
for mode in epoch hw; do
	history "$mode" ""
	assert_eq "follower 0 false" "$AFTER_RESTART" "[$mode unflushed] broker 2 restarts empty"
	assert_eq "" "$LOG" "[$mode unflushed] no records survive: the rule makes no difference"
done

# A second history, no crash: with three brokers, broker 2 fetches b while
# broker 3 does not, so the HW stays at 1; promoting broker 2 (in sync, a
# clean promotion) keeps b under epoch and cuts it under hw, where the
# promoted leader truncates itself to the HW (seed chapter 5).
for mode in epoch hw; do
	mk_unmount
	rm -rf "${DATA:?}"/*
	mk_mount "[cluster]
brokers = 1,2,3
default.replication.factor = 3
clock = manual
[replication]
truncation = $mode"
	cmd "$MNT/ctl" "create-topic t" || bail "[$mode 3 brokers] create-topic"
	P=$MNT/topics/t/0
	receipt "$P/append:acks=1" $'a\n' >/dev/null || fail "[$mode 3 brokers] append a"
	cmd "$MNT/brokers/fetch" || fail "[$mode 3 brokers] fetch round"
	receipt "$P/append:acks=1" $'b\n' >/dev/null || fail "[$mode 3 brokers] append b"
	cmd "$MNT/brokers/2/fetch" || fail "[$mode 3 brokers] broker 2 fetches"
	assert_eq "2 1 1 2 3" "$(val leo) $(val hw) $(val isr)" "[$mode 3 brokers] leo 2, hw 1, all in sync"
	cmd "$MNT/brokers/2/promote" "t/0" || fail "[$mode 3 brokers] promote 2"
	cmd "$MNT/brokers/fetch" || fail "[$mode 3 brokers] fetch round"
	LOG=$(mk_read "$P/records" | tr '\n' ' ' | sed 's/ $//')
	note "[$mode 3 brokers] records: $LOG"
	if [ "$mode" = epoch ]; then
		assert_eq "a b" "$LOG" "[epoch 3 brokers] the new leader keeps b; the others fetch it"
		assert_eq "2 2" "$(val leo) $(val hw)" "[epoch 3 brokers] leo 2, hw 2"
	else
		assert_eq "a" "$LOG" "[hw 3 brokers] the new leader cut itself to the HW: b is lost"
		assert_eq "1 1" "$(val leo) $(val hw)" "[hw 3 brokers] leo 1, hw 1"
		assert_eq "follower 1 true" "$(replica_of 1)" "[hw 3 brokers] broker 1 truncated b too"
	fi
done
mk_unmount
