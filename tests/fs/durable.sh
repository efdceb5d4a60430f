#!/usr/bin/env bash
# durable.sh — decide, persist, then act (issue 12, points 2 and 4).
#
# Control paths are crash-atomic: a broker crash, a promotion, a topic
# creation or deletion is saved in DATA_DIR/metadata before anything acts
# on it; a crash point (MKFS_FAILPOINTS) kills the daemon between the steps
# and the remount keeps every acknowledged record and never reuses a leader
# epoch. A failed save fails the operation and changes nothing; an unmount
# whose final save fails exits non-zero. An ISR shrink counts only once
# saved. The data directory is locked; damaged metadata or configuration
# is refused with one line naming the file and line, and never rewritten.
. "$(dirname "$0")/lib.sh"

cmd() { mk_write "$1" "${2:-}"$'\n'; }
val() { mk_read "$MNT/topics/$1/$2"; }
nrecords() { mk_read "$MNT/topics/$1/records:tsv" | wc -l; }

# mk_died: the daemon killed itself at an armed crash point; clear the mount.
mk_died() {
	local what=$1
	if mk_wait_for 20 mk_proc_gone "$MK_PID"; then
		wait "$MK_PID" 2>/dev/null
		local rc=$?
		assert_eq 137 "$rc" "the daemon died by SIGKILL at $what"
	else
		fail "the daemon did not die at $what"
		kill -9 "$MK_PID" 2>/dev/null
		wait "$MK_PID" 2>/dev/null
	fi
	MK_PID=""
	fusermount3 -u -z "$MNT" 2>/dev/null
	mk_wait_for 10 eval '! mk_in_mounts' || bail "dead mount not cleared"
}

# mount_at POINT [INI]: mount with a crash point armed.
mount_at() {
	local point=$1
	shift
	MKFS_FAILPOINTS=$point mk_mount "$@"
}

# Rewrite DATA/metadata with a sed expression, keeping its checksum right,
# so that the value checks (not the checksum) are what a test meets.
edit_metadata() {
	"$MK_PYTHON" - "$DATA/metadata" "$1" "$2" <<'PY'
import re, sys, zlib
path, pat, rep = sys.argv[1:4]
t = open(path, "rb").read().decode()
t = re.sub(pat, rep, t, count=1, flags=re.M)
lines = t.splitlines(keepends=True)
if lines and lines[-1].startswith("checksum "):
    body = "".join(lines[:-1])
    t = body + "checksum %08x\n" % zlib.crc32(body.encode())
open(path, "wb").write(t.encode())
PY
}

TWO='[cluster]
brokers = 1,2
default.replication.factor = 2
min.insync.replicas = 2
clock = manual'

# fresh: empty data dir, two brokers, topic t (RF 2) holding 100 records
# acknowledged by both brokers (HW 100).
fresh() {
	[ -z "$MK_PID" ] || mk_unmount
	rm -rf "${DATA:?}"/*
	"$@" "$TWO"
	cmd "$MNT/ctl" "create-topic t" || bail "create-topic t"
	# 100 acks=all records (min.insync.replicas 2): the write returns once
	# a fetch round brought them to broker 2.
	seq 0 99 >"$MK_TMP/100"
	"$MK_PYTHON" -I "$MK_TMP/mkio.py" writefile "$MNT/topics/t/0/append:acks=all" "$MK_TMP/100" &
	local wpid=$!
	mk_wait_for 10 eval '[ "$(val t/0 leo)" = 100 ]' || bail "the acks=all batch was not appended"
	cmd "$MNT/brokers/fetch" || bail "fetch round"
	mk_wait_for 20 mk_proc_gone "$wpid" || bail "the acks=all write did not return"
	wait "$wpid" || bail "the acks=all write failed"
	assert_eq "100 100" "$(val t/0 leo) $(val t/0 hw)" "100 acks=all records acknowledged by both brokers"
}

# ---- a broker crash: saved before any log is cut -------------------------------------
for point in broker.crash.before-save replica.crash.before-truncate; do
	fresh mount_at "$point"
	cmd "$MNT/brokers/1/crash" >/dev/null 2>&1
	mk_died "$point"
	mk_mount
	if [ "$point" = broker.crash.before-save ]; then
		assert_eq "online" "$(mk_read "$MNT/brokers/1/state")" "[$point] nothing saved: broker 1 online"
		assert_eq "1" "$(val t/0 leader)" "[$point] broker 1 still leads"
	else
		assert_eq "offline" "$(mk_read "$MNT/brokers/1/state")" "[$point] the crash was saved: broker 1 offline"
		cmd "$MNT/brokers/2/promote" "t/0" || fail "[$point] promote 2"
		cmd "$MNT/brokers/1/restart" || fail "[$point] restart 1"
	fi
	assert_eq 100 "$(nrecords t/0)" "[$point] all 100 acknowledged records are there"
	cmd "$MNT/brokers/fetch" || fail "[$point] fetch round"
	assert_eq "100 100" "$(val t/0 leo) $(val t/0 hw)" "[$point] leo and hw 100 after a fetch round"
done

# ---- a promotion: the epoch is saved before it is used ---------------------------------
fresh mount_at promote.after-save
e0=$(val t/0 leader_epoch)
cmd "$MNT/brokers/2/promote" "t/0" >/dev/null 2>&1
mk_died promote.after-save
mk_mount
e1=$(val t/0 leader_epoch)
assert_eq "$((e0 + 1))" "$e1" "the saved epoch survives the kill ($e0 -> $e1)"
assert_eq 2 "$(val t/0 leader)" "the saved leader survives the kill"
assert_eq 100 "$(nrecords t/0)" "no acknowledged record lost"
cmd "$MNT/topics/t/0/append:acks=1" "after" || fail "append under the new epoch"
cmd "$MNT/brokers/fetch" || fail "fetch round"
cmd "$MNT/brokers/1/promote" "t/0" || fail "promote 1"
assert_eq "$((e1 + 1))" "$(val t/0 leader_epoch)" "the next promotion takes a new epoch"
assert_eq 101 "$(nrecords t/0)" "101 records after the fail-back"

# At mount the epoch is at least the newest in any replica's epoch cache:
# a metadata file that lags behind the logs never makes an epoch reused.
mk_unmount
high=$(tail -n 1 "$DATA/broker-1/t-0/leader-epoch-checkpoint" | cut -d' ' -f1)
assert_true "broker 1's epoch cache knows epoch $high >= 1" test "${high:-0}" -ge 1
edit_metadata '^(partition t 0 .*)epoch=[0-9]+' '\1epoch=0'
mk_mount
e=$(val t/0 leader_epoch)
assert_true "leader_epoch $e >= $high (the newest in the epoch cache) after the metadata said 0" test "$e" -ge "$high"
cmd "$MNT/brokers/2/promote" "t/0" || fail "promote 2"
assert_true "a promotion then takes an epoch above every one used" test "$(val t/0 leader_epoch)" -gt "$high"

# ---- topic deletion: recorded first, finished at mount ----------------------------------
fresh mk_mount
mk_unmount
mount_at topic.delete.after-partition
cmd "$MNT/ctl" "create-topic d partitions=3" || fail "create-topic d"
cmd "$MNT/topics/d/2/append:acks=1" "old" || fail "append to d/2"
mk_rmdir "$MNT/topics/d" >/dev/null 2>&1
mk_died topic.delete.after-partition
assert_true "the kill left d's other partitions on disk" test -d "$DATA/broker-1/d-2"
mk_mount
assert_fails_with ENOENT mk_stat "$MNT/topics/d"
assert_eq "" "$(ls -d "$DATA"/broker-*/d-* 2>/dev/null)" "the mount finished the deletion: no d-* directory left"
cmd "$MNT/ctl" "create-topic d partitions=3" || fail "create-topic d again"
assert_eq "0" "$(val d/2 leo)" "a re-created d is empty"
assert_match "deletion finished" "$(mk_read "$MNT/errors")" "/errors says the mount finished the deletion"

# ---- topic creation: saved before it is visible; strays never come back -----------------
mk_unmount
mount_at topic.create.before-insert
mk_write "$MNT/ctl" "create-topic c" >/dev/null 2>&1
mk_died topic.create.before-insert
mk_mount
assert_eq "0" "$(val c/0 leo)" "a creation saved before the kill is there after it"
mk_unmount
mount_at topic.create.before-save
mk_write "$MNT/ctl" "create-topic e" >/dev/null 2>&1
mk_died topic.create.before-save
mk_mount
assert_fails_with ENOENT mk_stat "$MNT/topics/e"
assert_eq "" "$(ls -d "$DATA"/broker-*/e-* 2>/dev/null)" "the crashed creation's directories (no batch in them) are gone"
# A directory that metadata does not know is never removed when it holds
# data: the start is refused (tests/fs/metadata_missing.sh has the rest).
mk_unmount
cp -r "$DATA/broker-1/t-0" "$DATA/broker-1/s-0"
out=$("$MKFS_BIN" -f "$DATA" "$MNT" 2>&1)
assert_eq 1 "$?" "a stray s-0 directory with data refuses the start"
assert_match "broker-1/s-0.*refusing to start" "$out" "with one line naming it"
assert_true "and it is kept" test -s "$DATA/broker-1/s-0/00000000000000000000.log"
rm -r "$DATA/broker-1/s-0"
mk_mount

# ---- a failed save fails the operation and changes nothing ----------------------------
fresh mk_mount
mkdir "$DATA/metadata.tmp"      # every save now fails (EISDIR)
mark=$(mk_errors_mark)
assert_fails_with EIO mk_mkdir "$MNT/topics/x"
assert_error_since "$mark" KAFKA_STORAGE_ERROR "a failed save"
assert_fails_with ENOENT mk_stat "$MNT/topics/x"
assert_fails_with EIO cmd "$MNT/brokers/2/promote" "t/0"
assert_eq "1" "$(val t/0 leader)" "a promotion whose save failed changed nothing"
assert_fails_with EIO cmd "$MNT/brokers/1/crash"
assert_eq "online" "$(mk_read "$MNT/brokers/1/state")" "a crash whose save failed changed nothing"
assert_fails_with EIO mk_rmdir "$MNT/topics/t"
assert_fails_with EIO mk_mkdir "$MNT/producers/px"
assert_fails_with ENOENT mk_stat "$MNT/producers/px"
assert_eq 100 "$(nrecords t/0)" "a deletion whose save failed changed nothing"
# An ISR shrink counts only once saved: broker 2 stops fetching, its lag
# passes replica.lag.time.max.ms, but with the save failing an acks=all
# write (min.insync.replicas 1) still waits for broker 2.
cmd "$MNT/topics/t/config" "min.insync.replicas=1" >/dev/null 2>&1   # fails too (EIO)
rmdir "$DATA/metadata.tmp"
cmd "$MNT/topics/t/config" "min.insync.replicas=1" || fail "min.insync.replicas=1"
mkdir "$DATA/metadata.tmp"
cmd "$MNT/clock" "+40000" >/dev/null 2>&1   # past replica.lag.time.max.ms (30 s)
"$MK_PYTHON" -I "$MK_TMP/mkio.py" write "$MNT/topics/t/0/append" "x\\n" -e >"$MK_TMP/w.out" 2>&1 &
WPID=$!
mk_wait_for 10 eval '[ "$(val t/0 leo)" = 101 ]' || fail "the acks=all batch was appended"
assert_true "the acks=all write still waits for broker 2 (the shrink is not saved)" kill -0 "$WPID"
assert_eq 100 "$(val t/0 hw)" "the HW waits for broker 2 too"
rmdir "$DATA/metadata.tmp"
cmd "$MNT/clock" "+1" || fail "clock +1 (a save now succeeds)"
if mk_wait_for 20 mk_proc_gone "$WPID"; then
	wait "$WPID"
	assert_eq 0 "$?" "once the shrink is saved the write is acknowledged"
else
	fail "the acks=all write did not finish after the shrink was saved"
fi
assert_eq "1" "$(mk_read "$MNT/topics/t/0/isr")" "the ISR is broker 1 alone"
assert_eq 101 "$(val t/0 hw)" "the HW moved on"
# An unmount whose final save fails exits non-zero.
mkdir "$DATA/metadata.tmp"
fusermount3 -u "$MNT"
mk_wait_for 20 mk_proc_gone "$MK_PID" || { mk_dump_stuck "$MK_PID"; kill -9 "$MK_PID"; }
wait "$MK_PID"
assert_eq 1 "$?" "an unmount whose final metadata save fails exits 1"
MK_PID=""
assert_match "final flush or metadata save failed" "$(tail -n 3 "$MK_LOG")" "and says so on stderr"
rmdir "$DATA/metadata.tmp"

# ---- one daemon per data directory ---------------------------------------------------
mk_mount
mkdir -p "$MK_TMP/mnt2"
out=$("$MKFS_BIN" -f "$DATA" "$MK_TMP/mnt2" 2>&1)
rc=$?
assert_eq 1 "$rc" "a second daemon on the same DATA_DIR exits 1"
assert_match "in use by another minikafkafs" "$out" "with one line saying why"
assert_eq 1 "$(printf '%s\n' "$out" | wc -l)" "one line"
cmd "$MNT/topics/t/0/append:acks=1" "still" || fail "the first daemon still appends"
assert_eq "still" "$(mk_read "$MNT/topics/t/0/records@101")" "and reads"
mk_unmount

# ---- damaged metadata is refused, never overwritten ------------------------------------
cp "$DATA/metadata" "$MK_TMP/good-metadata"
# refused CASE: the daemon exits 1 with one line naming metadata:LINE, and
# the file is byte for byte what it was.
refused() {
	local what=$1 out rc
	cp "$DATA/metadata" "$MK_TMP/before"
	out=$("$MKFS_BIN" -f "$DATA" "$MNT" 2>&1)
	rc=$?
	assert_eq 1 "$rc" "$what: the daemon refuses to start"
	assert_match "metadata:[0-9]+: " "$out" "$what: the line names the file and line"
	assert_eq 1 "$(printf '%s\n' "$out" | wc -l)" "$what: one line"
	assert_files_eq "$MK_TMP/before" "$DATA/metadata" "$what: the file is left as it was"
	cp "$MK_TMP/good-metadata" "$DATA/metadata"
}
: >"$DATA/metadata"; refused "an empty file"
head -c -40 "$MK_TMP/good-metadata" >"$DATA/metadata"; refused "a cut-short file"
printf '\0\0\0\0' | cat - "$MK_TMP/good-metadata" >"$DATA/metadata"; refused "a NUL-led file"
head -n 1 "$MK_TMP/good-metadata" >"$DATA/metadata"; refused "a header-only file"
sed -i '3s/online/onlinX/' "$DATA/metadata"; refused "a changed byte (checksum)"
edit_metadata '^(partition .*) replicas=[0-9,]+' '\1 replicas=1,1,1'; refused "replicas=1,1,1"
edit_metadata 'epoch=[0-9]+' 'epoch=-7'; refused "epoch=-7"
edit_metadata 'epoch=[0-9]+' 'epoch=99999999999'; refused "an overflowing epoch"
edit_metadata 'isr=[0-9,]+' 'isr=7'; refused "an ISR member that is no replica"

# ---- a configuration that is a directory is refused -----------------------------------
mv "$DATA/minikafka.ini" "$MK_TMP/ini"
mkdir "$DATA/minikafka.ini"
out=$("$MKFS_BIN" -f "$DATA" "$MNT" 2>&1)
assert_eq 1 "$?" "a minikafka.ini that is a directory is refused"
assert_match "minikafka.ini is not a regular file" "$out" "with one line naming it"
rmdir "$DATA/minikafka.ini"
# A damaged configuration: one line naming the file and the line.
for bad in $'[cluster]\nbrokers = 1,2\n[log\n' $'[cluster]\nbrokers = 1,2\n\nnosuch.key = 1\n' \
	$'[cluster]\nbrokers = 1,2\nmin.insync.replicas = x\n'; do
	printf '%s' "$bad" >"$DATA/minikafka.ini"
	line=$(printf '%s' "$bad" | grep -n 'log$\|nosuch\|= x' | cut -d: -f1)
	out=$("$MKFS_BIN" -f "$DATA" "$MNT" 2>&1)
	assert_eq 1 "$?" "a damaged configuration is refused (line $line)"
	assert_match "minikafka.ini:$line: " "$out" "the message names minikafka.ini:$line"
	assert_eq 1 "$(printf '%s\n' "$out" | wc -l)" "in one line"
done
mv "$MK_TMP/ini" "$DATA/minikafka.ini"
mk_mount
assert_eq 102 "$(nrecords t/0)" "the good metadata still mounts"
mk_unmount

# ---- a missing partition directory: the replica goes offline, never empty --------------
fresh mk_mount
mk_unmount
rm -rf "$DATA/broker-1/t-0"
mk_mount
assert_match "broker-1/t-0 is missing" "$(mk_read "$MNT/errors")" "/errors names the missing directory"
assert_false() { if "$@"; then fail "not: $*"; else pass "not: $(mk_label "$@")"; fi; }
assert_false test -e "$DATA/broker-1/t-0"
assert_match "broker 1 +failed" "$(mk_read "$MNT/topics/t/0/state")" "broker 1's replica is offline (failed)"
cmd "$MNT/brokers/2/promote" "t/0" || fail "promote 2"
assert_eq 100 "$(nrecords t/0)" "broker 2 still serves the 100 records"
cmd "$MNT/brokers/fetch" || fail "fetch round"
assert_false test -e "$DATA/broker-1/t-0"

# ---- fsynced records gone: the replica is refused, and the leadership moves -------------
# The leader's records below its recovery point vanish (outside damage):
# its log is refused, never cut silently; an in-sync replica leads.
fresh mk_mount
mk_unmount
assert_eq 100 "$(awk '$1 == "t" && $2 == "0" { print $3 }' "$DATA/broker-1/replication-offset-checkpoint")" \
	"the unmount saved broker 1's HW (replication-offset-checkpoint)"
: >"$(mk_active_log t 0 1)"       # damage: the leader's records are gone
mk_mount
errs=$(mk_read "$MNT/errors")
assert_match "broker 1 t-0: cannot open log: .*broker-1/recovery-point-offset-checkpoint: t 0: recovery_point 100 is past the log's end 0" \
	"$errs" "/errors names the saved recovery point past the log's end"
assert_match "leadership moves from broker 1 \\(its log could not be opened\\) to broker 2" "$errs" \
	"and that the leadership moves"
assert_eq 2 "$(val t/0 leader)" "broker 2, in sync with the records, leads"
assert_eq "100 100" "$(val t/0 leo) $(val t/0 hw)" "no committed record lost"
assert_eq 100 "$(nrecords t/0)" "all 100 readable"
assert_match "broker 1 +failed" "$(val t/0 state)" "broker 1's replica is offline"
mk_unmount

# ---- a recovery below the checkpointed HW: said; the replica catches up ----------------
# The operator accepts the loss by removing t-0's line from broker 1's
# recovery-point-offset-checkpoint (and lowering the count): the log opens
# with what its segments hold, below the HW it saved, and says so.
rp=$DATA/broker-1/recovery-point-offset-checkpoint
awk 'NR == 1 { print; next } NR == 2 { next } !($1 == "t" && $2 == "0") { l[n++] = $0 }
     END { print n + 0; for (i = 0; i < n; i++) print l[i] }' "$rp" >"$rp.new" && mv "$rp.new" "$rp"
assert_eq "$(printf '0\n0')" "$(cat "$rp")" "broker 1 knows no recovery point for t-0 any more"
mk_mount
assert_match "recovery cut the log to 0, below its checkpointed high watermark 100" \
	"$(mk_read "$MNT/errors")" "/errors says the recovery cut below the HW"
assert_eq 2 "$(val t/0 leader)" "broker 2 still leads"
cmd "$MNT/brokers/fetch" || fail "fetch round"
assert_eq 100 "$(mk_read "$MNT/brokers/1/logs/t/0/records" | wc -l)" "broker 1 fetched the 100 records back"
mk_unmount

# ---- a missing segment: the replica goes offline, never a silent gap ----------------------
[ -z "$MK_PID" ] || mk_unmount
rm -rf "${DATA:?}"/*
mk_mount '[cluster]
brokers = 1
clock = manual'
cmd "$MNT/ctl" "create-topic g segment.bytes=256" || bail "create-topic g"
for i in $(seq 0 39); do cmd "$MNT/topics/g/0/append" "record-$i" || fail "append $i"; done
mk_unmount
nseg=$(ls "$DATA/broker-1/g-0"/*.log | wc -l)
assert_true "the log rolled ($nseg segments)" test "$nseg" -ge 4
middle=$(ls "$DATA/broker-1/g-0"/*.log | sort | sed -n 2p)
rm "$middle"
mk_mount
assert_match "$(basename "$middle") is missing" "$(mk_read "$MNT/errors")" "/errors names the missing segment"
assert_eq none "$(val g/0 leader)" "the replica is offline: no leader serves a log with a gap"
assert_fails_with EHOSTDOWN mk_read "$MNT/topics/g/0/records"
mk_unmount

# ---- new directories are fsynced into their parents -----------------------------------------
if command -v strace >/dev/null; then
	rm -rf "${DATA:?}"/*
	printf '[cluster]\nbrokers = 1,2\nclock = manual\n' >"$DATA/minikafka.ini"
	# (LeakSanitizer cannot run under ptrace: off for this one daemon.)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=mkdir,mkdirat,openat,fsync -o "$MK_TMP/strace" \
		"$MKFS_BIN" -f "$DATA" "$MNT" >>"$MK_LOG" 2>&1 &
	MK_PID=$!
	mk_wait_for 20 mk_mounted || bail "mount under strace"
	cmd "$MNT/ctl" "create-topic n replication.factor=2" || fail "create-topic n"
	mk_unmount
	assert_ok "every new broker and partition directory is fsynced into its parent" \
		"$MK_PYTHON" - "$MK_TMP/strace" "$DATA" <<'PY'
import re, sys
trace, data = sys.argv[1], sys.argv[2]
fds, made, synced = {}, [], set()
for line in open(trace):
    m = re.match(r'(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)', line)
    if not m:
        continue
    pid, call, args, rc = m.group(1), m.group(2), m.group(3), int(m.group(4))
    path = re.search(r'"([^"]*)"', args)
    if call in ("mkdir", "mkdirat") and rc == 0:
        made.append(path.group(1))
    elif call == "openat" and rc >= 0 and "O_DIRECTORY" in args:
        fds[(pid, rc)] = path.group(1)
    elif call == "fsync":
        fd = int(args.split(",")[0])
        if (pid, fd) in fds:
            synced.add(fds[(pid, fd)].rstrip("/"))
want = [d for d in made if re.search(r"/broker-\d+(/n-\d+)?$", d)]
assert len(want) >= 4, ("directories made", made)
for d in want:
    parent = d.rsplit("/", 1)[0]
    assert parent in synced, ("not fsynced into its parent", d, sorted(synced))
PY
else
	skip "strace is not installed: the directory fsync check needs it"
fi
