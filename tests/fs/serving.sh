#!/usr/bin/env bash
# serving.sh — a mount that never wedges (docs/filesystem.md, "Serving").
#
# No FUSE worker waits for the cluster: 1,000 :follow readers and 100
# acks=all writers parked at once (manual replication, rf 2), with 20
# topic-append acks=all writers, 20 acks=all last closes and 100
# poll:follow readers besides, leave ls, cat and appends answering within
# 100 ms (the replicate that completes them within 500 ms), and each
# parked request is answered by the event that completes it. Twelve group
# commits, then twelve transaction inits, each waiting for its
# coordinator's acks=all, hold no worker either, nor the command thread
# (a heartbeat answers meanwhile). A handled signal during
# an acks=all wait does not turn an appended batch into EINTR (a retrying
# writer would duplicate it); a manual clock advance past
# request.timeout.ms ends the wait with ETIMEDOUT; an interrupted follow
# read ends with EINTR at once.
. "$(dirname "$0")/lib.sh"

mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
clock = manual
[group]
offsets.topic.replication.factor = 2
session.timeout.ms = 2000
[producer]
request.timeout.ms = 1000'
# min.insync.replicas 2 on the topics written here.
mk_ctl "create-topic load partitions=8 min.insync.replicas=2" || bail "create-topic load"
mk_ctl "create-topic side" || bail "create-topic side"

# 25 groups of four members, each member with two of load's partitions;
# nothing to poll yet.
# Every group change is an acks=all write to __consumer_offsets (rf 2):
# each is run in the background and replicated until it returns.
replicated() {
	"$@" &
	local p=$!
	if ! mk_wait_for 30 eval 'timeout 5 bash -c "echo replicate > $MNT/ctl"; mk_proc_gone '$p; then
		kill -9 $p 2>/dev/null
		wait $p 2>/dev/null
		return 1
	fi
	wait $p
}
for g in $(seq 0 24); do
	replicated mk_mkdir "$MNT/groups/g$g" || bail "mkdir /groups/g$g"
	for m in 0 1 2 3; do
		replicated mk_write "$MNT/groups/g$g/join" "m$m load" || bail "join g$g m$m"
	done
done

# ---- 1000 parked readers, 100 parked writers, and the other waits ---------------
# Also 20 topic-append acks=all writers, 20 acks=all last closes, 100
# poll:follow readers: each more than libfuse's 10 worker threads.
timeout 300 "$MK_PYTHON" -I "$MK_LIB_DIR/serving_load.py" "$MNT" load 8 1000 100 side \
	20 20 25 4 >"$MK_TMP/load.out" 2>&1
rc=$?
while IFS= read -r line; do
	case $line in
	"ok   - "*) pass "${line#ok   - }" ;;
	"FAIL - "*) fail "${line#FAIL - }" ;;
	*) note "$line" ;;
	esac
done <"$MK_TMP/load.out"
assert_eq 0 "$rc" "the load driver finished cleanly"
if [ "$rc" != 0 ]; then
	# A wedged mount: do not wait for it.
	mk_kill
	exit 1
fi

# ---- group commands wait for __consumer_offsets off the workers ------------------
# The load's replicate put every follower of __consumer_offsets in the ISR:
# a commit now waits for one. Twelve of them (more than libfuse's 10
# workers) queue on the command thread; the mount keeps answering. (m0
# of each group owns load/0 and load/4: round-robin over sorted members.)
in_write() { local s; s=$(cat "/proc/$1/syscall" 2>/dev/null) && [ "${s%% *}" = 1 ]; }
mk_ctl replicate || bail "replicate"
cat >"$MK_TMP/cmd.py" <<'PY'
# One write(2) of a command line; exit status 0 when it succeeded.
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.write(fd, sys.argv[2].encode() + b"\n")
os.close(fd)
PY
cpids=()
for i in $(seq 0 11); do
	"$MK_PYTHON" -I "$MK_TMP/cmd.py" "$MNT/groups/g$i/members/m0/commit" "load/0 0" &
	cpids+=($!)
done
alive() { local n=0 p; for p in "${cpids[@]}"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done; echo $n; }
all_in_write() { local p; for p in "${cpids[@]}"; do in_write "$p" || return 1; done; }
mk_wait_for 20 all_in_write || bail "the twelve commits did not all reach write(2)"
pass "twelve commits wait inside write(2) for the follower"
assert_ok "ls answers while they wait" timeout 5 ls "$MNT/topics/load"
assert_ok "a value file answers while they wait" timeout 5 cat "$MNT/topics/load/0/hw"
assert_ok "an acks=1 append answers while they wait" timeout 5 \
	bash -c "echo side > '$MNT/topics/side/0/append:acks=1'"
# The command thread is not held by them: a heartbeat, a command of the
# same kind (a job), answers at once (it waited behind them when each
# command blocked the thread in its acks=all wait).
gen0=$(mk_read "$MNT/groups/g0/generation")
assert_ok "a heartbeat, run by the command thread, answers while they wait" timeout 5 \
	bash -c "echo 'm0 $gen0' > '$MNT/groups/g0/heartbeat'"
assert_eq "12" "$(alive)" "and the commits still wait"
mk_wait_for 60 eval 'timeout 5 bash -c "echo replicate > $MNT/ctl"; [ "$(alive)" = 0 ]'
assert_eq "0" "$(alive)" "every commit was answered as the follower fetched"
bad=0
for p in "${cpids[@]}"; do wait "$p" || bad=$((bad + 1)); done
assert_eq "0" "$bad" "and every commit succeeded"
assert_eq "load 0 0" "$(mk_read "$MNT/groups/g11/offsets")" "g11 has its committed offset"

# ---- transaction commands: the same, through __transaction_state (rf 2) -----------
for i in $(seq 0 11); do
	replicated mk_mkdir "$MNT/transactions/x$i" || bail "mkdir /transactions/x$i"
done
mk_ctl replicate || bail "replicate"
cpids=()
for i in $(seq 0 11); do
	"$MK_PYTHON" -I "$MK_TMP/cmd.py" "$MNT/transactions/x$i/init" "" &
	cpids+=($!)
done
mk_wait_for 20 all_in_write || bail "the twelve inits did not all reach write(2)"
pass "twelve transaction inits wait inside write(2) for the follower"
assert_ok "ls answers while they wait" timeout 5 ls "$MNT/transactions"
assert_ok "a value file answers while they wait" timeout 5 cat "$MNT/topics/load/0/hw"
assert_eq "12" "$(alive)" "and the inits still wait"
mk_wait_for 60 eval 'timeout 5 bash -c "echo replicate > $MNT/ctl"; [ "$(alive)" = 0 ]'
assert_eq "0" "$(alive)" "every init was answered as the follower fetched"
bad=0
for p in "${cpids[@]}"; do wait "$p" || bad=$((bad + 1)); done
assert_eq "0" "$bad" "and every init succeeded"

# ---- /ctl expire-members: its generation records wait off the workers too --------
# The clock passes session.timeout.ms (2 s), not replica.lag.time.max.ms:
# every member expires and each rebalance is an acks=all write to
# __consumer_offsets. Twelve expire-members commands queue on the command
# thread (the first does the work and waits for the follower); the mount
# keeps answering.
mk_write "$MNT/clock" "+3000" || bail "clock +3000"
cpids=()
for i in $(seq 0 11); do
	"$MK_PYTHON" -I "$MK_TMP/cmd.py" "$MNT/ctl" "expire-members" &
	cpids+=($!)
done
mk_wait_for 20 all_in_write || bail "the twelve expire-members did not all reach write(2)"
pass "twelve expire-members wait inside write(2) for the follower"
assert_ok "ls answers while they wait" timeout 5 ls "$MNT/groups"
assert_ok "a value file answers while they wait" timeout 5 cat "$MNT/topics/load/0/hw"
assert_eq "12" "$(alive)" "and the expire-members commands still wait"
# (The kernel lets one write into /ctl at a time, so the fetch round comes
# through brokers/fetch: a replicate written to /ctl would queue behind.)
mk_wait_for 60 eval 'timeout 5 bash -c "echo > $MNT/brokers/fetch"; [ "$(alive)" = 0 ]'
assert_eq "0" "$(alive)" "every expire-members was answered as the follower fetched"
bad=0
for p in "${cpids[@]}"; do wait "$p" || bad=$((bad + 1)); done
assert_eq "0" "$bad" "and every expire-members succeeded"
assert_eq "" "$(ls "$MNT/groups/g0/members")" "g0 has no member left"

# ---- a handled signal during an acks=all wait -----------------------------------
mk_ctl "create-topic sig min.insync.replicas=2" || bail "create-topic sig"
S=$MNT/topics/sig/0
cat >"$MK_TMP/sigwrite.py" <<'PY'
# One acks=all write(2) with a SIGALRM handler installed; Python retries a
# write that fails with EINTR (PEP 475), as a careful writer would. Prints
# the write's result, then how many times the handler ran.
import os, signal, sys
hits = []
signal.signal(signal.SIGALRM, lambda s, f: hits.append(s))
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    n = os.write(fd, b"once\n")
    print("wrote %d" % n)
except OSError as e:
    print("error %s" % e.strerror)
os.close(fd)
print("handler ran %d" % len(hits))
PY
in_read() { local s; s=$(cat "/proc/$1/syscall" 2>/dev/null) && [ "${s%% *}" = 0 ]; }
"$MK_PYTHON" -I "$MK_TMP/sigwrite.py" "$S/append:acks=all" >"$MK_TMP/sig.out" 2>&1 &
W=$!
mk_wait_for 10 eval '[ "$(mk_read "$S/leo")" = 1 ] && in_write $W' || bail "the acks=all write did not append and block"
pass "the acks=all write appended and is waiting"
kill -ALRM "$W"
# Were the signal to end the wait with EINTR, the retry would append again
# at once: give it a bounded chance to show.
if mk_wait_for 1 eval '[ "$(mk_read "$S/leo")" != 1 ]'; then
	fail "the signal made the write fail and be retried (leo $(mk_read "$S/leo"))"
else
	pass "the signal did not end the wait (leo still 1 after 1 s)"
fi
assert_true "the writer is still inside write(2)" in_write "$W"
assert_ok "a replicate acknowledges the batch" mk_ctl replicate
mk_wait_for 10 mk_proc_gone "$W" || { kill -9 "$W"; bail "the writer did not return after the replicate"; }
wait "$W"
assert_eq $'wrote 5\nhandler ran 1' "$(cat "$MK_TMP/sig.out")" "the write returned success once acknowledged; the handler ran"
assert_eq "1" "$(mk_read "$S/leo")" "the record is in the log once"
assert_eq "once" "$(mk_read "$S/records")" "and reads back once"

# ---- the manual clock completes a timeout ----------------------------------------
"$MK_PYTHON" -I "$MK_TMP/sigwrite.py" "$S/append:acks=all" >"$MK_TMP/to.out" 2>&1 &
W=$!
mk_wait_for 10 eval '[ "$(mk_read "$S/leo")" = 2 ] && in_write $W' || bail "the second acks=all write did not block"
assert_ok "advance the clock by 999 ms" mk_write "$MNT/clock" "+999"
assert_true "one ms before request.timeout.ms the writer still waits" in_write "$W"
assert_ok "advance the clock past request.timeout.ms" mk_write "$MNT/clock" "+1"
mk_wait_for 10 mk_proc_gone "$W" || { kill -9 "$W"; bail "the clock advance did not end the wait"; }
wait "$W"
assert_eq $'error Connection timed out\nhandler ran 0' "$(cat "$MK_TMP/to.out")" "the wait ended with ETIMEDOUT"
assert_match "REQUEST_TIMED_OUT" "$(mk_read "$MNT/errors")" "and one /errors line"

# ---- a writer killed during an acks=all wait goes away ---------------------------
"$MK_PYTHON" -I "$MK_TMP/sigwrite.py" "$S/append:acks=all" >/dev/null 2>&1 &
W=$!
mk_wait_for 10 eval '[ "$(mk_read "$S/leo")" = 3 ] && in_write $W' || bail "the third acks=all write did not block"
kill -9 "$W"
if mk_wait_for 5 mk_proc_gone "$W"; then
	pass "a SIGKILLed writer does not stay in D state waiting for the ISR"
else
	fail "the SIGKILLed writer was still there 5 s later ($(grep State /proc/$W/status 2>/dev/null))"
fi
wait "$W" 2>/dev/null
assert_eq "3" "$(mk_read "$S/leo")" "its batch stays appended"

# ---- an interrupted follow read ends with EINTR at once --------------------------
cat >"$MK_TMP/sigread.py" <<'PY'
# One read(2) of a :follow file; the SIGALRM handler raises, so an EINTR
# ends the read (no retry). Prints how the read ended.
import os, signal, sys
class Alarm(Exception):
    pass
def on_alarm(s, f):
    raise Alarm()
signal.signal(signal.SIGALRM, on_alarm)
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    print("read %r" % os.read(fd, 4096))
except Alarm:
    print("interrupted")
PY
"$MK_PYTHON" -I "$MK_TMP/sigread.py" "$S/records@latest:follow" >"$MK_TMP/rd.out" 2>&1 &
R=$!
mk_wait_for 10 in_read "$R" || bail "the follower did not block"
kill -ALRM "$R"
if mk_wait_for 2 mk_proc_gone "$R"; then
	wait "$R"
	assert_eq "interrupted" "$(cat "$MK_TMP/rd.out")" "the interrupted follow read ended with EINTR"
else
	kill -9 "$R"
	fail "the follow read was not interrupted within 2 s"
fi
assert_eq "3" "$(mk_read "$S/leo")" "the daemon still serves"

mk_unmount
