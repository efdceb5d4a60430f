#!/usr/bin/env bash
# crash.sh — SIGKILL of the daemon in the middle of a stream of appends,
# then a remount: offsets are contiguous, every write that returned is in
# the log, and a torn frame at the end of the active segment is cut off.
. "$(dirname "$0")/lib.sh"

# Small segments so that the crash also happens across rolls.
mk_mount '[log]
segment.bytes = 4096'
mk_ctl "create-topic c" || bail "create-topic c"
P=$MNT/topics/c/0

# ---- round 1: kill -9 while a writer appends -------------------------------------
# The writer does one write(2) per record, "i\n", and logs i to acked.log only
# after that write returned: acked.log is the list of acknowledged records.
ACKED=$MK_TMP/acked.log
: >"$ACKED"
"$MK_PYTHON" -I "$MK_TMP/mkio.py" produce-loop "$P/append" "$ACKED" >"$MK_TMP/writer.out" 2>&1 &
WPID=$!
# Wait for a good number of acknowledged writes (not for time).
acked_lines() { wc -l <"$ACKED"; }
mk_wait_for 60 eval '[ "$(acked_lines)" -ge 300 ]' || bail "the writer did not get to 300 writes"
assert_true "the writer is still running when the daemon is killed" kill -0 "$WPID"
mk_kill
if mk_wait_for 20 mk_proc_gone "$WPID"; then
	pass "the writer stopped when the daemon died"
else
	kill -9 "$WPID"
	fail "the writer still ran 20 s after the daemon was killed"
fi
wait "$WPID" 2>/dev/null
note "writer: $(tail -n 1 "$MK_TMP/writer.out")"
acked=$(acked_lines)
last_acked=$(tail -n 1 "$ACKED")
note "$acked writes returned before the kill (last: $last_acked)"
assert_eq "$((acked - 1))" "$last_acked" "acked.log is 0..N-1"

# ---- a torn frame at the end of the active segment -----------------------------------
active=$(mk_active_log c 0)
[ -n "$active" ] || bail "no active segment in $DATA/broker-1/c-0"
nlogs=$(ls "$DATA/broker-1/c-0"/*.log | wc -l)
note "$nlogs segments; active $(basename "$active")"
assert_true "the stream rolled segments (segment.bytes=4096)" test "$nlogs" -ge 2
valid=$(mk_valid_size "$active")
size=$(mk_size "$active")
note "active segment: $size bytes, valid prefix $valid"
head -c "$valid" "$active" >"$MK_TMP/prefix"
printf '\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00' >>"$active"   # a batch header cut after 10 bytes
assert_eq "$((size + 10))" "$(mk_size "$active")" "a 10-byte torn frame appended to the active segment"

mk_mount
assert_eq "$valid" "$(mk_size "$active")" "remount cut the active segment back to its last whole frame"
leo=$(mk_read "$P/leo")
note "leo after recovery: $leo"
mk_read "$P/records:tsv" >"$MK_TMP/recs.tsv"
assert_ok "offsets are 0..leo-1 without gaps, and offset i holds value i" \
	"$MK_PYTHON" - "$MK_TMP/recs.tsv" "$leo" <<'PY'
import sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
leo = int(sys.argv[2])
assert len(rows) == leo, ("rows", len(rows), "leo", leo)
for i, r in enumerate(rows):
    assert int(r[0]) == i, ("offset", r[0], "at row", i)
    assert r[3] == str(i), ("value", r[3], "at offset", i)
PY
assert_true "every acknowledged write is in the log (leo $leo >= $acked)" test "$leo" -ge "$acked"
assert_true "at most the one write in flight is there beyond the acknowledged (leo $leo <= $((acked + 1)))" \
	test "$leo" -le "$((acked + 1))"
assert_eq "$leo" "$(mk_read "$P/hw")" "hw = leo after recovery (one replica)"

# The log takes appends again, right after the recovered end.
assert_ok "append after recovery" mk_write "$P/append" "after-crash"
assert_eq "after-crash" "$(mk_read "$P/records@$leo")" "the next record gets offset leo"
head -c "$valid" "$active" >"$MK_TMP/prefix2"
assert_files_eq "$MK_TMP/prefix" "$MK_TMP/prefix2" "the whole frames before the torn tail are untouched"
assert_eq "$(mk_size "$active")" "$(mk_valid_size "$active")" "the new frame follows them directly"

# ---- round 2: kill with nothing in flight; a torn tail of 2 bytes -------------------
mk_ctl "flush" || fail "/ctl flush"
n2=$(mk_read "$P/leo")
mk_kill
active=$(mk_active_log c 0)
valid=$(mk_valid_size "$active")
assert_eq "$valid" "$(mk_size "$active")" "an idle kill leaves whole frames only"
printf '\x00\x00' >>"$active"
mk_mount
assert_eq "$valid" "$(mk_size "$active")" "a 2-byte torn tail is cut"
assert_eq "$n2" "$(mk_read "$P/leo")" "no record lost by a kill after the appends returned"

# ---- round 3: a whole frame with a bad CRC at the end is cut, too ---------------------
mk_unmount
active=$(mk_active_log c 0)
size=$(mk_size "$active")
"$MK_PYTHON" - "$active" <<'PY'
import struct, sys
path = sys.argv[1]
d = open(path, "rb").read()
# Copy the last whole frame and flip one payload byte: a full-length frame
# whose CRC does not match.
pos, last = 0, None
while pos + 61 <= len(d):
    n = struct.unpack(">i", d[pos + 8:pos + 12])[0]
    last = (pos, 12 + n)
    pos += 12 + n
p, n = last
bad = bytearray(d[p:p + n])
bad[-1] ^= 0xff
open(path, "ab").write(bytes(bad))
PY
assert_true "a corrupt whole frame was appended" test "$(mk_size "$active")" -gt "$size"
mk_mount
assert_eq "$size" "$(mk_size "$active")" "a last frame with a bad CRC is cut at recovery"
assert_eq "$((n2 + 0))" "$(mk_read "$P/leo")" "and no record is lost or invented"
assert_eq "after-crash" "$(mk_read "$P/records@$((n2 - 1))")" "the last good record reads back"
mk_unmount
