#!/usr/bin/env bash
# follow.sh — records:follow blocks at the end of the log and returns what
# is appended after the read began; :max=N ends a follow after N records;
# an interrupted follower goes away cleanly.
#
# "The read began" is observed, not slept for: the reader writes the number
# of its descriptor to a marker file after open(), and the test waits until
# /proc/PID/syscall shows it inside read(2) on that descriptor.
. "$(dirname "$0")/lib.sh"

mk_mount
mk_ctl "create-topic f" || bail "create-topic f"
P=$MNT/topics/f/0
mk_write "$P/append" $'old-0\nold-1\n' || bail "seed"

# start_follower NAME PATH: a background reader; sets FPID and FFD.
start_follower() {
	local name=$1 path=$2
	rm -f "$MK_TMP/$name.fd"
	"$MK_PYTHON" -I "$MK_TMP/mkio.py" follow "$path" "$MK_TMP/$name.fd" >"$MK_TMP/$name.out" 2>"$MK_TMP/$name.err" &
	FPID=$!
	mk_wait_for 10 test -s "$MK_TMP/$name.fd" || bail "$name: the follower did not open $path"
	FFD=$(cat "$MK_TMP/$name.fd")
	if mk_wait_for 10 mk_blocked_in_read "$FPID" "$FFD"; then
		pass "$name: the follower is blocked in read(2) on $(basename "$path")"
	else
		note "syscall: $(cat "/proc/$FPID/syscall" 2>/dev/null)"
		bail "$name: the follower never blocked in read(2)"
	fi
}

# ---- a follow from the end returns a later append -----------------------------
start_follower tail "$P/records@latest:follow"
assert_eq "" "$(cat "$MK_TMP/tail.out")" "nothing returned before the append"
assert_ok "append while the follower waits" mk_write "$P/append" $'new-2\n'
if mk_wait_for 10 grep -qx "new-2" "$MK_TMP/tail.out"; then
	pass "the follower returned the record appended after its read began"
else
	fail "the follower did not return new-2 within 10 s"
fi
assert_eq "new-2" "$(cat "$MK_TMP/tail.out")" "and only that record (it started at latest)"
# It keeps following: block again, then a second batch of two records.
mk_wait_for 10 mk_blocked_in_read "$FPID" "$FFD" || fail "the follower blocks again"
assert_ok "a second append" mk_write "$P/append" $'new-3\nnew-4\n'
mk_wait_for 10 grep -qx "new-4" "$MK_TMP/tail.out" || fail "the second batch reached the follower"
assert_eq $'new-2\nnew-3\nnew-4' "$(cat "$MK_TMP/tail.out")" "the follower saw every later record once, in order"
assert_true "the follower is still running (no EOF at the end)" kill -0 "$FPID"

# Interrupting the blocked reader ends it; the daemon keeps serving.
mk_wait_for 10 mk_blocked_in_read "$FPID" "$FFD"
kill -INT "$FPID"
if mk_wait_for 10 mk_proc_gone "$FPID"; then
	pass "SIGINT interrupts a blocked follower"
	wait "$FPID" 2>/dev/null
	assert_eq "130" "$?" "its read(2) failed with EINTR"
else
	kill -9 "$FPID"
	fail "a follower blocked in read(2) was not interrupted by SIGINT in 10 s"
fi
assert_eq "5" "$(mk_read "$P/leo")" "the daemon serves after the follower left"

# ---- :follow from an offset: first the backlog, then new records -----------------
start_follower back "$P/records@3:follow:tsv"
assert_eq "$(printf '3\t0\t\\N\tnew-3\n4\t0\t\\N\tnew-4')" "$(sed 's/\t[0-9]*\t/\t0\t/' "$MK_TMP/back.out")" \
	"the backlog from offset 3 comes first"
mk_write "$P/append" $'new-5\n' || fail "append new-5"
mk_wait_for 10 grep -q "new-5" "$MK_TMP/back.out" || fail "new-5 reached the second follower"
assert_match $'\n5\t[0-9]+\t\\\\N\tnew-5$' "$(cat "$MK_TMP/back.out")" "in TSV, with its offset"
kill -9 "$FPID"
mk_wait_for 10 mk_proc_gone "$FPID" || fail "SIGKILL ends a follower"
wait "$FPID" 2>/dev/null

# ---- :follow:max=1 ends after one record -------------------------------------------
start_follower one "$P/records@latest:follow:max=1"
assert_ok "append two records in one batch" mk_write "$P/append" $'m-6\nm-7\n'
if mk_wait_for 10 mk_proc_gone "$FPID"; then
	pass ":follow:max=1 ends by itself"
else
	kill -9 "$FPID"
	fail ":follow:max=1 was still reading 10 s after the append"
fi
wait "$FPID"
assert_eq "0" "$?" "the max=1 follower exited with status 0 (EOF, no error)"
assert_eq "m-6" "$(cat "$MK_TMP/one.out")" ":follow:max=1 returned exactly the first new record"

# :max=2 with a backlog of one: one from the log, one that arrives later.
start_follower two "$P/records@-1:follow:max=2"
assert_eq "m-7" "$(cat "$MK_TMP/two.out")" "the backlog record first"
mk_write "$P/append" $'late-8\nlate-9\n' || fail "append late-8"
mk_wait_for 10 mk_proc_gone "$FPID" || { kill -9 "$FPID"; fail ":follow:max=2 did not end"; }
wait "$FPID" 2>/dev/null
assert_eq $'m-7\nlate-8' "$(cat "$MK_TMP/two.out")" ":follow:max=2 = one old + one new record"

# ---- several followers on one partition all wake up -----------------------------------
start_follower a "$P/records@latest:follow:max=1"
PA=$FPID
start_follower b "$P/records@latest:follow:max=1"
PB=$FPID
mk_write "$P/append" $'both\n' || fail "append both"
mk_wait_for 10 mk_proc_gone "$PA" || { kill -9 "$PA"; fail "follower a did not end"; }
mk_wait_for 10 mk_proc_gone "$PB" || { kill -9 "$PB"; fail "follower b did not end"; }
wait "$PA" "$PB" 2>/dev/null
assert_eq "both|both" "$(cat "$MK_TMP/a.out")|$(cat "$MK_TMP/b.out")" "two followers each got the record"

# ---- SIGTERM with a follower blocked: the daemon still closes gracefully --------
start_follower last "$P/records@latest:follow"
kill -TERM "$MK_PID"
if mk_wait_for 30 mk_proc_gone "$MK_PID"; then
	pass "SIGTERM ends the daemon while a follower is blocked"
	wait "$MK_PID"
	assert_eq "0" "$?" "and it exits with status 0"
	MK_PID=""
else
	fail "the daemon did not exit within 30 s of SIGTERM with a blocked follower"
fi
if mk_wait_for 10 mk_proc_gone "$FPID"; then
	pass "the blocked follower ends when the daemon goes away"
else
	kill -9 "$FPID"
	fail "the blocked follower still hangs 10 s after SIGTERM"
fi
wait "$FPID" 2>/dev/null
mk_in_mounts && fusermount3 -u -z "$MNT"
mk_check_log

# Nothing was lost by that stop: remount and read it all.
mk_mount
assert_eq $'old-0\nold-1\nnew-2\nnew-3\nnew-4\nnew-5\nm-6\nm-7\nlate-8\nlate-9\nboth' \
	"$(mk_read "$P/records")" "every record is there after the SIGTERM stop"
mk_unmount
