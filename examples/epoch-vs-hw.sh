#!/usr/bin/env bash
# Lab: leader epochs versus the high watermark (KIP-101).
#
# A follower learns the HW from its fetches, one round behind the leader.
# Under truncation = hw a restarted replica cuts its log to that stale HW;
# under truncation = epoch it keeps every record whose leader epoch agrees
# with the leader's. The same history, run under both rules, ends with
# different logs once the restarted replica becomes the leader.
#
# Each record is flushed as it is written (flush.messages=1): a crash keeps
# only flushed data, and otherwise broker 2 would come back empty under both.
#
# Run: bash examples/epoch-vs-hw.sh   (after ninja -C build)
. "${MKFS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}/tests/fs/lib.sh"
MKFS_BIN=$(realpath "$MKFS_BIN")   # the lab runs inside the mount

say() { printf '\n== %s\n' "$*"; }
# put FILE [LINE]: echo LINE > FILE, shown as typed.
put() {
	local a=${2:-}
	[[ $a == *' '* ]] && a="\"$a\""
	printf '$ echo %s> %s\n' "${a:+$a }" "$1"
	printf '%s\n' "${2:-}" >"$1" || fail "echo ${2:-} > $1"
}
replica2() { echo "$(<"$MNT/brokers/2/replicas")" | awk '$1 == "t" { print "broker 2: leo", $4, "in_sync", $5 }'; }

history() {
	say "truncation = $1"
	[ -z "$MK_PID" ] || { cd /; mk_unmount; }
	rm -rf "${DATA:?}"/*
	mk_mount "[cluster]
brokers = 1,2
default.replication.factor = 2
min.insync.replicas = 1
clock = manual
[replication]
truncation = $1"
	cd "$MNT" || bail "cd $MNT"
	put ctl "create-topic t unclean.leader.election.enable=true flush.messages=1"
	put topics/t/0/append:acks=1 m0
	put brokers/fetch
	put topics/t/0/append:acks=1 m1
	put brokers/fetch          # broker 2: m0 m1, but it learned only HW 1
	replica2
	put brokers/2/crash
	put brokers/2/restart
	replica2
	put brokers/1/crash
	put brokers/2/promote "t/0 unclean"
	echo "leader $(cat topics/t/0/leader), epoch $(cat topics/t/0/leader_epoch)"
	echo '$ cat topics/t/0/records'
	LOG=$(cat topics/t/0/records)
	echo "$LOG"
}
trap 'rc=$?; cd /; (exit $rc); mk_cleanup' EXIT   # leave the mount before unmounting

history epoch
epoch_log=$LOG
history hw
hw_log=$LOG

say "both logs"
echo "epoch: $(echo $epoch_log)"
echo "hw:    $(echo $hw_log)"
assert_eq $'m0\nm1' "$epoch_log" "epoch: the restart kept m1, the new leader has m0 m1"
assert_eq "m0" "$hw_log" "hw: the restart cut m1 (above its HW view), m1 is lost"
cd / && mk_unmount
