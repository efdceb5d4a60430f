#!/usr/bin/env bash
# producer.sh — idempotent producers through the mount (docs/filesystem.md 5 and 7,
# issue 4 points 2, 3, 4 and 5):
#   - mkdir /producers/NAME: an id with epoch 0, persisted; id, epoch and
#     sequences read back; init bumps the epoch;
#   - append:producer=NAME stamps id, epoch and the next sequence per
#     partition; :seq=N sets the base sequence so a script can retry;
#   - an exact retry of any of the last five batches returns the original
#     offsets in its receipt and appends nothing; older ones, gaps and
#     reorders are EPROTO; an old epoch is ESTALE; a new epoch starts at 0;
#   - deduplication survives unmount + mount, a SIGKILL, and a promotion
#     (2 brokers, RF 2, explicit fetch rounds);
#   - every refusal: the errno, an /errors line, nothing appended.
. "$(dirname "$0")/lib.sh"

# mk_session OP...: tests/fs/session.py, one output line per operation.
mk_session() { "$MK_PYTHON" -I "$MK_LIB_DIR/session.py" "$@"; }

# retry PATH-SUFFIX DATA: one write through a fresh O_RDWR descriptor of
# topics/u/0/append:SUFFIX; prints the receipt, or the errno name.
retry() {
	local R
	mapfile -t R < <(mk_session "open a rw $MNT/topics/u/0/append:$1" "write a $2" "read a" "close a")
	if [ "${R[0]}" != ok ]; then echo "${R[0]}"
	elif [ "${R[1]}" != ok ]; then echo "${R[1]}"
	elif [ "${R[3]}" != ok ]; then echo "close ${R[3]}"
	else echo "${R[2]}"
	fi
}

# check_refused ERRNO CODE LABEL SUFFIX DATA: the write fails with ERRNO,
# /errors gains CODE, u-0 is unchanged.
check_refused() {
	local errno=$1 code=$2 label=$3 before mark
	before=$(mk_snapshot u 0)
	mark=$(mk_errors_mark)
	assert_eq "$errno" "$(retry "$4" "$5")" "$label: $errno"
	assert_error_since "$mark" "$code" "$label" "append:$4"
	assert_eq "$before" "$(mk_snapshot u 0)" "$label: nothing appended"
}

mk_mount '[cluster]
clock = manual'
mk_ctl "create-topic u" || bail "create-topic u"
mk_ctl "create-topic t partitions=2" || bail "create-topic t"

# ---- identities ---------------------------------------------------------------
assert_ok "mkdir /producers/p" mk_mkdir "$MNT/producers/p"
assert_ok "mkdir /producers/q" mk_mkdir "$MNT/producers/q"
assert_eq $'p\nq' "$(ls "$MNT/producers")" "ls /producers"
assert_eq $'epoch\nid\ninit\nsequences' "$(ls "$MNT/producers/p")" "ls /producers/p"
pid=$(mk_read "$MNT/producers/p/id")
qid=$(mk_read "$MNT/producers/q/id")
assert_match '^[0-9]+$' "$pid" "id reads back a number"
assert_ne "$pid" "$qid" "two producers, two ids"
assert_eq "0" "$(mk_read "$MNT/producers/p/epoch")" "a new producer has epoch 0"
assert_eq "" "$(mk_read "$MNT/producers/p/sequences")" "no sequences before a write"
# (the kernel answers EEXIST from its lookup: the daemon never sees it)
assert_fails_with EEXIST mk_mkdir "$MNT/producers/p"
mark=$(mk_errors_mark)
assert_fails_with ENOENT mk_write "$MNT/producers/nobody/init" "1"
mark=$(mk_errors_mark)
assert_fails_with ENOENT mk_write "$MNT/topics/u/0/append:producer=nobody" $'x\n'
assert_error_since "$mark" UNKNOWN_PRODUCER_ID "append:producer=nobody" "producer=nobody"
assert_eq "0" "$(mk_read "$MNT/topics/u/0/leo")" "an unknown producer appends nothing"

# ---- sequences and receipts ------------------------------------------------------
mk_write "$MNT/topics/u/0/append" $'plain\n' || fail "a plain record first"
mapfile -t R < <(mk_session "open a rw $MNT/topics/u/0/append:producer=p" \
	'write a a\nb\n' 'write a c\n' "read a" "close a")
assert_eq "ok ok" "${R[1]} ${R[2]}" "two idempotent writes"
assert_eq "u 0 1 2|u 0 3 1" "${R[3]}" "their receipts"
assert_eq "u 0 3" "$(mk_read "$MNT/producers/p/sequences")" \
	"sequences: the next sequence per partition (T P SEQ)"
# The batches carry id, epoch and sequence (Kafka's RecordBatch v2:
# producerId at byte 43, producerEpoch at 51, baseSequence at 53).
frames=$("$MK_PYTHON" - "$(mk_active_log u 0)" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
pos, out = 0, []
while pos + 61 <= len(d):
    n = struct.unpack(">i", d[pos + 8:pos + 12])[0]
    pid, ep, seq = struct.unpack(">qhi", d[pos + 43:pos + 57])
    out.append("%d/%d/%d" % (pid, ep, seq))
    pos += 12 + n
print(" ".join(out))
PY
)
assert_eq "-1/-1/-1 $pid/0/0 $pid/0/2" "$frames" "batches stamped with id/epoch/sequence"

# ---- retries with seq= ----------------------------------------------------------
assert_eq "u 0 1 2" "$(retry producer=p:seq=0 'a\nb\n')" "retry of seq 0: the original offsets"
assert_eq "u 0 3 1" "$(retry producer=p:seq=2 'c\n')" "retry of seq 2: the original offsets"
assert_eq "4" "$(mk_read "$MNT/topics/u/0/leo")" "retries appended nothing"
# seq= counts on from N: the duplicates, then new batches, one descriptor.
mapfile -t R < <(mk_session "open a rw $MNT/topics/u/0/append:producer=p:seq=0" \
	'write a a\nb\n' 'write a c\n' 'write a d\n' 'write a e\n' 'write a f\ng\n' \
	'write a h\n' "read a" "close a")
assert_eq "ok ok ok ok ok ok" "${R[*]:1:6}" "seq=0 then five more writes on one descriptor"
assert_eq "u 0 1 2|u 0 3 1|u 0 4 1|u 0 5 1|u 0 6 2|u 0 8 1" "${R[7]}" \
	"two duplicates, then four new batches"
assert_eq "9" "$(mk_read "$MNT/topics/u/0/leo")" "only the new batches were appended"
assert_eq "u 0 8" "$(mk_read "$MNT/producers/p/sequences")" "next sequence 8"

# Six batches: [0,1] [2] [3] [4] [5,6] [7]. The last five are deduplicated.
assert_eq "u 0 3 1" "$(retry producer=p:seq=2 'c\n')" "retry of the 5th newest batch"
assert_eq "u 0 4 1" "$(retry producer=p:seq=3 'd\n')" "retry of the 4th newest batch"
assert_eq "u 0 5 1" "$(retry producer=p:seq=4 'e\n')" "retry of the 3rd newest batch"
assert_eq "u 0 6 2" "$(retry producer=p:seq=5 'f\ng\n')" "retry of the 2nd newest batch"
assert_eq "u 0 8 1" "$(retry producer=p:seq=7 'h\n')" "retry of the newest batch"
assert_eq "9" "$(mk_read "$MNT/topics/u/0/leo")" "five retries appended nothing"
check_refused EPROTO OUT_OF_ORDER_SEQUENCE_NUMBER "retry of the 6th newest batch" \
	producer=p:seq=0 'a\nb\n'
check_refused EPROTO OUT_OF_ORDER_SEQUENCE_NUMBER "a gap" producer=p:seq=9 'i\n'
check_refused EPROTO OUT_OF_ORDER_SEQUENCE_NUMBER "a reorder" producer=p:seq=6 'g\n'
check_refused EPROTO OUT_OF_ORDER_SEQUENCE_NUMBER "not an exact retry (fewer records)" \
	producer=p:seq=5 'f\n'
check_refused EPROTO OUT_OF_ORDER_SEQUENCE_NUMBER "not an exact retry (more records)" \
	producer=p:seq=7 'h\ni\n'
check_refused EPROTO OUT_OF_ORDER_SEQUENCE_NUMBER "a sequence at the top of the range" \
	producer=p:seq=2147483647 'x\ny\n'
assert_eq "u 0 9 1" "$(retry producer=p:seq=8 'i\n')" "the expected sequence is appended"
assert_eq "u 0 10 1" "$(retry producer=p 'j\n')" "without seq=: the next sequence"

# ---- bad parameters ------------------------------------------------------------
check_refused EINVAL INVALID_REQUEST "seq= without producer=" seq=3 'x\n'
check_refused EINVAL INVALID_REQUEST "producer= with acks=1" producer=p:acks=1 'x\n'
check_refused EINVAL INVALID_REQUEST "producer= with acks=0" producer=p:acks=0 'x\n'
check_refused EINVAL INVALID_REQUEST "a malformed seq" producer=p:seq=x 'x\n'
check_refused EINVAL INVALID_REQUEST "a negative seq" producer=p:seq=-1 'x\n'
check_refused ENOENT UNKNOWN_PRODUCER_ID "an unknown producer" producer=nobody:seq=0 'x\n'
assert_eq "u 0 11 1" "$(retry producer=p:acks=all 'k\n')" "producer= with acks=all"
mark=$(mk_errors_mark)
assert_fails_with EINVAL mk_write "$MNT/topics/t/append:producer=p:seq=0" $'x\n'
assert_error_since "$mark" INVALID_REQUEST "seq= on a topic append" "append:producer=p:seq=0"
assert_eq "0 0" "$(mk_read "$MNT/topics/t/0/leo") $(mk_read "$MNT/topics/t/1/leo")" \
	"seq= on a topic append: nothing appended"

# ---- topic append: sequences per partition ---------------------------------------
# murmur2("d") mod 2 = 1, murmur2("bob") mod 2 = 0.
assert_eq "1 0" "$(mk_part_of d 2) $(mk_part_of bob 2)" "(d -> 1, bob -> 0)"
mapfile -t R < <(mk_session "open a rw $MNT/topics/t/append:producer=p:tsv" \
	'write a d\t1\nbob\t2\nd\t3\n' 'write a bob\t4\n' "read a" "close a")
assert_eq "t 0 0 1|t 1 0 2|t 0 1 1" "${R[3]}" "topic append with producer=: receipts"
assert_eq $'t 0 2\nt 1 2\nu 0 11' "$(mk_read "$MNT/producers/p/sequences")" \
	"sequences per partition"

# ---- epochs and fencing ----------------------------------------------------------
# A (partition) and T (topic) are opened under epoch 0, then init.
mk_session "open A rw $MNT/topics/u/0/append:producer=p" "open T rw $MNT/topics/t/append:producer=p" \
	'write A before\n' 'write T bob\n' "mark $MK_TMP/opened" "wait $MK_TMP/inited" \
	'write A after-init\n' 'write T after-init\n' "mark $MK_TMP/tried" "wait $MK_TMP/new-wrote" \
	'write A after-new\n' 'write T after-new\n' "read A" "close A" "close T" \
	>"$MK_TMP/old.out" 2>&1 &
bg=$!
mk_wait_for 30 test -e "$MK_TMP/opened" || bail "old descriptors not opened"
u_leo=$(mk_read "$MNT/topics/u/0/leo")
t_leo="$(mk_read "$MNT/topics/t/0/leo") $(mk_read "$MNT/topics/t/1/leo")"
mark=$(mk_errors_mark)
assert_ok "write to /producers/p/init" mk_write "$MNT/producers/p/init" "1"
assert_eq "1" "$(mk_read "$MNT/producers/p/epoch")" "init bumps the epoch"
assert_eq "$pid" "$(mk_read "$MNT/producers/p/id")" "the id stays"
touch "$MK_TMP/inited"
mk_wait_for 30 test -e "$MK_TMP/tried" || bail "old descriptors did not write"
mapfile -t O <"$MK_TMP/old.out"
assert_eq "ok ok" "${O[2]} ${O[3]}" "descriptors of epoch 0 wrote before init"
assert_eq "ESTALE" "${O[6]}" "a partition append opened before init: ESTALE"
assert_eq "ESTALE" "${O[7]}" "a topic append opened before init: ESTALE"
assert_eq "$u_leo" "$(mk_read "$MNT/topics/u/0/leo")" "the fenced partition write appended nothing"
mk_write "$MNT/clock" "+1000"
assert_eq "$t_leo" "$(mk_read "$MNT/topics/t/0/leo") $(mk_read "$MNT/topics/t/1/leo")" \
	"the fenced topic write appended nothing"
# A new epoch must start at sequence 0.
check_refused EPROTO OUT_OF_ORDER_SEQUENCE_NUMBER "epoch 1 starting at sequence 12" \
	producer=p:seq=12 'x\n'
new_leo=$(mk_read "$MNT/topics/u/0/leo")
assert_eq "u 0 $new_leo 1" "$(retry producer=p 'new-epoch\n')" "epoch 1 writes from sequence 0"
assert_eq "u 0 1" "$(mk_read "$MNT/producers/p/sequences")" \
	"sequences of epoch 1: only where epoch 1 wrote"
mapfile -t R < <(mk_session "open a w $MNT/topics/t/append:producer=p:tsv" 'write a bob\tnew\nd\tnew\n' "close a")
assert_eq "ok ok ok" "${R[*]}" "epoch 1 writes through the topic append"
assert_eq $'t 0 1\nt 1 1\nu 0 1' "$(mk_read "$MNT/producers/p/sequences")" \
	"sequences of epoch 1 on every partition it wrote"
touch "$MK_TMP/new-wrote"
wait "$bg"
mapfile -t O <"$MK_TMP/old.out"
assert_eq "ESTALE ESTALE" "${O[10]} ${O[11]}" \
	"after the new epoch wrote, both old descriptors are still ESTALE"
assert_error_since "$mark" PRODUCER_FENCED "the old epoch's writes"
# (a fresh descriptor uses the current epoch, so the fenced epoch 0 is only
# reachable through a descriptor opened before init, as above)

# ---- remount: identities and deduplication survive ---------------------------------
mk_remount
assert_eq "$pid 1" "$(mk_read "$MNT/producers/p/id") $(mk_read "$MNT/producers/p/epoch")" \
	"id and epoch after a remount"
assert_eq "$qid 0" "$(mk_read "$MNT/producers/q/id") $(mk_read "$MNT/producers/q/epoch")" \
	"the other producer too"
leo=$(mk_read "$MNT/topics/u/0/leo")
assert_eq "u 0 $new_leo 1" "$(retry producer=p:seq=0 'new-epoch\n')" \
	"after a remount a retry returns the original offsets"
assert_eq "$leo" "$(mk_read "$MNT/topics/u/0/leo")" "and appends nothing"
assert_eq "u 0 $leo 2" "$(retry producer=p:seq=1 'l\nm\n')" "the producer goes on"
assert_ok "mkdir /producers/r after the remount" mk_mkdir "$MNT/producers/r"
rid=$(mk_read "$MNT/producers/r/id")
assert_ne "$pid" "$rid" "a producer created later gets a new id"
assert_ne "$qid" "$rid" "a producer created later gets a new id (not q's)"

# ---- SIGKILL: the state is rebuilt from the log --------------------------------------
assert_eq "u 0 $((leo + 2)) 1" "$(retry producer=p:seq=3 'n\n')" "a batch just before the crash"
mk_kill
mk_mount
assert_eq "u 0 $((leo + 2)) 1" "$(retry producer=p:seq=3 'n\n')" \
	"after SIGKILL, a retry is still deduplicated"
assert_eq "u 0 $leo 2" "$(retry producer=p:seq=1 'l\nm\n')" "and so is the one before"
assert_eq "$((leo + 3))" "$(mk_read "$MNT/topics/u/0/leo")" "nothing appended by the retries"
check_refused EPROTO OUT_OF_ORDER_SEQUENCE_NUMBER "a gap after SIGKILL" producer=p:seq=5 'x\n'

# ---- rmdir -----------------------------------------------------------------------------
assert_ok "rmdir /producers/q" mk_rmdir "$MNT/producers/q"
assert_fails_with ENOENT mk_write "$MNT/topics/u/0/append:producer=q" $'x\n'
mk_unmount

# ============================================================================
# promotion: 2 brokers, RF 2, manual replication
# ============================================================================
rm -rf "${DATA:?}"/*
mk_mount '[cluster]
brokers = 1,2
default.replication.factor = 2
clock = manual'
mk_ctl "create-topic rep" || bail "create-topic rep"
mk_mkdir "$MNT/producers/p" || bail "mkdir /producers/p"
assert_eq "1 2" "$(mk_read "$MNT/topics/rep/0/isr")" "both replicas in the ISR"

# fetch_until FILE N: fetch rounds until FILE has N lines (an acks=all write
# in the background returned), at most 30 s.
has_lines() { [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ]; }
fetch_until() {
	local i
	for ((i = 0; i < 1500; i++)); do
		mk_write "$MNT/brokers/fetch" "1" >/dev/null || return 1
		has_lines "$1" "$2" && return 0
		sleep 0.02
	done
	return 1
}
# replicated_write SUFFIX DATA: an acks=all write to rep/0 in the background,
# driven by fetch rounds; prints the receipt (or the errno).
replicated_write() {
	local out=$MK_TMP/rw.$RANDOM R
	mk_session "open a rw $MNT/topics/rep/0/append:$1" "write a $2" "read a" "close a" >"$out" 2>&1 &
	local bgp=$!
	fetch_until "$out" 4 || { kill "$bgp"; echo "timeout"; return; }
	wait "$bgp"
	mapfile -t R <"$out"
	if [ "${R[1]}" != ok ]; then echo "${R[1]}"; else echo "${R[2]}"; fi
	mk_write "$MNT/brokers/fetch" "1"     # the follower learns the HW
}

assert_eq "rep 0 0 2" "$(replicated_write producer=p 'r1\nr2\n')" "an idempotent write, acked by both"
assert_eq "rep 0 2 1" "$(replicated_write producer=p 'r3\n')" "another"
assert_eq "3 3" "$(mk_read "$MNT/topics/rep/0/hw") $(mk_read "$MNT/brokers/2/replicas" | awk '$1 == "rep" {print $4}')" \
	"hw 3, the follower has all 3"
assert_eq "1" "$(mk_read "$MNT/topics/rep/0/leader")" "broker 1 leads"
assert_ok "promote broker 2" mk_write "$MNT/brokers/2/promote" "rep/0"
assert_eq "2" "$(mk_read "$MNT/topics/rep/0/leader")" "broker 2 leads"
assert_eq "rep 0 0 2" "$(replicated_write producer=p:seq=0 'r1\nr2\n')" \
	"after the promotion, a retry returns the original offsets"
assert_eq "rep 0 2 1" "$(replicated_write producer=p:seq=2 'r3\n')" "so does the other"
assert_eq "3" "$(mk_read "$MNT/topics/rep/0/leo")" "nothing appended by the retries"
mark=$(mk_errors_mark)
assert_eq "EPROTO" "$(replicated_write producer=p:seq=4 'gap\n')" "a gap on the new leader"
assert_error_since "$mark" OUT_OF_ORDER_SEQUENCE_NUMBER "a gap on the new leader"
assert_eq "rep 0 3 1" "$(replicated_write producer=p 'r4\n')" "the producer goes on at sequence 3"
assert_eq "rep 0 4" "$(mk_read "$MNT/producers/p/sequences")" "sequences from the new leader"
# And back: broker 1, a follower since the promotion, learned r4's sequence.
assert_ok "promote broker 1 again" mk_write "$MNT/brokers/1/promote" "rep/0"
assert_eq "rep 0 3 1" "$(replicated_write producer=p:seq=3 'r4\n')" \
	"the old leader, promoted back, deduplicates the batch it fetched"
mk_remount
assert_eq "rep 0 0 2" "$(replicated_write producer=p:seq=0 'r1\nr2\n')" \
	"after the promotions and a remount, still deduplicated"
assert_eq "4" "$(mk_read "$MNT/topics/rep/0/leo")" "4 records in all"
mk_unmount
