#!/usr/bin/env bash
# delivery-semantics.sh — at-most-once versus at-least-once, through files.
#
# Topic `payments` holds five records, p0 .. p4. A consumer script polls one
# record at a time, "processes" it (appends it to a ledger) and commits its
# position. The only difference between the two runs is the order:
#
#   at-most-once:   commit, then process   (a crash in between loses it)
#   at-least-once:  process, then commit   (a crash in between repeats it)
#
# Each script is killed (kill -9 of itself) at the third record, between
# the two steps. Its session then expires on the cluster clock, a fresh
# consumer joins the group, and — eager rebalance — resumes from the
# committed offset. The ledgers show what each order guarantees.
#
# Run it: bash examples/delivery-semantics.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
run() { echo "\$ $1"; eval "$1"; }

mk_mount '[cluster]
clock = manual'
cd "$MNT"
run 'echo "create-topic payments" > ctl'
run "env printf 'p0\np1\np2\np3\np4\n' > topics/payments/0/append"

# The consumer: consumer.sh MODE GROUP MEMBER LEDGER CRASH_AT
cat >"$MK_TMP/consumer.sh" <<'SH'
mode=$1 g=groups/$2 m=$3 ledger=$4 crash_at=$5
echo "$m payments" > "$g/join"
n=0
while :; do
	rec=$(cat "$g/members/$m/poll:max=1")
	[ -n "$rec" ] || break
	n=$((n + 1))
	if [ "$mode" = at-most-once ]; then
		echo > "$g/members/$m/commit"                     # commit first
		[ "$n" = "$crash_at" ] && kill -9 $$                # crash here
		echo "$rec" >> "$ledger"                          # then process
	else
		echo "$rec" >> "$ledger"                          # process first
		[ "$n" = "$crash_at" ] && kill -9 $$                # crash here
		echo > "$g/members/$m/commit"                     # then commit
	fi
done
SH
echo '$ cat consumer.sh'
cat "$MK_TMP/consumer.sh"

# The script and the ledgers live beside the mount, in $T (shown as T/).
T=$MK_TMP
for mode in at-most-once at-least-once; do
	say "$mode: the first consumer crashes at the third record"
	: >"$T/$mode.ledger"
	run "mkdir groups/$mode"
	run "bash \$T/consumer.sh $mode $mode c1 \$T/$mode.ledger 3; echo \"exit status \$?\""
	run "cat \$T/$mode.ledger"
	run "cat groups/$mode/offsets"
	say "$mode: c1's session expires; c2 joins and resumes from the commit"
	run 'echo +10001 > clock; echo expire-members > ctl'
	run "ls groups/$mode/members"
	run "bash \$T/consumer.sh $mode $mode c2 \$T/$mode.ledger 0"
	run "cat \$T/$mode.ledger"
done 2>&1

say "what each order guarantees"
amo=$(tr '\n' ' ' <"$MK_TMP/at-most-once.ledger" | sed 's/ $//')
alo=$(tr '\n' ' ' <"$MK_TMP/at-least-once.ledger" | sed 's/ $//')
echo "at-most-once ledger:  $amo"
echo "at-least-once ledger: $alo"
assert_eq "p0 p1 p3 p4" "$amo" "at-most-once: p2 was committed, then lost in the crash"
assert_eq "p0 p1 p2 p2 p3 p4" "$alo" "at-least-once: p2 was processed, then repeated after the crash"
assert_eq "payments 0 5" "$(cat groups/at-most-once/offsets)" "at-most-once: committed to the end"
assert_eq "payments 0 5" "$(cat groups/at-least-once/offsets)" "at-least-once: committed to the end"
assert_eq "c2" "$(ls groups/at-least-once/members)" "the crashed member expired; c2 remains"

cd /
mk_unmount
