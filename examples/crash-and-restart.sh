#!/usr/bin/env bash
# Lab: what a broker crash keeps.
#
# A crash keeps only what each log flushed (/ctl flush, a segment roll, or
# flush.messages); the rest of the tail is gone. `crash torn` also leaves half
# a frame at the end of the active segment, which the restart cuts off. The
# restarted follower then catches up from the leader by fetching.
#
# Run: bash examples/crash-and-restart.sh   (after ninja -C build)
. "${MKFS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}/tests/fs/lib.sh"
MKFS_BIN=$(realpath "$MKFS_BIN")   # the lab runs inside the mount

say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$(mk_label "$@")"; "$@"; }
# put FILE [LINE]: echo LINE > FILE, shown as typed.
put() {
	local a=${2:-}
	[[ $a == *' '* ]] && a="\"$a\""
	printf '$ echo %s> %s\n' "${a:+$a }" "$1"
	printf '%s\n' "${2:-}" >"$1" || fail "echo ${2:-} > $1"
}
# append LINES: one acks=1 write to logs/0 (a batch).
append() {
	printf '$ printf %q > topics/logs/0/append:acks=1\n' "$1"
	mk_write "$MNT/topics/logs/0/append:acks=1" "$1" || fail "append"
}
# Broker 2's replica of logs-0: its log end (from /brokers/2/replicas).
leo2() { echo "$(<"$MNT/brokers/2/replicas")" | awk '$1 == "logs" { print $4 }'; }

mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
clock = manual'
cd "$MNT" || bail "cd $MNT"
trap 'rc=$?; cd /; (exit $rc); mk_cleanup' EXIT   # leave the mount before unmounting

say "two records, replicated and flushed"
put ctl "create-topic logs"
append $'a\nb\n'
put brokers/fetch
put ctl flush

say "two more, replicated but not flushed"
append $'c\nd\n'
put brokers/fetch
run cat brokers/2/replicas
assert_eq "4" "$(leo2)" "broker 2 has 4 records"

say "broker 2 crashes and restarts: only the flushed part is left"
put brokers/2/crash
run cat brokers/2/state
put brokers/2/restart
run cat brokers/2/replicas
assert_eq "2" "$(leo2)" "after the restart broker 2 has the 2 flushed records"
run cat topics/logs/0/isr
assert_eq "1" "$(cat topics/logs/0/isr)" "it is out of the ISR until it catches up"

say "it catches up by fetching"
put brokers/2/fetch
run cat brokers/2/replicas
assert_eq "4" "$(leo2)" "broker 2 is back at 4"
assert_eq "1 2" "$(cat topics/logs/0/isr)" "and back in the ISR"

say "crash torn: half a frame at the end of the segment"
# c and d came back through a fetch, unflushed again: only a b are on disk.
put brokers/2/crash torn
seg=$(mk_active_log logs 0 2)
size=$(mk_size "$seg")
whole=$(mk_valid_size "$seg")
echo "${seg#"$DATA/"}: $size bytes, whole frames end at $whole"
assert_true "the segment ends in a partial frame" test "$size" -gt "$whole"

say "the restart cuts the partial frame off"
put brokers/2/restart
echo "${seg#"$DATA/"}: $(mk_size "$seg") bytes"
assert_eq "$whole" "$(mk_size "$seg")" "the segment is back to its whole frames"
run cat brokers/2/replicas
assert_eq "2" "$(leo2)" "broker 2 recovered a b"
put brokers/2/fetch
run cat brokers/2/replicas
assert_eq "4" "$(leo2)" "and fetched c d again"

say "the leader served every record throughout"
run cat topics/logs/0/records
assert_eq $'a\nb\nc\nd' "$(cat topics/logs/0/records)" "records a b c d"
cd / && mk_unmount
