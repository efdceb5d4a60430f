#!/usr/bin/env bash
# shell_append.sh — appends the way a shell makes them (issue 7 point 4):
#   - the unit is the open file description: a close of one copy of the
#     descriptor (every `cmd >&3`, a FUSE flush) sends nothing; a carried
#     partial line is completed by the next write or sent at the last close;
#   - lingering batches wait for linger.ms, fsync or the last close, not for
#     the close of a copy;
#   - what the last close meets goes to /errors;
#   - the close of a copy still reports the error of a batch sent in the
#     background;
#   - keyless records of a new producer start on a partition that rotates
#     per topic, so `echo x > topics/T/append` in a loop spreads.
# The release that follows the last close(2) reaches the daemon after
# close(2) returned, so its effects are waited for with mk_wait_for.
# Time moves only through /clock; nothing sleeps.
. "$(dirname "$0")/lib.sh"

leos() {
	local t=$1 out="" i=0
	while [ -d "$MNT/topics/$t/$i" ]; do
		out+="${out:+ }$(<"$MNT/topics/$t/$i/leo")"
		i=$((i + 1))
	done
	echo "$out"
}
leo_is() { [ "$(<"$MNT/topics/$1/$2/leo")" = "$3" ]; }

mk_mount '[cluster]
clock = manual'
mk_ctl "create-topic s partitions=1" || bail "create-topic s"

# ---- a partial line completed by the next write of another copy -------------------
exec 3>"$MNT/topics/s/0/append"
printf abc >&3
assert_eq 0 "$(<"$MNT/topics/s/0/leo")" "printf abc >&3: the partial line is carried, not sent at that close"
printf 'def\n' >&3
assert_eq 1 "$(<"$MNT/topics/s/0/leo")" "printf 'def\\n' >&3 completes it: one record"
exec 3>&-
assert_eq "abcdef" "$(mk_read "$MNT/topics/s/0/records")" "one record, abcdef"
assert_eq 1 "$(mk_frame_count "$(mk_active_log s 0)")" "one batch"

# ---- a partial line at the last close ------------------------------------------------
exec 3>"$MNT/topics/s/0/append"
printf 'ghi\nj' >&3
printf k >&3
assert_eq 2 "$(<"$MNT/topics/s/0/leo")" "the complete line went, the partial one is carried"
exec 3>&-
assert_ok "the last close sends the carried line" mk_wait_for 10 leo_is s 0 3
assert_eq $'abcdef\nghi\njk' "$(mk_read "$MNT/topics/s/0/records")" \
	"the carried line, completed over two writes, is one record"

# ---- one process: write, close one copy, write again ---------------------------------
"$MK_PYTHON" - "$MNT/topics/s/0/append" <<'PY' || fail "dup and close of a copy"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.write(fd, b"lm")
os.close(os.dup(fd))        # a FUSE flush of one copy
os.write(fd, b"n\n")
os.close(fd)
PY
assert_eq $'abcdef\nghi\njk\nlmn' "$(mk_read "$MNT/topics/s/0/records")" \
	"a partial line survives the close of a copy in the same process"

# ---- keyless records of new producers rotate over the partitions ----------------------
mk_ctl "create-topic r partitions=3" || bail "create-topic r"
for i in 1 2 3 4 5 6; do echo "x$i" > "$MNT/topics/r/append"; done
assert_eq "2 2 2" "$(leos r)" "six opens of one keyless record each: two per partition"
assert_eq $'x1\nx4' "$(mk_read "$MNT/topics/r/0/records")" "partition 0: the 1st and 4th"
assert_eq $'x2\nx5' "$(mk_read "$MNT/topics/r/1/records")" "partition 1: the 2nd and 5th"
# keyed records are not affected
echo "k	v1" > "$MNT/topics/r/append:tsv"
echo "k	v2" > "$MNT/topics/r/append:tsv"
kp=$(mk_part_of k 3)
assert_eq $'v1\nv2' "$(mk_read "$MNT/topics/r/$kp/records" | tail -n 2)" \
	"keyed records still go to murmur2(key) mod partitions"

# ---- an error at the last close goes to /errors ----------------------------------------
mk_ctl "create-topic e partitions=1" || bail "create-topic e"
exec 3>"$MNT/topics/e/0/append"
printf 'partial' >&3
cmd_crash() { printf '1\n' >"$MNT/brokers/1/crash"; }
assert_ok "crash broker 1 (the only one)" cmd_crash
mark=$(mk_errors_mark)
exec 3>&-
last_close_logged() { mk_read "$MNT/errors" | tail -n +"$((mark + 1))" | grep -q 'at the last close'; }
assert_ok "the last close's error is an /errors line" mk_wait_for 10 last_close_logged
assert_match "topics/e/0/append LEADER_NOT_AVAILABLE" "$(mk_read "$MNT/errors" | grep 'at the last close' | tail -n 1)" \
	"it names the file and the code"
printf '1\n' >"$MNT/brokers/1/restart" || fail "restart broker 1"
mk_unmount

# ============================================================================
# linger.ms = 100: lingering batches wait for the last close
# ============================================================================
mk_mount '[cluster]
clock = manual
[producer]
linger.ms = 100'
mk_ctl "create-topic l partitions=2" || bail "create-topic l"
exec 3>"$MNT/topics/l/append"
echo a >&3
echo b >&3
echo c >&3
assert_eq "0 0" "$(leos l)" "three echo >&3: the closes of copies sent nothing"
exec 3>&-
both_in() { [ "$(leos l)" = "3 0" ]; }
assert_ok "the last close sends the lingering batch" mk_wait_for 10 both_in
assert_eq 1 "$(mk_frame_count "$(mk_active_log l 0)")" "three echo >&3 made one batch"

# fsync sends and waits, and so does linger.ms
mapfile -t R < <("$MK_PYTHON" -I "$MK_LIB_DIR/session.py" \
	"open a w $MNT/topics/l/append" 'write a d\n' "get $MNT/topics/l/1/leo" \
	"fsync a" "get $MNT/topics/l/1/leo" 'write a e\n' "put $MNT/clock +100" \
	"get $MNT/topics/l/0/leo" "close a")
assert_eq "0 ok 1 4" "${R[2]} ${R[3]} ${R[4]} ${R[7]}" \
	"the next new producer starts on partition 1; fsync sends (and moves keyless records on); so does linger.ms"

# The close of a copy reports the error of a batch the clock sent meanwhile.
mk_ctl "create-topic f partitions=1" || bail "create-topic f"
"$MK_PYTHON" - "$MNT" <<'PY' || fail "error at the close of a copy"
import errno, os, sys
m = sys.argv[1]
def put(path, data):
    fd = os.open(m + path, os.O_WRONLY)
    os.write(fd, data)
    os.close(fd)
fd = os.open(m + "/topics/f/append", os.O_WRONLY)
os.write(fd, b"lost\n")
put("/brokers/1/crash", b"1\n")
put("/clock", b"+100\n")          # sends the batch: no leader
try:
    os.close(os.dup(fd))
    print("close of a copy: no error")
    sys.exit(1)
except OSError as e:
    print("close of a copy:", errno.errorcode[e.errno])
try:
    os.close(os.dup(fd))          # reported once
except OSError as e:
    print("second close of a copy:", errno.errorcode[e.errno])
    sys.exit(1)
os.close(fd)
PY
mk_unmount
