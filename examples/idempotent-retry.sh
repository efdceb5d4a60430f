#!/usr/bin/env bash
# idempotent-retry.sh — an idempotent producer: a retry gets the original
# offsets, a gap is refused, and a new epoch fences the old writer.
#
# `mkdir /producers/app` gives the producer an id (epoch 0). Appending with
# `producer=app` stamps each batch with the id, the epoch and a sequence
# number; the partition leader remembers the last five batches of each
# producer. A script that does not know whether its write got through
# (a timeout, a crash) retries it with `seq=N`, the batch's first sequence:
# the leader recognises the batch, appends nothing and answers with the
# offsets it gave the first time. Writing to `/producers/app/init` bumps
# the epoch: a writer still holding a descriptor of the old epoch (a
# "zombie" instance of the app) is fenced with ESTALE.
#
# Run it: bash examples/idempotent-retry.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
run() { echo "\$ $1"; eval "$1"; }

mk_mount '[cluster]
clock = manual'
cd "$MNT"
run 'echo "create-topic payments" > ctl'

say "a producer identity: an id, epoch 0"
run 'mkdir producers/app'
run 'cat producers/app/id producers/app/epoch'
assert_eq 0 "$(cat producers/app/epoch)" "a new producer starts at epoch 0"

say "the first attempt: two payments in one write (sequences 0 and 1)"
run 'exec 3<>topics/payments/0/append:producer=app'
run "env printf 'pay-1\\npay-2\\n' >&3"        # one write(2): one batch
run 'read -r first <&3; echo "receipt: $first"'
assert_eq "payments 0 0 2" "$first" "offsets 0 and 1"
run 'cat producers/app/sequences'
assert_eq "payments 0 2" "$(cat producers/app/sequences)" "the next sequence is 2"

say "did it get through? retry the same batch with seq=0"
run 'exec 4<>topics/payments/0/append:producer=app:seq=0'
run "env printf 'pay-1\\npay-2\\n' >&4"
run 'read -r again <&4; echo "receipt: $again"'
run 'exec 4>&-'
assert_eq "$first" "$again" "the retry's receipt repeats the original offsets"
run 'cat topics/payments/0/leo'
assert_eq 2 "$(cat topics/payments/0/leo)" "and nothing was appended"

say "a write that skips sequences (seq=5 while 2 is expected) is refused: EPROTO"
run 'exec 4<>topics/payments/0/append:producer=app:seq=5'
echo "\$ echo pay-x >&4"
if echo pay-x >&4 2>"$MK_TMP/err"; then
	fail "a gap in the sequence should be refused"
else
	sed 's/^.*: //' "$MK_TMP/err"
	assert_match "Protocol error" "$(cat "$MK_TMP/err")" "a gap: EPROTO (Protocol error)"
fi
run 'exec 4>&-'
run 'tail -n 1 errors'
assert_match ' OUT_OF_ORDER_SEQUENCE_NUMBER ' "$(tail -n 1 errors)" "/errors names the Kafka error"
assert_eq 2 "$(cat topics/payments/0/leo)" "nothing appended"

say "the app restarts: init bumps the epoch; the old descriptor (fd 3) is fenced"
run 'echo 1 > producers/app/init'
run 'cat producers/app/epoch'
assert_eq 1 "$(cat producers/app/epoch)" "epoch 1"
echo "\$ echo pay-3 >&3        # the zombie's descriptor, opened under epoch 0"
if echo pay-3 >&3 2>"$MK_TMP/err"; then
	fail "a write of the old epoch should be fenced"
else
	sed 's/^.*: //' "$MK_TMP/err"
	assert_match "Stale file handle" "$(cat "$MK_TMP/err")" "the old epoch: ESTALE (Stale file handle)"
fi
run 'exec 3>&-'
assert_eq 2 "$(cat topics/payments/0/leo)" "the zombie appended nothing"

say "the new instance writes under epoch 1, from sequence 0"
run 'exec 3<>topics/payments/0/append:producer=app'
run "env printf 'pay-3\\n' >&3"
run 'read -r r <&3; echo "receipt: $r"'
run 'exec 3>&-'
assert_eq "payments 0 2 1" "$r" "pay-3 at offset 2"
run 'cat producers/app/sequences'
assert_eq "payments 0 1" "$(cat producers/app/sequences)" "epoch 1's next sequence is 1"

say "the log: every payment exactly once"
run 'cat topics/payments/0/records'
assert_eq $'pay-1\npay-2\npay-3' "$(cat topics/payments/0/records)" "pay-1, pay-2, pay-3, once each"

cd /
mk_unmount
