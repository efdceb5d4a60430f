#!/usr/bin/env bash
# rebalance.sh — the consumer-group rebalance lab, on the filesystem.
#
# A group `billing` reads topic `orders` (four partitions). Member c1 joins
# alone and owns all four; it reads, commits, reads a little more without
# committing. Then c2 joins: an eager rebalance. The generation grows, every
# partition is revoked and handed out again round-robin over the sorted
# members (c1: 0 and 2, c2: 1 and 3), and each owner resumes from the
# group's committed offset — so no partition has two owners, nothing
# committed is read twice, and what c1 read but did not commit is read
# again by whoever owns it now.
#
# Run it: bash examples/rebalance.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
run() { echo "\$ $1"; eval "$1"; }

mk_mount '[cluster]
clock = manual'
cd "$MNT"
B=groups/billing

say "a topic with four partitions, three orders in each"
run 'echo "create-topic orders partitions=4" > ctl'
for p in 0 1 2 3; do
	run "env printf 'o$p-0\no$p-1\no$p-2\n' > topics/orders/$p/append"
done

say "the group, and its first member"
run 'mkdir groups/billing'
run 'echo "c1 orders" > groups/billing/join'
run 'cat groups/billing/generation'
run 'cat groups/billing/members/c1/assignment'
assert_eq $'orders/0\norders/1\norders/2\norders/3' "$(cat $B/members/c1/assignment)" \
	"c1 alone owns all four partitions"

say "c1 polls everything and commits"
run 'cat groups/billing/members/c1/poll | wc -l'
run 'echo > groups/billing/members/c1/commit'
run 'cat groups/billing/offsets'
assert_eq $'orders 0 3\norders 1 3\norders 2 3\norders 3 3' "$(cat $B/offsets)" "committed 3 everywhere"

say "two more orders per partition; c1 reads four of them and does not commit"
for p in 0 1 2 3; do
	run "env printf 'o$p-3\no$p-4\n' > topics/orders/$p/append"
done
run 'cat groups/billing/members/c1/poll:max=4'
run 'cat groups/billing/members/c1/positions'

say "c2 joins: an eager rebalance"
run 'echo "c2 orders" > groups/billing/join'
run 'cat groups/billing/generation'
assert_eq 2 "$(cat $B/generation)" "the join moved the generation to 2"
run 'cat groups/billing/members/c1/assignment groups/billing/members/c2/assignment'
a1=$(cat $B/members/c1/assignment)
a2=$(cat $B/members/c2/assignment)
assert_eq $'orders/0\norders/2' "$a1" "c1 keeps orders/0 and orders/2 (round-robin over c1, c2)"
assert_eq $'orders/1\norders/3' "$a2" "c2 gets orders/1 and orders/3"
assert_eq "" "$(comm -12 <(echo "$a1" | sort) <(echo "$a2" | sort))" "no partition has two owners"
assert_eq $'orders/0\norders/1\norders/2\norders/3' "$(printf '%s\n%s\n' "$a1" "$a2" | sort)" \
	"every partition has an owner"
run 'cat groups/billing/state'

say "both resume from the committed offsets"
run 'cat groups/billing/members/c1/positions groups/billing/members/c2/positions'
assert_eq $'orders 0 3\norders 2 3' "$(cat $B/members/c1/positions)" "c1 resumes at the commits"
assert_eq $'orders 1 3\norders 3 3' "$(cat $B/members/c2/positions)" "c2 resumes at the commits"
run 'cat groups/billing/members/c1/poll:tsv'
run 'cat groups/billing/members/c2/poll:tsv'
all=$(cat groups/billing/members/c1/positions groups/billing/members/c2/positions | sort)
assert_eq $'orders 0 5\norders 1 5\norders 2 5\norders 3 5' "$all" \
	"after one poll each, every partition was read to its end exactly once since the commits"

say "c1's old generation is fenced"
run 'echo "c1 1" > groups/billing/heartbeat 2>&1 || echo "heartbeat refused (ESTALE): rejoin"'
assert_fails_with ESTALE mk_write "$MNT/$B/heartbeat" "c1 1"
assert_ok "heartbeat at the new generation" mk_write "$MNT/$B/heartbeat" "c1 2"

cd /
mk_unmount
