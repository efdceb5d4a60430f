#!/usr/bin/env bash
# retention.sh — the delete policy on the filesystem: segments rolling and
# expiring under the manual clock, the log start moving.
#
# A tiny segment.bytes makes every batch its own segment. Records written at
# clock 0, 1000, 2000, ... carry those timestamps. With retention.ms=3500,
# `/ctl retention` deletes every closed segment whose newest record is older
# than now - 3500 — oldest first, never the active segment — and the log
# start moves to the first offset kept. Reading below it is ERANGE;
# records@earliest starts there. delete-records moves it further by hand.
#
# Run it: bash examples/retention.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
run() { echo "\$ $1"; eval "$1"; }

mk_mount '[cluster]
clock = manual'
cd "$MNT"
T=topics/metrics/0

say "a topic whose segments hold one batch each, kept 3500 ms"
run 'echo "create-topic metrics segment.bytes=100 retention.ms=3500" > ctl'

say "one record a second (manual clock), five of them"
for i in 0 1 2 3 4; do
	run "echo reading-$i > $T/append; echo +1000 > clock"
done
run "cat clock"
run "ls $T/segments | grep log"
assert_eq "5" "$(ls $T/segments | grep -c '\.log$')" "five segments, the last one active"

say "retention: now is 5000, so closed segments whose newest record is older than 1500 go"
run "echo retention > ctl"
run "cat $T/log_start_offset"
assert_eq "2" "$(cat $T/log_start_offset)" "records 0 and 1 (timestamps 0 and 1000) are gone"
run "ls $T/segments | grep log"
assert_eq "3" "$(ls $T/segments | grep -c '\.log$')" "three segments left"
run "cat $T/records"
assert_eq $'reading-2\nreading-3\nreading-4' "$(cat $T/records)" "records@earliest starts at the log start"

say "below the log start is ERANGE"
echo "\$ cat $T/records@1"
if out=$(cat $T/records@1 2>&1); then
	fail "records@1 should fail"
else
	echo "$out"
	assert_match "Numerical result out of range" "$out" "records@1 is ERANGE"
fi
run "tail -n 1 errors"

say "later: everything but the active segment expires"
run "echo +10000 > clock"
run "echo retention > ctl"
run "cat $T/log_start_offset"
assert_eq "4" "$(cat $T/log_start_offset)" "the active segment (offset 4) always stays"
run "cat $T/records"
assert_eq "reading-4" "$(cat $T/records)" "only the newest record is left"

say "delete-records moves the log start by hand (at most to the high watermark)"
run "echo late-5 > $T/append"
run "echo 5 > $T/delete-records"
run "grep -E '^(log_start_offset|hw|leo)' $T/state"
assert_eq "5" "$(cat $T/log_start_offset)" "DeleteRecords moved the log start to 5"
assert_eq "late-5" "$(cat $T/records)" "records start there"

cd /
mk_unmount
