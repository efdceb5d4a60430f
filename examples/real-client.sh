#!/usr/bin/env bash
# Lab: a real Kafka client meets the cluster the files control.
#
# kcat (librdkafka) talks Kafka's protocol to the brokers' listeners while
# the files drive replication and failures. Two brokers: an acks=all
# produce waits until a follower fetch round, an acks=1 produce is
# acknowledged by the leader alone; a consumer reads up to the high
# watermark; the leader crashes (its listener closes), the follower is
# promoted, and the record kcat was told was delivered is gone.
#
# Run: bash examples/real-client.sh   (after ninja -C build; needs kcat)
. "${MKFS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}/tests/fs/lib.sh"
MKFS_BIN=$(realpath "$MKFS_BIN")   # the lab runs inside the mount
command -v kcat >/dev/null || bail "kcat is not installed (scripts/install-deps.sh)"

say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$(mk_label "$@")"; "$@"; }
put() {
	printf '$ echo %s> %s\n' "${2:+$2 }" "$1"
	printf '%s\n' "${2:-}" >"$1" || fail "echo ${2:-} > $1"
}
v() { echo "$(<"$E/$1")"; }
# consume BROKER: every record kcat reads up to the high watermark.
consume() {
	timeout 20 kcat -C -b "$1" -t events -p 0 -o beginning -e -q 2>/dev/null | paste -sd' '
}

mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
clock = manual
[network]
listeners = 127.0.0.1:0'
cd "$MNT" || bail "cd $MNT"
trap 'rc=$?; cd /; (exit $rc); mk_cleanup' EXIT
E=$MNT/topics/events/0

say "two brokers, each with a Kafka listener"
put ctl "create-topic events"
run cat brokers/1/listener brokers/2/listener
LEAD=$(v leader)
FOLL=$((3 - LEAD))
LB=$(<"brokers/$LEAD/listener")
FB=$(<"brokers/$FOLL/listener")
run timeout 20 kcat -L -b "$LB" -t events

say "kcat -P acks=all: the leader appends, kcat waits for the ISR"
printf 'safe\n' | timeout 60 kcat -P -b "$LB" -t events -p 0 -X acks=all &
producer=$!
pending() { [ "$(v leo)" = 1 ] && kill -0 "$producer" 2>/dev/null; }
mk_wait_for 20 pending || fail "the acks=all produce should be appended and waiting"
out1="acks=all waiting: $(pending && echo yes || echo no), hw $(v hw)"
echo "$out1"

say "one follower fetch round answers it"
put "brokers/$FOLL/fetch"
wait "$producer"
out2="kcat exit $?, hw $(v hw)"
echo "$out2"

say "kcat -P acks=1: the leader alone acknowledges"
printf 'at-risk\n' | timeout 20 kcat -P -b "$LB" -t events -p 0 -X acks=1
out3="kcat exit $?, leo $(v leo), hw $(v hw)"
echo "$out3"
out4="kcat -C reads up to the HW: $(consume "$LB")"
echo "$out4"

say "the leader crashes: its listener closes with it"
put "brokers/$LEAD/crash"
run cat "brokers/$LEAD/listener"
run timeout 20 kcat -L -b "$FB" -t events

say "promote the follower (the teaching override; issue 27 brings a controller)"
put "brokers/$FOLL/promote" "events/0"
out5="after the promotion kcat reads: $(consume "$FB")"
echo "$out5"

say "check"
expected="acks=all waiting: yes, hw 0
kcat exit 0, hw 1
kcat exit 0, leo 2, hw 1
kcat -C reads up to the HW: safe
after the promotion kcat reads: safe"
assert_eq "$expected" "$out1
$out2
$out3
$out4
$out5" "kcat was told at-risk was delivered (acks=1); the promotion lost it"
assert_eq "none" "$(<"brokers/$LEAD/listener")" "the crashed broker has no listener"
cd / && mk_unmount
