#!/usr/bin/env bash
# exactly-once.sh — consume, transform, produce, exactly once, through files.
#
# Topic `in` (two partitions) holds 30 records. An ETL script reads them
# through a group member, upper-cases them, and writes them to topic `out`
# inside the transaction of transactional id `etl`, with the input offsets
# staged in the same transaction (Kafka's sendOffsetsToTransaction):
#
#   echo 1 > transactions/etl/init            fence the previous incarnation
#   echo "worker in" > groups/g/join          positions = committed offsets
#   loop: cat groups/g/members/worker/poll:tsv:max=4
#         printf UPPER > topics/out/0/append:txn=etl
#         printf "g in/P NEXT" > transactions/etl/offsets
#         echo 1 > transactions/etl/commit
#
# The script is killed with SIGKILL (its whole process group, so nothing of
# it lingers) at a random point, three times: after it wrote output but
# before it committed, after it staged offsets, in the middle of a write...
# wherever the dice say. Each rerun's init aborts what the killed one left
# open and fences its descriptors; its join restarts from the committed
# offsets. At the end, read_committed (`records:committed`) shows every
# input record exactly once; read_uncommitted (`records`) shows the aborted
# attempts too.
#
# Run it: bash examples/exactly-once.sh   (after `ninja -C build`)
# MKFS_EOS_SEED=N repeats a run. It checks its own output and exits
# non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
run() { echo "\$ $1"; eval "$1"; }

SEED=${MKFS_EOS_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$SEED
note "seed $SEED (MKFS_EOS_SEED=$SEED repeats this run)"

mk_mount '[cluster]
clock = manual'
cd "$MNT"
run 'echo "create-topic in partitions=2" > ctl'
run 'echo "create-topic out" > ctl'
for i in $(seq 0 29); do
	printf 'rec-%02d\n' "$i"
done >"$MK_TMP/input"
# keyed by the record's number mod 2... or simply split: even to 0, odd to 1
run "grep -E '[02468]\$' '$MK_TMP/input' | cat > topics/in/0/append"
run "grep -E '[13579]\$' '$MK_TMP/input' | cat > topics/in/1/append"
run 'mkdir groups/g transactions/etl'

# The ETL: etl.sh MNT STEPLOG. Every step it finishes is one line of STEPLOG.
cat >"$MK_TMP/etl.sh" <<'SH'
set -e
cd "$1"
log=$2
echo 1 > transactions/etl/init;                   echo init >>"$log"
echo "worker in" > groups/g/join;                  echo join >>"$log"
while :; do
	batch=$(cat groups/g/members/worker/poll:tsv:max=4)
	[ -n "$batch" ] || break
	echo "polled $(printf '%s\n' "$batch" | wc -l)" >>"$log"
	# topic partition offset timestamp key value: transform the value
	out=$(printf '%s\n' "$batch" | cut -f6 | tr a-z A-Z)
	env printf '%s\n' "$out" > topics/out/0/append:txn=etl
	echo wrote >>"$log"
	offs=$(printf '%s\n' "$batch" | awk -F'\t' '
		{ if (!($2 in next_) || $3 + 1 > next_[$2]) next_[$2] = $3 + 1 }
		END { for (p in next_) printf "g in/%s %d\n", p, next_[p] }')
	env printf '%s\n' "$offs" > transactions/etl/offsets
	echo staged >>"$log"
	echo 1 > transactions/etl/commit
	echo committed >>"$log"
done
echo done >>"$log"
SH

# One incarnation: run it in its own process group, and (unless KILL_AT is
# 0) kill the whole group once its log has KILL_AT lines.
incarnation() {
	local kill_at=$1 log=$MK_TMP/steps.$2
	: >"$log"
	setsid bash "$MK_TMP/etl.sh" "$MNT" "$log" >"$MK_TMP/etl.out" 2>&1 &
	local pid=$!
	if [ "$kill_at" -gt 0 ]; then
		mk_wait_for 30 eval '[ "$(wc -l <"$log")" -ge "$kill_at" ] || ! kill -0 $pid 2>/dev/null'
		kill -9 -- "-$pid" 2>/dev/null
	fi
	{ wait "$pid"; } 2>/dev/null
	local rc=$?
	mk_wait_for 10 eval '! pgrep -g "$pid" >/dev/null'
	echo "#    incarnation $2: $(wc -l <"$log") steps, last: $(tail -n 1 "$log"), status $rc"
}

say "three incarnations, each killed at a random step"
for n in 1 2 3; do
	incarnation $((1 + RANDOM % 12)) "$n"
done
run 'cat transactions/etl/state transactions/etl/epoch'

say "the last incarnation runs to the end"
incarnation 0 final
assert_eq "done" "$(tail -n 1 "$MK_TMP/steps.final")" "the last incarnation finished"

say "read_committed: every input record exactly once"
run 'cat topics/out/0/records:committed | sort | head -n 5'
sort "$MK_TMP/input" | tr a-z A-Z >"$MK_TMP/want"
mk_read "$MNT/topics/out/0/records:committed" | sort >"$MK_TMP/got"
assert_files_eq "$MK_TMP/want" "$MK_TMP/got" \
	"records:committed of out = the 30 inputs, upper-cased, each once"
run 'cat groups/g/offsets'
assert_eq $'in 0 15\nin 1 15' "$(mk_read "$MNT/groups/g/offsets")" \
	"the group's committed offsets are the input's ends"
say "read_uncommitted also shows what the killed incarnations wrote"
total=$(mk_read "$MNT/topics/out/0/records" | wc -l)
note "records: $total lines, records:committed: $(wc -l <"$MK_TMP/got")"
assert_true "records (read_uncommitted) has at least as many" [ "$total" -ge 30 ]
assert_eq "$(mk_read "$MNT/topics/out/0/hw")" "$(mk_read "$MNT/topics/out/0/lso")" \
	"nothing is left open: LSO = HW"
cd /
mk_unmount
