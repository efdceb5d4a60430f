#!/usr/bin/env bash
# Lab: what acks=all waits for.
#
# With min.insync.replicas = 2, an acks=all write returns only when every
# in-sync replica has the batch: it stays pending on the leader until a
# follower fetch round. When the ISR is smaller than the minimum, the write
# fails at once with EAGAIN (NOT_ENOUGH_REPLICAS) and nothing is appended.
#
# Run: bash examples/acks-all-waits.sh   (after ninja -C build)
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
v() { echo "$(<"$MNT/topics/orders/0/$1")"; }
# send FILE LINE: one write(2) through a descriptor opened O_RDWR; prints
# the receipt (TOPIC PARTITION OFFSET COUNT) or the errno name.
cat >"$MK_TMP/send.py" <<'PY'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR)
    os.write(fd, sys.argv[2].encode())
    sys.stdout.write(os.read(fd, 4096).decode())
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno)); sys.exit(1)
PY
send() { "$MK_PYTHON" -I "$MK_TMP/send.py" "$1" "$2"; }
# (in the background the interpreter is started directly, so $! is its pid)
# True while PID is inside write(2) (syscall 1 on x86-64).
in_write() { local s; s=$(cat "/proc/$1/syscall" 2>/dev/null) && [ "${s%% *}" = 1 ]; }

mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
min.insync.replicas = 2
clock = manual'
cd "$MNT" || bail "cd $MNT"
trap 'rc=$?; cd /; (exit $rc); mk_cleanup' EXIT   # leave the mount before unmounting

say "two replicas, both in sync"
put ctl "create-topic orders"
run cat topics/orders/0/isr

say "an acks=all write: appended on the leader, then it waits"
"$MK_PYTHON" -I "$MK_TMP/send.py" topics/orders/0/append:acks=all $'order-1\n' >"$MK_TMP/receipt" &
writer=$!
pending() { [ "$(v leo)" = 1 ] && in_write "$writer"; }
mk_wait_for 10 pending || fail "the write should be appended and blocked"
echo "writer $writer is in write(2): $(pending && echo yes || echo no)"
echo "leo $(v leo) hw $(v hw)"
assert_eq "1 0" "$(v leo) $(v hw)" "pending: leo 1, hw 0"
assert_true "the writer is still waiting" pending

say "other files answer meanwhile"
run cat topics/orders/0/leader
echo '$ send topics/orders/0/append:acks=1 order-2'
send topics/orders/0/append:acks=1 $'order-2\n'
assert_true "an acks=1 write went through while the acks=all write waits" in_write "$writer"

say "one follower fetch round acknowledges both"
put brokers/2/fetch
mk_wait_for 10 mk_proc_gone "$writer" || fail "the acks=all write should complete"
wait "$writer"
echo "acks=all receipt: $(cat "$MK_TMP/receipt")"
echo "leo $(v leo) hw $(v hw)"
assert_eq "orders 0 0 1" "$(cat "$MK_TMP/receipt")" "acknowledged with offset 0 after the round"
assert_eq "2 2" "$(v leo) $(v hw)" "leo 2, hw 2"
run cat topics/orders/0/records

say "broker 2 crashes: the ISR is below min.insync.replicas"
put brokers/2/crash
run cat topics/orders/0/isr
res=$(send topics/orders/0/append:acks=all $'order-3\n')
echo "acks=all: $res"
echo "leo $(v leo)"
run tail -n 1 errors
assert_eq "EAGAIN" "$res" "acks=all fails with EAGAIN"
assert_eq "2" "$(v leo)" "nothing was appended (leo 2)"
assert_match ' NOT_ENOUGH_REPLICAS ' "$(tail -n 1 errors)" "/errors says NOT_ENOUGH_REPLICAS"

say "broker 2 restarts and catches up: acks=all works again"
put brokers/2/restart
put brokers/2/fetch
run cat topics/orders/0/isr
"$MK_PYTHON" -I "$MK_TMP/send.py" topics/orders/0/append:acks=all $'order-3\n' >"$MK_TMP/receipt" &
writer=$!
pending() { [ "$(v leo)" = 3 ] && in_write "$writer"; }
mk_wait_for 10 pending || fail "the write should be appended and blocked"
put brokers/fetch
mk_wait_for 10 mk_proc_gone "$writer" || fail "the acks=all write should complete"
wait "$writer"
echo "acks=all receipt: $(cat "$MK_TMP/receipt")"
assert_eq "orders 0 2 1" "$(cat "$MK_TMP/receipt")" "acknowledged with offset 2"
assert_eq "1 2" "$(v isr)" "isr 1 2"
cd / && mk_unmount
