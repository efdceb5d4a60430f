#!/usr/bin/env bash
# Lab: the safe prefix and the lost tail (seed chapter 5).
#
# Two brokers, min.insync.replicas = 2. An acks=all write waits for one
# follower fetch round; an acks=1 write is acknowledged by the leader alone.
# Promoting the follower keeps what was replicated ("safe") and loses what
# was only acknowledged ("at-risk").
#
# Run: bash examples/leader-failure.sh   (after ninja -C build)
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
v() { echo "$(<"$E/$1")"; }

mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
min.insync.replicas = 2
clock = manual
[replication]
truncation = hw'
cd "$MNT" || bail "cd $MNT"
trap 'rc=$?; cd /; (exit $rc); mk_cleanup' EXIT   # leave the mount before unmounting
E=$MNT/topics/events/0

say "a topic with two replicas"
put ctl "create-topic events"
run cat topics/events/0/replicas

say "acks=all: the leader appends, the producer waits for the ISR"
# One write(2) on a descriptor opened O_RDWR; reading it gives the receipt.
cat >"$MK_TMP/send.py" <<'PY'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR)
    os.write(fd, sys.argv[2].encode())
    sys.stdout.write(os.read(fd, 4096).decode())
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno)); sys.exit(1)
PY
"$MK_PYTHON" -I "$MK_TMP/send.py" "$E/append:acks=all" $'safe\n' >"$MK_TMP/safe" &
writer=$!
pending() { [ "$(v leo)" = 1 ] && kill -0 "$writer" 2>/dev/null; }
mk_wait_for 10 pending || fail "the acks=all write should be appended and pending"
out1="acks=all pending: $(pending && echo True || echo False) HW: $(v hw)"
echo "$out1"
run cat topics/events/0/state

say "one follower fetch round"
put brokers/2/fetch
mk_wait_for 10 mk_proc_gone "$writer" || fail "the acks=all write should complete"
wait "$writer"
safe=$(cat "$MK_TMP/safe")
echo "receipt: $safe"
leo1=$(mk_read "$MNT/brokers/1/replicas" | awk '$1 == "events" { print $4 }')
leo2=$(mk_read "$MNT/brokers/2/replicas" | awk '$1 == "events" { print $4 }')
out2="acks=all offset: $(echo "$safe" | cut -d' ' -f3) LEOs: [$leo1, $leo2] HW: $(v hw)"
echo "$out2"

say "acks=1: the leader alone acknowledges"
risky=$("$MK_PYTHON" -I "$MK_TMP/send.py" "$E/append:acks=1" $'at-risk\n')
echo "receipt: $risky"
out3="acks=1 offset: $(echo "$risky" | cut -d' ' -f3) visible end: $(v hw)"
echo "$out3"
run cat topics/events/0/records
run cat topics/events/0/state

say "promote broker 2: it has only the safe prefix"
put brokers/2/promote "events/0"
run cat topics/events/0/leader topics/events/0/leader_epoch
out4="after promotion: [$(mk_read "$E/records" | sed "s/.*/b'&'/" | paste -sd, | sed 's/,/, /g')]"
echo "$out4"

say "the old leader still holds at-risk; its next fetch truncates it"
run cat brokers/1/replicas
put brokers/1/fetch
run cat brokers/1/replicas
old_leo=$(mk_read "$MNT/brokers/1/replicas" | awk '$1 == "events" { print $4 }')

say "check: the chapter's measured output"
expected="acks=all pending: True HW: 0
acks=all offset: 0 LEOs: [1, 1] HW: 1
acks=1 offset: 1 visible end: 1
after promotion: [b'safe']"
assert_eq "$expected" "$out1
$out2
$out3
$out4" "the four lines match the seed chapter"
assert_eq "1" "$old_leo" "the old leader truncated at-risk (leo 1)"
cd / && mk_unmount
