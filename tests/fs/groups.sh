#!/usr/bin/env bash
# groups.sh — consumer groups as files (docs/filesystem.md 5, issue 8): every file under
# /groups, each errno, nothing changed by a refused write, committed offsets
# in __consumer_offsets across remount, kill -9 and a broker crash followed
# by a promotion.
. "$(dirname "$0")/lib.sh"

G=$MNT/groups/g

# Everything a refused write must leave as it was.
snap() {
	mk_read "$G/state"
	mk_read "$G/offsets"
	local m
	for m in $(ls "$G/members"); do
		echo "$m: $(mk_read "$G/members/$m/positions" | tr '\n' ';')"
	done
	mk_read "$MNT/topics/__consumer_offsets/0/leo"
}

# assert_refused ERRNO CMD...: CMD fails with ERRNO and the group is unchanged.
assert_refused() {
	local before after
	before=$(snap)
	assert_fails_with "$@"
	after=$(snap)
	assert_eq "$before" "$after" "  ... and nothing changed"
}

mk_mount '[cluster]
clock = manual
[producer]
linger.ms = 0'

mk_ctl "create-topic t partitions=4"
for p in 0 1 2 3; do
	mk_write_e "$MNT/topics/t/$p/append" "a$p\nb$p\nc$p\n" >/dev/null
done

# ---- groups ------------------------------------------------------------
assert_eq "" "$(ls "$MNT/topics" | grep __consumer_offsets)" "no offsets topic before the first group"
assert_ok "mkdir /groups/g" mk_mkdir "$G"
assert_eq "g" "$(ls "$MNT/groups")" "ls /groups"
assert_eq "__consumer_offsets t" "$(ls "$MNT/topics" | tr '\n' ' ' | sed 's/ $//')" \
	"the first group creates __consumer_offsets"
assert_eq "config generation heartbeat join leave members offsets state" \
	"$(ls "$G" | tr '\n' ' ' | sed 's/ $//')" "ls /groups/g"
assert_fails_with EEXIST mk_mkdir "$G"
assert_fails_with EINVAL mk_mkdir "$MNT/groups/a:b"
assert_eq "0" "$(mk_read "$G/generation")" "a new group is at generation 0"
assert_match "state empty" "$(mk_read "$G/state")" "a new group is empty"
assert_fails_with ENOENT mk_write "$MNT/groups/nope/join" "m1 t"

# ---- join, heartbeat ---------------------------------------------------------
assert_refused EINVAL mk_write "$G/join" "m1"
assert_refused ENOENT mk_write "$G/join" "m1 t,nope"
assert_refused EINVAL mk_write "$G/join" "m1 t,,t"
assert_refused EINVAL mk_write "$G/join" "m:1 t"
assert_ok "join m1 t" mk_write "$G/join" "m1 t"
assert_eq "1" "$(mk_read "$G/generation")" "a join is a rebalance: generation 1"
assert_eq "m1" "$(ls "$G/members")" "ls members"
assert_eq "assignment commit generation lag positions seek" \
	"$(ls "$G/members/m1" | grep -v poll | tr '\n' ' ' | sed 's/ $//')" "ls members/m1"
assert_true "members/m1/poll is listed" bash -c "ls '$G/members/m1' | grep -qx poll"
assert_eq $'t/0\nt/1\nt/2\nt/3' "$(mk_read "$G/members/m1/assignment")" "m1 owns all four"
assert_eq "1" "$(mk_read "$G/members/m1/generation")" "member generation"
assert_eq $'t 0 0\nt 1 0\nt 2 0\nt 3 0' "$(mk_read "$G/members/m1/positions")" \
	"positions start at the log start (auto.offset.reset=earliest)"
assert_eq $'t 0 3\nt 1 3\nt 2 3\nt 3 3' "$(mk_read "$G/members/m1/lag")" "lag = hw - position"
assert_refused ESTALE mk_write "$G/heartbeat" "m1 0"
assert_refused ENOENT mk_write "$G/heartbeat" "mx 1"
assert_refused EINVAL mk_write "$G/heartbeat" "m1 x"
assert_refused EINVAL mk_write "$G/heartbeat" "m1"
assert_ok "heartbeat m1 1" mk_write "$G/heartbeat" "m1 1"
assert_fails_with ENOENT mk_read "$G/members/mx/positions"

# ---- poll -------------------------------------------------------------------
assert_fails_with EINVAL mk_read "$G/members/m1/poll:bogus"
assert_fails_with ENOENT mk_read "$G/members/m1/poll@3"
out=$(mk_read "$G/members/m1/poll:tsv:max=5")
assert_eq 5 "$(printf '%s\n' "$out" | wc -l)" "poll:max=5 returns five records"
assert_match $'^t\t0\t0\t[0-9]+\t\\\\N\ta0$' "$(printf '%s\n' "$out" | head -n 1)" \
	"poll:tsv names topic and partition, then the records fields"
assert_eq $'t 0 3\nt 1 2\nt 2 0\nt 3 0' "$(mk_read "$G/members/m1/positions")" \
	"positions moved by exactly the five records returned"
out=$(mk_read "$G/members/m1/poll")
# The next poll starts after the partition the last one ended on (t/1).
assert_eq $'a2\nb2\nc2\na3\nb3\nc3\nc1' "$out" "the next poll returns the other seven (plain values)"
assert_eq "" "$(mk_read "$G/members/m1/poll")" "at the hw a poll returns nothing"
assert_eq $'t 0 0\nt 1 0\nt 2 0\nt 3 0' "$(mk_read "$G/members/m1/lag")" "lag 0 at the hw"
mk_write "$MNT/topics/t/2/append" "d2" >/dev/null
assert_match '^\{"topic":"t","partition":2,"offset":3,.*"value":"d2"' \
	"$(mk_read "$G/members/m1/poll:json")" "poll:json"
mk_write "$MNT/topics/t/2/append" "e2" >/dev/null
assert_eq "e2" "$(mk_read "$G/members/m1/poll:committed")" "poll:committed (LSO = HW today)"
# A reader that stops early consumed only what it read.
mk_write_e "$MNT/topics/t/3/append" "x\ny\nz\n" >/dev/null
"$MK_PYTHON" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.read(fd, 2)
os.close(fd)' "$G/members/m1/poll"
assert_eq "t 3 4" "$(mk_read "$G/members/m1/positions" | grep '^t 3')" \
	"a 2-byte read of a poll consumed one record"
# :follow waits for more, and returns it.
mk_py follow "$G/members/m1/poll:follow:max=3" "$MK_TMP/fd" >"$MK_TMP/follow.out" &
fpid=$!
mk_wait_for 10 test -s "$MK_TMP/follow.out" || true
assert_eq $'y\nz' "$(cat "$MK_TMP/follow.out")" "poll:follow returns what there is"
mk_write "$MNT/topics/t/1/append" "late" >/dev/null
mk_wait_for 10 mk_proc_gone $fpid
assert_eq $'y\nz\nlate' "$(cat "$MK_TMP/follow.out")" "poll:follow:max=3 gets the later record, then EOF"

# ---- seek --------------------------------------------------------------------
assert_ok "seek t/0 1" mk_write "$G/members/m1/seek" "t/0 1"
assert_eq "t 0 1" "$(mk_read "$G/members/m1/positions" | head -n 1)" "seek moved the position"
assert_refused ERANGE mk_write "$G/members/m1/seek" "t/0 99"
assert_refused EPERM mk_write "$G/members/m1/seek" "t/9 0"
assert_refused EINVAL mk_write "$G/members/m1/seek" "t0 1"
assert_refused EINVAL mk_write "$G/members/m1/seek" "t/0 -1"

# ---- commit ------------------------------------------------------------------
assert_eq "" "$(mk_read "$G/offsets")" "nothing committed yet"
assert_ok "commit (empty line: the positions)" mk_write_e "$G/members/m1/commit" "\n"
assert_eq $'t 0 1\nt 1 4\nt 2 5\nt 3 6' "$(mk_read "$G/offsets")" "offsets = the positions"
assert_ok "commit t/0 3" mk_write "$G/members/m1/commit" "t/0 3"
assert_eq "t 0 3" "$(mk_read "$G/offsets" | head -n 1)" "explicit offset committed"
assert_refused ESTALE mk_write "$G/members/m1/commit" "generation=0"
assert_refused EPERM mk_write_e "$G/members/m1/commit" "t/0 2\nt/7 0\n"
assert_refused ERANGE mk_write "$G/members/m1/commit" "t/0 99"
assert_refused EINVAL mk_write "$G/members/m1/commit" "2"
assert_refused ENOENT mk_write_e "$G/members/mx/commit" "\n"
assert_ok "commit generation=1 with an offset line" mk_write_e "$G/members/m1/commit" "generation=1\nt/1 2\n"
assert_eq "t 1 2" "$(mk_read "$G/offsets" | sed -n 2p)" "generation-checked explicit commit"
assert_ok "commit 1" mk_write "$G/members/m1/commit" "1"
assert_eq $'t 0 1\nt 1 4\nt 2 5\nt 3 6' "$(mk_read "$G/offsets")" "commit 1 = the positions again"
assert_match $'g/t/0\t1' "$(mk_read "$MNT/topics/__consumer_offsets/0/records:tsv")" \
	"commits are keyed records of __consumer_offsets"

# ---- rebalance -------------------------------------------------------------------
assert_ok "join m2 t" mk_write "$G/join" "m2 t"
assert_eq "2" "$(mk_read "$G/generation")" "generation 2"
assert_eq $'t/0\nt/2' "$(mk_read "$G/members/m1/assignment")" "m1: t/0 t/2"
assert_eq $'t/1\nt/3' "$(mk_read "$G/members/m2/assignment")" "m2: t/1 t/3"
assert_eq $'t 1 4\nt 3 6' "$(mk_read "$G/members/m2/positions")" "m2 starts at the committed offsets"
assert_refused ESTALE mk_write "$G/heartbeat" "m1 1"
assert_refused EPERM mk_write "$G/members/m1/commit" "t/1 0"
assert_match "state stable" "$(mk_read "$G/state")" "state stable with members"
assert_match "member m2 topics t .* assignment t/1 t/3" "$(mk_read "$G/state")" "state lists assignments"
assert_match "t/1 owner m2 \[.*\] committed 4 position 4 hw 4 lag 0" "$(mk_read "$G/state")" \
	"state: committed, position, hw and lag per partition"
assert_ok "join m1 again with the same topics" mk_write "$G/join" "m1 t"
assert_eq "3" "$(mk_read "$G/generation")" "joining again is a rebalance too"
assert_refused EBUSY mk_rmdir "$G"
assert_ok "leave m2" mk_write "$G/leave" "m2"
assert_eq "4" "$(mk_read "$G/generation")" "a leave is a rebalance"
assert_refused ENOENT mk_write "$G/leave" "m2"
assert_refused EINVAL mk_write "$G/leave" "m2 m3"

# ---- sessions --------------------------------------------------------------------
mk_write "$MNT/clock" "+6000"
assert_ok "heartbeat m1 4" mk_write "$G/heartbeat" "m1 4"
mk_write "$MNT/clock" "+4001"
mk_ctl expire-members
assert_eq "m1" "$(ls "$G/members")" "m1 heartbeated: not expired"
mk_write "$MNT/clock" "+6000"
mk_ctl expire-members
assert_eq "" "$(ls "$G/members")" "m1 silent for 10001 ms: expired"
assert_eq "5" "$(mk_read "$G/generation")" "an expiry is a rebalance"

# ---- config -----------------------------------------------------------------------
assert_eq $'auto.offset.reset=earliest\nsession.timeout.ms=10000\nmax.poll.records=500' \
	"$(mk_read "$G/config")" "group config: the [group] defaults"
assert_refused EINVAL mk_write "$G/config" "auto.offset.reset=sometimes"
assert_refused EINVAL mk_write "$G/config" "nope=1"
assert_ok "auto.offset.reset=none" mk_write "$G/config" "auto.offset.reset=none"
mk_ctl "create-topic u"
mk_write "$MNT/topics/u/0/append" "u0" >/dev/null
mk_write "$G/join" "m3 u,t"
assert_eq "u 0 none" "$(mk_read "$G/members/m3/positions" | grep '^u')" "none: no position without a commit"
assert_fails_with ERANGE mk_read "$G/members/m3/poll"
assert_ok "latest" mk_write "$G/config" "auto.offset.reset=latest"
mk_write "$G/leave" "m3"
mk_write "$G/join" "m3 u"
assert_eq "u 0 1" "$(mk_read "$G/members/m3/positions")" "latest: the hw"
mk_write "$G/leave" "m3"

# ---- the internal topic -------------------------------------------------------------
assert_fails_with EPERM mk_write "$MNT/topics/__consumer_offsets/0/append" "x"
assert_fails_with EPERM mk_write "$MNT/topics/__consumer_offsets/append" "x"
assert_fails_with EPERM mk_rmdir "$MNT/topics/__consumer_offsets"
assert_fails_with EPERM mk_ctl "delete-topic __consumer_offsets"

# ---- persistence ------------------------------------------------------------------------
offsets=$(mk_read "$G/offsets")
gen=$(mk_read "$G/generation")
mk_remount
assert_eq "$offsets" "$(mk_read "$G/offsets")" "offsets survive a remount"
assert_eq "$gen" "$(mk_read "$G/generation")" "the generation survives a remount"
assert_eq "auto.offset.reset=latest" "$(mk_read "$G/config" | head -n 1)" "the group config survives"
mk_write "$G/join" "m1 t"
mk_write "$G/members/m1/commit" "t/2 2"
mk_kill 2>/dev/null
mk_mount
assert_eq "t 2 2" "$(mk_read "$G/offsets" | grep '^t 2')" "a commit survives kill -9"
assert_eq "$((gen + 1))" "$(mk_read "$G/generation")" "the generation never moves back"
# A crash right after a commit reached the log, before the coordinator
# applied it: the log is the truth at the next mount.
mk_unmount
MKFS_FAILPOINTS=group.persist.after-append@2 mk_mount
mk_write "$G/join" "m1 t"
mk_write "$G/members/m1/commit" "t/2 1" >/dev/null 2>&1
mk_wait_for 10 eval '! mk_mounted' || fail "the failpoint did not fire"
mk_kill 2>/dev/null
mk_mount
assert_eq "t 2 1" "$(mk_read "$G/offsets" | grep '^t 2')" \
	"a commit in the log when the daemon died is there after the mount"
mk_ctl "create-topic h"
assert_ok "mkdir groups/h" mk_mkdir "$MNT/groups/h"
assert_ok "rmdir groups/h" mk_rmdir "$MNT/groups/h"
assert_fails_with ENOENT mk_rmdir "$MNT/groups/h"
mk_remount
assert_eq "g" "$(ls "$MNT/groups")" "a deleted group stays deleted"
mk_unmount

# ---- a broker crash and a promotion: offsets on the new leader ---------------------------
rm -rf "$DATA"
mkdir -p "$DATA"
mk_mount '[cluster]
brokers = 1,2
clock = manual
[replication]
mode = auto
fetch.interval.ms = 10
[group]
offsets.topic.replication.factor = 2'
mk_ctl "create-topic t partitions=2 replication.factor=2"
mk_write "$MNT/topics/t/0/append" "r" >/dev/null
mk_mkdir "$G"
assert_eq "1 2" "$(mk_read "$MNT/topics/__consumer_offsets/0/replicas")" "offsets topic with 2 replicas"
mk_write "$G/join" "m1 t"
assert_ok "commit with acks=all on two replicas" mk_write "$G/members/m1/commit" "t/0 1"
leader=$(mk_read "$MNT/topics/__consumer_offsets/0/leader")
other=$((3 - leader))
mk_wait_for 10 eval '[ "$(mk_read "$MNT/topics/__consumer_offsets/0/isr")" = "1 2" ]'
mk_write "$MNT/brokers/$leader/crash" ""
assert_ok "promote the other replica" mk_write "$MNT/brokers/$other/promote" "__consumer_offsets/0"
assert_eq "$other" "$(mk_read "$MNT/topics/__consumer_offsets/0/leader")" "new leader"
assert_eq "t 0 1" "$(mk_read "$G/offsets")" "the commit is read back from the new leader"
assert_eq "1" "$(mk_read "$G/generation")" "and the generation"
assert_ok "commit through the new leader" mk_write "$G/members/m1/commit" "t/0 0"
assert_eq "t 0 0" "$(mk_read "$G/offsets")" "committed"
# The background tick (mode = auto) expires silent members by itself.
mk_write "$G/join" "m2 t"
mk_write "$MNT/clock" "+10001"
mk_wait_for 10 eval '[ -z "$(ls "$G/members")" ]'
assert_eq "" "$(ls "$G/members")" "auto mode: the tick expired both members"
assert_eq "3" "$(mk_read "$G/generation")" "one rebalance for the sweep"
mk_remount
assert_eq "t 0 0" "$(mk_read "$G/offsets")" "and it survives a remount"
assert_eq "3" "$(mk_read "$G/generation")" "the generation too"
mk_unmount
