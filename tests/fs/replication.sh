#!/usr/bin/env bash
# replication.sh — replication through the mount (docs/filesystem.md 2, 5, 6, 7, 9;
# docs/filesystem.md 5 and 6): followers fetching from their log end, the
# high watermark as the consumers' limit, acks=0/1/all and their errors,
# ISR shrink and return, crashes, torn tails, promotions clean and unclean,
# divergent tails truncated, state surviving a remount, auto replication.
#
# Time is the manual clock; replication moves only by explicit fetch rounds
# (or, in the auto section, by the daemon's fetchers, awaited by polling).
. "$(dirname "$0")/lib.sh"

# ---- helpers ------------------------------------------------------------------

# A writer for the background: one write(2) on a descriptor opened O_RDWR,
# then the receipts read back from it. Prints the receipts, or the errno
# name and exits 1.
cat >"$MK_TMP/bgwrite.py" <<'PY'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR)
    os.write(fd, sys.argv[2].encode())
    sys.stdout.write(os.read(fd, 65536).decode())
    os.close(fd)
except OSError as e:
    sys.stdout.write(errno.errorcode.get(e.errno, str(e.errno)) + "\n")
    sys.exit(1)
PY

# bg_write PATH DATA: start the writer in the background; BG_PID, BG_OUT.
BG_N=0
bg_write() {
	BG_N=$((BG_N + 1))
	BG_OUT=$MK_TMP/bg.$BG_N.out
	"$MK_PYTHON" -I "$MK_TMP/bgwrite.py" "$1" "$2" >"$BG_OUT" 2>&1 &
	BG_PID=$!
}

# A writer in the foreground, bounded: receipts or the errno name.
fg_write() {
	timeout 20 "$MK_PYTHON" -I "$MK_TMP/bgwrite.py" "$1" "$2"
}

# True when PID is inside a write(2) (syscall 1 on x86-64).
in_write() {
	local sc
	sc=$(cat "/proc/$1/syscall" 2>/dev/null) || return 1
	[ "${sc%% *}" = 1 ]
}

# blocked_after_append PID LEO-FILE N: the leader's log end reached N (the
# batch is appended) and the writer is still alive inside its write.
blocked_after_append() {
	[ "$(<"$2")" = "$3" ] && kill -0 "$1" 2>/dev/null && in_write "$1"
}

# bg_finish: wait (bounded) for the background writer; BG_RC, BG_RES.
bg_finish() {
	if ! mk_wait_for 20 mk_proc_gone "$BG_PID"; then
		fail "the background writer did not finish"
		kill -9 "$BG_PID" 2>/dev/null
	fi
	wait "$BG_PID"
	BG_RC=$?
	BG_RES=$(cat "$BG_OUT")
}

# A fresh cluster: unmount what runs, empty the data directory, mount INI.
fresh() {
	[ -z "$MK_PID" ] || mk_unmount
	rm -rf "${DATA:?}"/*
	mk_mount "$1"
}

# The replica line of broker B for topic T partition P in /brokers/B/replicas
# without the last_fetch_ms column: "role leo in_sync".
replica_of() {
	echo "$(<"$MNT/brokers/$1/replicas")" | awk -v t="$2" -v p="$3" \
		'$1 == t && $2 == p { print $3, $4, $5 }'
}

# The line of broker B in a partition's state picture, spaces squeezed.
state_line() {
	echo "$(<"$MNT/topics/$1/$2/state")" | tr -s ' ' | grep "^ broker $3 "
}

# A control write whose errno does not matter, with bash alone.
cmd() { printf '%s\n' "${2:-}" >"$1"; }

# Value files are read with bash alone (no interpreter start-up per read);
# reads whose errno matters go through mk_read.
val() { echo "$(<"$MNT/topics/$1/$2/$3")"; }

BASE='[cluster]
brokers = 1,2
default.replication.factor = 2
clock = manual'

# ---- 1. a follower fetches from its log end ------------------------------------
fresh "$BASE"
cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0
assert_eq "1 2" "$(val t 0 replicas)" "t-0 has replicas 1 2"
assert_eq "1 2" "$(val t 0 isr)" "both replicas start in sync"
assert_eq "1" "$(val t 0 leader)" "broker 1 leads t-0"
assert_eq "follower 0 true" "$(replica_of 2 t 0)" "broker 2 hosts an empty follower"

assert_eq "t 0 0 2" "$(fg_write "$P/append:acks=1" $'a\nb\n')" "acks=1 batch a,b gets offset 0"
assert_eq "2 0" "$(val t 0 leo) $(val t 0 hw)" "leo 2, hw 0 before the follower fetches"
assert_eq "1 2" "$(val t 0 isr)" "a follower one round behind is still in sync"
assert_match '\[\|\++\] leo 2$' "$(state_line t 0 1)" "state: the leader's log is all above the HW"
assert_match 'in-sync \[\|? *\]\|? ?leo 0$' "$(state_line t 0 2)" "state: broker 2 in sync with an empty log"
assert_eq "" "$(mk_read "$P/records")" "records: nothing visible below hw 0"

cmd "$MNT/brokers/2/fetch" || fail "/brokers/2/fetch"
assert_eq "follower 2 true" "$(replica_of 2 t 0)" "after one fetch broker 2 has leo 2"
assert_eq "2 2" "$(val t 0 leo) $(val t 0 hw)" "the fetch moves the HW to 2"
assert_match '\[#+\]\| leo 2$' "$(state_line t 0 2)" "state: broker 2 committed up to the HW"
assert_eq $'a\nb' "$(mk_read "$P/records")" "records a b visible"

# The next fetch starts at the follower's log end: nothing to copy.
cmd "$MNT/brokers/2/fetch" "1" || fail "/brokers/2/fetch again"
assert_eq "follower 2 true" "$(replica_of 2 t 0)" "a fetch at the leader's end copies nothing"

# ---- consumers stop at the HW ---------------------------------------------------
assert_eq "t 0 2 1" "$(fg_write "$P/append:acks=1" $'c\n')" "acks=1 c gets offset 2"
assert_eq "3 2" "$(val t 0 leo) $(val t 0 hw)" "leo 3 above hw 2"
assert_eq $'a\nb' "$(mk_read "$P/records")" "records stop at the HW: c is not shown"
assert_eq "" "$(mk_read "$P/records@2")" "records@2 (= hw) is empty, not an error"
assert_eq "" "$(mk_read "$P/records@3")" "records@3 (= leo) is empty"
assert_fails_with ERANGE mk_read "$P/records@4"
assert_eq "b" "$(mk_read "$P/records@-1")" "records@-1 counts back from the HW"
assert_eq "" "$(mk_read "$P/records@latest")" "records@latest is at the HW"
assert_eq "2" "$(mk_read "$P/records:tsv" | wc -l)" "the tsv view stops at the HW too"
assert_eq "a" "$(mk_read "$P/records:max=5" | head -n 1)" "max= does not pass the HW"

# A follower reader at the HW sees c only once replicated.
"$MK_PYTHON" -I "$MK_TMP/mkio.py" follow "$P/records@2:follow" "$MK_TMP/follow.fd" \
	>"$MK_TMP/follow.out" 2>&1 &
FOLLOW=$!
mk_wait_for 10 test -s "$MK_TMP/follow.fd" || fail "follow reader did not open"
ffd=$(cat "$MK_TMP/follow.fd" 2>/dev/null)
assert_true "a :follow reader at the HW blocks" mk_wait_for 10 mk_blocked_in_read "$FOLLOW" "${ffd:-0}"
assert_eq "" "$(cat "$MK_TMP/follow.out")" "it has read nothing while c is above the HW"
cmd "$MNT/ctl" "replicate" || fail "/ctl replicate"
assert_eq "3 3" "$(val t 0 leo) $(val t 0 hw)" "/ctl replicate: hw 3"
assert_true "the :follow reader gets c after the round" \
	mk_wait_for 10 grep -qx c "$MK_TMP/follow.out"
kill "$FOLLOW" 2>/dev/null
wait "$FOLLOW" 2>/dev/null

# acks=0: appended, offset unknown.
assert_eq "t 0 - 1" "$(fg_write "$P/append:acks=0" $'d\n')" "acks=0 receipt has no offset"
assert_eq "4 3" "$(val t 0 leo) $(val t 0 hw)" "acks=0 appended on the leader, above the HW"
cmd "$MNT/brokers/fetch" || fail "/brokers/fetch"
assert_eq "4" "$(val t 0 hw)" "/brokers/fetch: hw 4"

# ---- 2. the seed chapter 5 lab, under both truncation modes -------------------------
for mode in hw epoch; do
	fresh "$BASE
min.insync.replicas = 2
[replication]
truncation = $mode"
	cmd "$MNT/ctl" "create-topic events" || bail "create-topic events"
	E=$MNT/topics/events/0
	bg_write "$E/append:acks=all" $'safe\n'
	assert_true "[$mode] acks=all: appended (leo 1) and the writer blocked" \
		mk_wait_for 10 blocked_after_append "$BG_PID" "$E/leo" 1
	assert_eq "0" "$(val events 0 hw)" "[$mode] acks=all pending: HW 0"
	assert_eq "follower 0 true" "$(replica_of 2 events 0)" "[$mode] broker 2 has not fetched"
	assert_eq "" "$(cat "$BG_OUT")" "[$mode] no receipt while pending"
	cmd "$MNT/brokers/2/fetch" || fail "[$mode] fetch"
	bg_finish
	assert_eq "0 events 0 0 1" "$BG_RC $BG_RES" "[$mode] acks=all completes after one round: offset 0"
	assert_eq "1 1" "$(val events 0 leo) $(val events 0 hw)" "[$mode] LEOs 1, HW 1"

	assert_eq "events 0 1 1" "$(fg_write "$E/append:acks=1" $'at-risk\n')" \
		"[$mode] acks=1 at-risk gets offset 1"
	assert_eq "2 1" "$(val events 0 leo) $(val events 0 hw)" "[$mode] visible end stays 1"
	assert_eq "safe" "$(mk_read "$E/records")" "[$mode] only safe is visible"

	cmd "$MNT/brokers/2/promote" "events/0" || fail "[$mode] promote 2"
	assert_eq "2 1" "$(val events 0 leader) $(val events 0 leader_epoch)" \
		"[$mode] broker 2 leads with epoch 1"
	assert_eq "1 1" "$(val events 0 leo) $(val events 0 hw)" "[$mode] new leader: leo 1, hw 1"
	assert_eq "safe" "$(mk_read "$E/records")" "[$mode] after promotion: only safe; at-risk is lost"
	assert_eq "follower 2 true" "$(replica_of 1 events 0)" "[$mode] the old leader still holds at-risk"
	cmd "$MNT/brokers/1/fetch" || fail "[$mode] old leader fetch"
	assert_eq "follower 1 true" "$(replica_of 1 events 0)" "[$mode] its next fetch truncates it to 1"
	assert_eq "0" "$(cat "$DATA"/broker-1/events-0/*.log | grep -c at-risk)" \
		"[$mode] at-risk is gone from broker 1's segment"
	# The new leader takes acks=all writes once broker 1 is back in the ISR.
	bg_write "$E/append:acks=all" $'after\n'
	assert_true "[$mode] acks=all to the new leader waits for broker 1" \
		mk_wait_for 10 blocked_after_append "$BG_PID" "$E/leo" 2
	cmd "$MNT/brokers/1/fetch" || fail "[$mode] fetch 1"
	bg_finish
	assert_eq "0 events 0 1 1" "$BG_RC $BG_RES" "[$mode] ... and gets offset 1"
	assert_eq $'safe\nafter' "$(mk_read "$E/records")" "[$mode] records safe, after"
done

# ---- 3. a blocked acks=all write blocks nothing else ------------------------------------
fresh "$BASE
min.insync.replicas = 2"
cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
cmd "$MNT/ctl" "create-topic u" || bail "create-topic u"
P=$MNT/topics/t/0
bg_write "$P/append:acks=all" $'x\n'
mk_wait_for 10 blocked_after_append "$BG_PID" "$P/leo" 1 || fail "acks=all x blocked"
assert_match '^\[cluster\]' "$(timeout 10 cat "$MNT/config")" "cat /config while a writer is blocked"
assert_eq "1 0" "$(timeout 10 cat "$P/leo") $(timeout 10 cat "$P/hw")" "cat leo, hw of the same partition"
assert_match 'topic t partition 0' "$(timeout 10 cat "$P/state")" "cat state of the same partition"
assert_eq "" "$(timeout 10 cat "$P/records")" "cat records of the same partition"
assert_eq "u 0 0 1" "$(fg_write "$MNT/topics/u/0/append:acks=1" $'y\n')" "acks=1 append to another topic"
assert_eq "t 0 1 1" "$(fg_write "$P/append:acks=1" $'z\n')" "acks=1 append to the same partition: offset 1"
assert_eq "t u" "$(timeout 10 ls "$MNT/topics" | tr '\n' ' ' | sed 's/ $//')" "ls /topics"
assert_true "the acks=all writer is still blocked" blocked_after_append "$BG_PID" "$P/leo" 2
cmd "$MNT/ctl" "replicate" || fail "replicate"
bg_finish
assert_eq "0 t 0 0 1" "$BG_RC $BG_RES" "one round releases the acks=all writer: offset 0"
assert_eq $'x\nz' "$(mk_read "$P/records")" "records x z"

# Leader change while waiting: ESTALE (FENCED_LEADER_EPOCH).
bg_write "$P/append:acks=all" $'w\n'
mk_wait_for 10 blocked_after_append "$BG_PID" "$P/leo" 3 || fail "acks=all w blocked"
mark=$(mk_errors_mark)
cmd "$MNT/brokers/2/promote" "t/0" || fail "promote 2 while a writer waits"
bg_finish
assert_eq "1 ESTALE" "$BG_RC $BG_RES" "the leader changed under an acks=all write: ESTALE"
assert_error_since "$mark" FENCED_LEADER_EPOCH "leader change"

# ---- 4. EAGAIN: the ISR is too small before appending ------------------------------------
fresh "$BASE
min.insync.replicas = 2"
cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0
cmd "$MNT/brokers/2/crash" || fail "crash 2"
assert_eq "offline" "$(mk_read "$MNT/brokers/2/state")" "broker 2 offline"
assert_eq "1" "$(val t 0 isr)" "the ISR shrinks to 1"
mark=$(mk_errors_mark)
assert_fails_with EAGAIN mk_write "$P/append:acks=all" $'nope\n'
assert_error_since "$mark" NOT_ENOUGH_REPLICAS "acks=all below min.insync.replicas" "t/0/append"
assert_fails_with EAGAIN mk_write "$MNT/topics/t/append:acks=all" $'nope\n'
assert_eq "0 0" "$(val t 0 leo) $(val t 0 hw)" "nothing was appended"
assert_eq "t 0 0 1" "$(fg_write "$P/append:acks=1" $'one\n')" "acks=1 still works"
assert_fails_with EHOSTDOWN mk_write "$MNT/brokers/2/fetch" $'\n'
assert_eq "1" "$(val t 0 isr)" "an offline broker fetches nothing"
cmd "$MNT/brokers/2/restart" || fail "restart 2"
assert_eq "1" "$(val t 0 isr)" "restarted broker 2 is below the HW: not in the ISR yet"
cmd "$MNT/brokers/2/fetch" || fail "fetch 2"
assert_eq "1 2" "$(val t 0 isr)" "a fetch covering the HW brings it back"
bg_write "$P/append:acks=all" $'two\n'
mk_wait_for 10 blocked_after_append "$BG_PID" "$P/leo" 2 || fail "acks=all two blocked"
cmd "$MNT/brokers/2/fetch" || fail "fetch 2"
bg_finish
assert_eq "0 t 0 1 1" "$BG_RC $BG_RES" "acks=all works again: offset 1"

# ---- 5. EREMOTEIO: the ISR shrinks after the append ------------------------------------
bg_write "$P/append:acks=all" $'orphan\n'
assert_true "acks=all orphan appended and blocked" \
	mk_wait_for 10 blocked_after_append "$BG_PID" "$P/leo" 3
mark=$(mk_errors_mark)
cmd "$MNT/brokers/2/crash" || fail "crash 2"
bg_finish
assert_eq "1 EREMOTEIO" "$BG_RC $BG_RES" "broker 2 crashes under the waiting writer: EREMOTEIO"
assert_error_since "$mark" NOT_ENOUGH_REPLICAS_AFTER_APPEND "ISR shrank after the append"
assert_eq "3" "$(val t 0 leo)" "the batch stays on the leader"
assert_eq "3" "$(val t 0 hw)" "with the ISR down to the leader, the HW covers it"
assert_eq $'one\ntwo\norphan' "$(mk_read "$P/records")" "orphan is readable: a retry would duplicate it"

# ---- 6. ETIMEDOUT ----------------------------------------------------------------
# replica.lag.time.max.ms above request.timeout.ms: otherwise the follower
# leaves the ISR first, and the write fails with EREMOTEIO instead.
fresh "$BASE
min.insync.replicas = 2
[replication]
replica.lag.time.max.ms = 60000
[producer]
request.timeout.ms = 30000"
cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0
bg_write "$P/append:acks=all" $'late\n'
mk_wait_for 10 blocked_after_append "$BG_PID" "$P/leo" 1 || fail "acks=all late blocked"
cmd "$MNT/clock" "+29999" || fail "clock +29999"
assert_true "1 ms before request.timeout.ms the writer still waits" in_write "$BG_PID"
mark=$(mk_errors_mark)
cmd "$MNT/clock" "+10001" || fail "clock +10001"
bg_finish
assert_eq "1 ETIMEDOUT" "$BG_RC $BG_RES" "clock at 40000, past request.timeout.ms=30000: ETIMEDOUT"
assert_error_since "$mark" REQUEST_TIMED_OUT "acks=all timeout"
assert_eq "1 0" "$(val t 0 leo) $(val t 0 hw)" "the batch is on the leader, not committed"
assert_eq "1 2" "$(val t 0 isr)" "the ISR did not change"

# ---- 7. ISR shrink by time lag -------------------------------------------------------
fresh "$BASE
[replication]
replica.fetch.max.bytes = 1"
cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0
# An acks=all write (min.insync.replicas 1) waits for broker 2, captured in
# the ISR at append time; when broker 2 leaves the ISR it no longer holds
# the write back (docs/filesystem.md 5).
bg_write "$P/append:acks=all" $'a\n'
mk_wait_for 10 blocked_after_append "$BG_PID" "$P/leo" 1 || fail "acks=all a blocked"
cmd "$MNT/clock" "+10000" || fail "clock +10000"
assert_eq "1 2" "$(val t 0 isr)" "10000 ms without a fetch: still in sync (replica.lag.time.max.ms)"
assert_true "the acks=all writer still waits for broker 2" in_write "$BG_PID"
cmd "$MNT/clock" "+1" || fail "clock +1"
assert_eq "1" "$(val t 0 isr)" "10001 ms without a fetch: broker 2 leaves the ISR"
bg_finish
assert_eq "0 t 0 0 1" "$BG_RC $BG_RES" "the shrunk ISR acknowledges the waiting acks=all write"
assert_eq "follower 0 false" "$(replica_of 2 t 0)" "/brokers/2/replicas: in_sync false"
assert_match 'lagging' "$(state_line t 0 2)" "state: broker 2 lagging"
assert_eq "1" "$(val t 0 hw)" "the HW moves on without it"
# Two more batches; replica.fetch.max.bytes=1 makes each fetch copy one batch.
fg_write "$P/append:acks=1" $'b\n' >/dev/null || fail "append b"
fg_write "$P/append:acks=1" $'c\n' >/dev/null || fail "append c"
assert_eq "3 3" "$(val t 0 leo) $(val t 0 hw)" "leo 3, hw 3 with the ISR at the leader"
cmd "$MNT/brokers/2/fetch" || fail "fetch 1"
assert_eq "follower 1 false" "$(replica_of 2 t 0)" "one batch fetched: leo 1 < hw 3, still out"
cmd "$MNT/brokers/2/fetch" || fail "fetch 2"
assert_eq "follower 2 false" "$(replica_of 2 t 0)" "leo 2 < hw 3, still out"
cmd "$MNT/brokers/2/fetch" || fail "fetch 3"
assert_eq "follower 3 true" "$(replica_of 2 t 0)" "the fetch that covers the HW brings it back"
assert_eq "10001" "$(echo "$(<"$MNT/brokers/2/replicas")" | awk '$1 == "t" { print $6 }')" \
	"/brokers/2/replicas: last_fetch_ms is the cluster clock of the fetch"
assert_eq "1 2" "$(val t 0 isr)" "isr 1 2"

# ---- 8. ISR shrink by offset lag ---------------------------------------------------------
fresh "$BASE
[replication]
replica.lag.max.messages = 2"
cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0
fg_write "$P/append:acks=1" $'a\nb\n' >/dev/null || fail "append a b"
assert_eq "1 2" "$(val t 0 isr)" "2 behind (= replica.lag.max.messages): in sync"
assert_eq "0" "$(val t 0 hw)" "hw 0"
fg_write "$P/append:acks=1" $'c\n' >/dev/null || fail "append c"
assert_eq "1" "$(val t 0 isr)" "3 behind: broker 2 leaves the ISR"
assert_eq "3" "$(val t 0 hw)" "the HW is the leader's end"
cmd "$MNT/brokers/2/fetch" || fail "fetch"
assert_eq "1 2" "$(val t 0 isr)" "caught up: back in the ISR"
assert_eq "1 1" "$(val t 0 isr_shrinks) $(val t 0 isr_expands)" \
	"isr_shrinks and isr_expands count the departure and the return"
assert_match 'isr_shrinks 1 isr_expands 1' "$(<"$P/state")" "state shows both counts"
# The lag rules are cluster keys ([replication]); a topic cannot override them.
assert_fails_with EINVAL mk_ctl "create-topic v replica.lag.max.messages=2"

# ---- 9. a crash loses the unflushed tail ---------------------------------------------------
fresh "$BASE"
cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0
fg_write "$P/append:acks=1" $'a\nb\n' >/dev/null || fail "append a b"
cmd "$MNT/brokers/fetch" || fail "fetch"
cmd "$MNT/ctl" "flush" || fail "/ctl flush"
fg_write "$P/append:acks=1" $'c\nd\n' >/dev/null || fail "append c d"
cmd "$MNT/brokers/fetch" || fail "fetch"
assert_eq "follower 4 true" "$(replica_of 2 t 0)" "broker 2 has 4 records, 2 flushed"
cmd "$MNT/brokers/2/crash" || fail "crash 2"
assert_eq "offline" "$(mk_read "$MNT/brokers/2/state")" "broker 2 offline"
assert_fails_with EHOSTDOWN mk_write "$MNT/brokers/2/crash" $'\n'
assert_fails_with EHOSTDOWN mk_write "$MNT/brokers/2/promote" "t/0"
cmd "$MNT/brokers/2/restart" || fail "restart 2"
assert_eq "online" "$(mk_read "$MNT/brokers/2/state")" "broker 2 online"
assert_eq "follower 2 false" "$(replica_of 2 t 0)" "after restart broker 2 keeps the flushed part only"
assert_fails_with EINVAL mk_write "$MNT/brokers/2/restart" $'\n'
cmd "$MNT/brokers/2/fetch" || fail "fetch"
assert_eq "follower 4 true" "$(replica_of 2 t 0)" "it catches up by fetching"

# The leader of a one-replica topic: the tail is gone from the log itself.
cmd "$MNT/ctl" "create-topic solo replication.factor=1" || bail "create-topic solo"
S=$MNT/topics/solo/0
B=$(val solo 0 leader)
fg_write "$S/append:acks=1" $'s0\ns1\n' >/dev/null || fail "append s0 s1"
cmd "$MNT/ctl" "flush" || fail "flush"
fg_write "$S/append:acks=1" $'s2\n' >/dev/null || fail "append s2"
assert_eq "3 3" "$(val solo 0 leo) $(val solo 0 hw)" "solo: leo 3, hw 3"
cmd "$MNT/brokers/$B/crash" || fail "crash $B"
assert_eq "none" "$(val solo 0 leader)" "solo has no leader"
assert_fails_with EHOSTDOWN mk_read "$S/records"
assert_fails_with EHOSTDOWN mk_write "$S/append:acks=1" $'x\n'
cmd "$MNT/brokers/$B/restart" || fail "restart $B"
assert_eq "$B 1" "$(val solo 0 leader) $(val solo 0 leader_epoch)" \
	"the last ISR member comes back as leader, epoch 1"
assert_eq "2 2" "$(val solo 0 leo) $(val solo 0 hw)" "solo: the unflushed s2 is gone"
assert_eq $'s0\ns1' "$(mk_read "$S/records")" "records s0 s1"

# ---- 10. crash torn: the restart repairs the tail ---------------------------------------
fg_write "$S/append:acks=1" $'s2\ns3\n' >/dev/null || fail "append s2 s3"
cmd "$MNT/ctl" "flush" || fail "flush"
fg_write "$S/append:acks=1" $'s4\n' >/dev/null || fail "append s4"
cmd "$MNT/brokers/$B/crash" "torn" || fail "crash torn"
seg=$(mk_active_log solo 0 "$B")
valid=$(mk_valid_size "$seg")
size=$(mk_size "$seg")
assert_true "crash torn leaves a partial frame ($size > $valid bytes)" test "$size" -gt "$valid"
cmd "$MNT/brokers/$B/restart" || fail "restart after torn"
assert_eq "$valid" "$(mk_size "$seg")" "the restart truncates the segment to its whole frames"
assert_eq "4 4" "$(val solo 0 leo) $(val solo 0 hw)" "solo: leo 4 (s4 unflushed, lost)"
assert_eq $'s0\ns1\ns2\ns3' "$(mk_read "$S/records")" "records s0..s3 intact"
assert_eq "solo 0 4 1" "$(fg_write "$S/append:acks=1" $'s4\n')" "appends continue at 4"

# ---- 10b. truncation = hw: a restarted leader keeps its committed log --------------------
# A restarted replica truncates to the HW it last learned (docs 6). A leader
# knows the HW itself: it must not cut what was committed and flushed.
fresh "$BASE
[replication]
truncation = hw"
cmd "$MNT/ctl" "create-topic solo replication.factor=1" || bail "create-topic solo"
S=$MNT/topics/solo/0
B=$(val solo 0 leader)
fg_write "$S/append:acks=1" $'k0\nk1\n' >/dev/null || fail "append k0 k1"
cmd "$MNT/ctl" "flush" || fail "flush"
assert_eq "2 2" "$(val solo 0 leo) $(val solo 0 hw)" "[hw] solo: k0 k1 committed and flushed"
cmd "$MNT/brokers/$B/crash" || fail "crash $B"
cmd "$MNT/brokers/$B/restart" || fail "restart $B"
assert_eq "$B 2 2" "$(val solo 0 leader) $(val solo 0 leo) $(val solo 0 hw)" \
	"[hw] solo: the restarted leader keeps its committed, flushed k0 k1"
assert_eq $'k0\nk1' "$(mk_read "$S/records")" "[hw] solo: records k0 k1 after the restart"

# Two replicas, both with k0 k1 flushed and the follower's HW view at 2;
# both crash, the last ISR member (broker 1) comes back first and leads.
cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0
fg_write "$P/append:acks=1" $'k0\nk1\n' >/dev/null || fail "append k0 k1"
cmd "$MNT/ctl" "replicate" && cmd "$MNT/ctl" "replicate" || fail "two rounds"
cmd "$MNT/ctl" "flush" || fail "flush"
cmd "$MNT/brokers/2/crash" || fail "crash 2"
cmd "$MNT/brokers/1/crash" || fail "crash 1"
cmd "$MNT/brokers/1/restart" || fail "restart 1"
assert_eq "1 2 2" "$(val t 0 leader) $(val t 0 leo) $(val t 0 hw)" \
	"[hw] t: broker 1 leads again with k0 k1"
cmd "$MNT/brokers/2/restart" || fail "restart 2"
cmd "$MNT/brokers/2/fetch" || fail "fetch 2"
assert_eq "follower 2 true" "$(replica_of 2 t 0)" "[hw] t: broker 2 keeps k0 k1"

# ---- 11. promotions -------------------------------------------------------------------
fresh "$BASE"
cmd "$MNT/ctl" "create-topic strict" || bail "create-topic strict"
cmd "$MNT/ctl" "create-topic loose unclean.leader.election.enable=true" || bail "create-topic loose"
for t in strict loose; do
	fg_write "$MNT/topics/$t/0/append:acks=1" $'a\n' >/dev/null || fail "$t: append a"
done
cmd "$MNT/brokers/fetch" || fail "fetch"
for t in strict loose; do
	fg_write "$MNT/topics/$t/0/append:acks=1" $'b\nc\n' >/dev/null || fail "$t: append b c"
done
cmd "$MNT/clock" "+10001" || fail "clock"
for t in strict loose; do
	assert_eq "1 3 3" "$(val $t 0 isr) $(val $t 0 leo) $(val $t 0 hw)" "$t: broker 2 lagging, out of the ISR"
done
mark=$(mk_errors_mark)
assert_fails_with EPERM mk_write "$MNT/brokers/2/promote" "strict/0"
assert_error_since "$mark" INELIGIBLE_REPLICA "promotion of an out-of-sync replica"
assert_fails_with EPERM mk_write "$MNT/brokers/2/promote" "strict/0 unclean"
assert_fails_with EPERM mk_write "$MNT/brokers/2/promote" "loose/0"
assert_eq "1 0" "$(val strict 0 leader) $(val strict 0 leader_epoch)" "strict: leader unchanged"
assert_fails_with EINVAL mk_write "$MNT/brokers/2/promote" "loose/0 dirty"
assert_fails_with ENOENT mk_write "$MNT/brokers/2/promote" "nosuch/0"
assert_fails_with ENOENT mk_write "$MNT/brokers/9/promote" "loose/0"
cmd "$MNT/brokers/2/promote" "loose/0 unclean" || fail "unclean promotion of broker 2"
assert_eq "2 1" "$(val loose 0 leader) $(val loose 0 leader_epoch)" "loose: broker 2 leads, epoch 1"
assert_eq "2" "$(val loose 0 isr)" "loose: the ISR is the new leader"
assert_eq "1 1" "$(val loose 0 leo) $(val loose 0 hw)" "loose: leo 1, hw 1"
assert_eq "a" "$(mk_read "$MNT/topics/loose/0/records")" "loose: b and c (acknowledged) are lost"

# The old leader rejoins: its divergent tail b c is truncated at its next fetch.
assert_eq "follower 3 false" "$(replica_of 1 loose 0)" "broker 1 still holds a b c"
fg_write "$MNT/topics/loose/0/append:acks=1" $'d\n' >/dev/null || fail "append d"
cmd "$MNT/brokers/1/fetch" || fail "fetch 1"
assert_eq "follower 2 true" "$(replica_of 1 loose 0)" "broker 1 truncated to 1, then fetched d"
assert_eq "1 2" "$(val loose 0 isr)" "broker 1 back in the ISR"
cmd "$MNT/brokers/1/promote" "loose/0" || fail "promote 1 back"
assert_eq "1 2" "$(val loose 0 leader) $(val loose 0 leader_epoch)" "loose: broker 1 leads again, epoch 2"
assert_eq $'a\nd' "$(mk_read "$MNT/topics/loose/0/records")" "broker 1's log is a d: the tail is gone"

# ---- 12. leaders, epochs, ISR survive a remount -------------------------------------------
cmd "$MNT/brokers/2/crash" || fail "crash 2 before remount"
summary() {
	local t
	for t in strict loose; do
		echo "$t leader=$(val $t 0 leader) epoch=$(val $t 0 leader_epoch) isr=$(val $t 0 isr)" \
			"replicas=$(val $t 0 replicas) leo=$(val $t 0 leo) hw=$(val $t 0 hw)"
		mk_read "$MNT/topics/$t/0/records" | tr '\n' ' '
		echo
	done
	echo "broker 1 $(mk_read "$MNT/brokers/1/state"); broker 2 $(mk_read "$MNT/brokers/2/state")"
}
before=$(summary)
mk_remount
assert_eq "$before" "$(summary)" "leaders, epochs, ISR, broker states survive unmount and remount"
note "$(echo "$before" | head -n 1)"

# ---- 13. auto mode reaches the state manual rounds reach -------------------------------------
# The same history twice: manual rounds, then the daemon's own fetchers.
history() {
	cmd "$MNT/ctl" "create-topic t" || fail "$1: create-topic t"
	local P=$MNT/topics/t/0
	if [ "$1" = manual ]; then
		bg_write "$P/append:acks=all" $'x0\n'
		mk_wait_for 10 blocked_after_append "$BG_PID" "$P/leo" 1 || fail "manual: x0 blocked"
		cmd "$MNT/brokers/fetch" || fail "manual: fetch"
		bg_finish
		RECEIPT=$BG_RES
	else
		RECEIPT=$(fg_write "$P/append:acks=all" $'x0\n')
	fi
	fg_write "$P/append:acks=1" $'x1\nx2\n' >/dev/null || fail "$1: append x1 x2"
	fg_write "$P/append:acks=1" $'x3\n' >/dev/null || fail "$1: append x3"
	if [ "$1" = manual ]; then
		cmd "$MNT/ctl" "replicate" || fail "manual: replicate"
	fi
}
end_state() {
	echo "receipt $RECEIPT"
	echo "leader $(val t 0 leader) epoch $(val t 0 leader_epoch) isr $(val t 0 isr)"
	echo "leo $(val t 0 leo) hw $(val t 0 hw)"
	echo "broker1 $(replica_of 1 t 0); broker2 $(replica_of 2 t 0)"
	mk_read "$MNT/topics/t/0/records:tsv"
}
caught_up() {
	[ "$(val t 0 hw)" = 4 ] && [ "$(replica_of 2 t 0)" = "follower 4 true" ]
}
fresh "$BASE
min.insync.replicas = 2"
history manual
manual_state=$(end_state)
fresh "$BASE
min.insync.replicas = 2
[replication]
mode = auto
fetch.interval.ms = 10"
history auto
assert_true "auto: the HW catches up with the leader" mk_wait_for 20 caught_up
assert_eq "$manual_state" "$(end_state)" "auto mode reaches the manual end state"
assert_eq "x0 x1 x2 x3" "$(mk_read "$MNT/topics/t/0/records" | tr '\n' ' ' | sed 's/ $//')" \
	"auto: every record visible"
mk_unmount
