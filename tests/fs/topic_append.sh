#!/usr/bin/env bash
# topic_append.sh — /topics/T/append through the partitioner and the
# accumulator (docs/filesystem.md 3 and 5, issue 4 points 1, 2, 4 and 5):
#   - keyed records go to murmur2(key) mod partitions (the Java client's
#     default partitioner; kafka-python's agrees), the same after a
#     remount, spread over all partitions; keys from :key=K or TSV;
#   - keyless records stick to one partition until its batch closes, then
#     move to the next;
#   - one write is one batch per partition touched (linger.ms = 0);
#   - with linger.ms and batch.size under the manual clock: a full batch is
#     sent inside the write, a lingering one when /clock passes its
#     deadline, and close, fsync and SIGTERM flush the rest;
#   - order within a partition is the order written;
#   - receipts (O_RDWR) under acks=0, 1 and all, on topic and partition
#     append files;
#   - bad input: the errno of docs/filesystem.md 7, an /errors line, nothing appended.
# Time moves only through /clock; nothing sleeps.
. "$(dirname "$0")/lib.sh"

# mk_session OP...: tests/fs/session.py, one output line per operation.
mk_session() { "$MK_PYTHON" -I "$MK_LIB_DIR/session.py" "$@"; }

# Sum of the LEOs of every partition of topic T.
leo_sum() {
	local t=$1 n=0 p
	for p in "$MNT/topics/$t"/[0-9]*; do
		n=$((n + $(mk_read "$p/leo")))
	done
	echo "$n"
}

# LEOs of every partition of topic T, space separated.
leos() {
	local t=$1 out="" p i=0
	while [ -d "$MNT/topics/$t/$i" ]; do
		out+="${out:+ }$(mk_read "$MNT/topics/$t/$i/leo")"
		i=$((i + 1))
	done
	echo "$out"
}

# toPositive(murmur2(KEY)) mod N, as the partitioner must compute it.
part_of() { mk_part_of "$1" "$2"; }

# The exact batch size of N keyless records of L value bytes each, all
# with one timestamp (Kafka's RecordBatch v2: a 61-byte header; a record
# is its varint length, then attributes, timestamp delta 0, its offset
# delta, key length -1, value length, the value and a header count 0).
frame_size() {
	"$MK_PYTHON" -c '
import sys
n, l = int(sys.argv[1]), int(sys.argv[2])
def vs(v):
    z, k = (v << 1) ^ (v >> 31), 1
    while z >= 0x80:
        z, k = z >> 7, k + 1
    return k
body = lambda i: 1 + 1 + vs(i) + 1 + vs(l) + l + 1
print(61 + sum(vs(body(i)) + body(i) for i in range(n)))' "$1" "$2"
}

# ============================================================================
# linger.ms = 0 (the default): one write is one batch per partition touched
# ============================================================================
mk_mount '[cluster]
clock = manual'
mk_ctl "create-topic k partitions=4" || bail "create-topic k"

# ---- keyed records through TSV -----------------------------------------------
# 400 records, keys key-0..key-199 twice, in one write, O_RDWR for receipts.
"$MK_PYTHON" - "$MK_TMP" <<'PY'
import os, sys
out = sys.argv[1]
sys.path.insert(0, out)
from murmur2 import part_of
lines, want = [], {p: [] for p in range(4)}
for i in range(400):
    k = "key-%d" % (i % 200)
    v = "v-%d" % i
    lines.append("%s\t%s\n" % (k, v))
    want[part_of(k.encode(), 4)].append((k, v))
open(os.path.join(out, "keyed.tsv"), "w").write("".join(lines))
for p in range(4):
    with open(os.path.join(out, "want-%d" % p), "w") as f:
        f.write("".join("%s\t%s\n" % kv for kv in want[p]))
# the receipts, one per partition touched, in partition order
with open(os.path.join(out, "want-receipts"), "w") as f:
    f.write("|".join("k %d 0 %d" % (p, len(want[p])) for p in range(4) if want[p]) + "\n")
PY
mapfile -t R < <(mk_session "open a rw $MNT/topics/k/append:tsv" \
	"write a $("$MK_PYTHON" -c 'import sys; print(open(sys.argv[1]).read().encode("unicode_escape").decode())' "$MK_TMP/keyed.tsv")" \
	"read a" "read a" "close a")
assert_eq "ok ok" "${R[0]} ${R[1]}" "one write of 400 keyed TSV records"
assert_eq "$(cat "$MK_TMP/want-receipts")" "${R[2]}" \
	"receipts: one line per partition touched, base 0, its count"
assert_eq "" "${R[3]}" "receipts are read once"
assert_eq "ok" "${R[4]}" "close"
for p in 0 1 2 3; do
	got=$(mk_read "$MNT/topics/k/$p/records:tsv" | cut -f3,4)
	assert_eq "$(cat "$MK_TMP/want-$p")" "$got" \
		"partition $p holds exactly the keys with murmur2 mod 4 = $p, in write order"
	n=$(mk_read "$MNT/topics/k/$p/leo")
	assert_true "partition $p got more than 10% of the records ($n of 400)" [ "$n" -gt 40 ]
	assert_eq 1 "$(mk_frame_count "$(mk_active_log k $p)")" \
		"partition $p: the write made one batch"
done

# A real client is the judge: kafka-python 2.0's DefaultPartitioner (the
# Java client's rule) puts each key where the mount put it. Debian's
# python3-kafka is for Debian's interpreter, whatever MK_PYTHON is.
if /usr/bin/python3 -c 'import kafka.partitioner.default' 2>/dev/null; then
	for p in 0 1 2 3; do cut -f1 "$MK_TMP/want-$p" | sed "s/\$/ $p/"; done |
		sort -u >"$MK_TMP/placed"
	/usr/bin/python3 - "$MK_TMP/placed" <<'PY' >"$MK_TMP/judged"
import sys
from kafka.partitioner.default import DefaultPartitioner
for line in open(sys.argv[1]):
    key = line.split()[0]
    print(key, DefaultPartitioner()(key.encode(), [0, 1, 2, 3], [0, 1, 2, 3]))
PY
	assert_eq "$(cat "$MK_TMP/placed")" "$(sort -u "$MK_TMP/judged")" \
		"kafka-python's DefaultPartitioner places all 200 keys where the mount did"
else
	skip "kafka-python (Debian's python3-kafka) is not installed"
fi

# ---- :key=K, plain lines ---------------------------------------------------------
pk=$(part_of user-42 4)
before=$(mk_read "$MNT/topics/k/$pk/leo")
mapfile -t R < <(mk_session "open a rw $MNT/topics/k/append:key=user-42" \
	'write a first\nsecond\nthird\n' "read a" "close a")
assert_eq "k $pk $before 3" "${R[2]}" ":key=user-42: one batch of 3 on murmur2 mod 4 = $pk"
got=$(mk_read "$MNT/topics/k/$pk/records@$before:tsv" | cut -f3,4)
assert_eq $'user-42\tfirst\nuser-42\tsecond\nuser-42\tthird' "$got" \
	":key= records in the order written"
mark=$(mk_errors_mark)
sum=$(leo_sum k)
assert_fails_with EINVAL mk_write_e "$MNT/topics/k/append:tsv:key=K" 'ok\nk\tv\n'
assert_error_since "$mark" INVALID_RECORD "a key flag with TSV keys on the topic" "append:tsv:key=K"
assert_eq "$sum" "$(leo_sum k)" "a key flag with TSV keys: nothing appended"
mark=$(mk_errors_mark)
assert_fails_with EINVAL mk_write_e "$MNT/topics/k/0/append:tsv:key=K" 'ok\nk\tv\n'
assert_error_since "$mark" INVALID_RECORD "a key flag with TSV keys on a partition" "append:tsv:key=K"
assert_eq "$sum" "$(leo_sum k)" "a key flag with TSV keys on a partition: nothing appended"

# ---- keyless: sticky, one partition per write, then the next -----------------------
mk_ctl "create-topic s partitions=3" || bail "create-topic s"
mapfile -t R < <(mk_session "open a rw $MNT/topics/s/append" \
	'write a a\nb\n' 'write a c\n' 'write a d\ne\nf\n' 'write a g\n' \
	"read a" "close a")
assert_eq "ok ok ok ok" "${R[*]:1:4}" "four keyless writes"
assert_eq "s 0 0 2|s 1 0 1|s 2 0 3|s 0 2 1" "${R[5]}" \
	"keyless records stick to a partition for a batch, then move to the next"
assert_eq $'a\nb\ng' "$(mk_read "$MNT/topics/s/0/records")" "partition 0: a b g"
assert_eq $'d\ne\nf' "$(mk_read "$MNT/topics/s/2/records")" "partition 2: d e f"

# One write mixing keyless and keyed records: one batch per partition touched.
# A new producer's keyless records start one partition further than the
# topic's previous new producer's (issue 7 point 4): this descriptor's go to
# partition 1, as does user-42 (murmur2("user-42") mod 3 = 1).
assert_eq 1 "$(part_of user-42 3)" "(user-42 goes to partition 1 of 3)"
l1=$(mk_read "$MNT/topics/s/1/leo")
l2=$(mk_read "$MNT/topics/s/2/leo")
mapfile -t R < <(mk_session "open a rw $MNT/topics/s/append:tsv" \
	'write a x\nuser-42\tkeyed\ny\n' "read a" "close a")
assert_eq "s 1 $l1 3" "${R[2]}" "a mixed write: one receipt per partition touched"
mapfile -t R < <(mk_session "open a rw $MNT/topics/s/append:tsv" \
	'write a z\nuser-42\tkeyed\n' "read a" "close a")
assert_eq "s 1 $((l1 + 3)) 1|s 2 $l2 1" "${R[2]}" \
	"the next new descriptor's keyless records start on partition 2"

# ---- receipts under each acks, topic and partition append files -------------------
mk_ctl "create-topic r partitions=1" || bail "create-topic r"
mapfile -t R < <(mk_session \
	"open z rw $MNT/topics/r/append:acks=0" 'write z a\nb\n' "read z" "close z" \
	"open o rw $MNT/topics/r/append:acks=1" 'write o c\n' "read o" "close o" \
	"open l rw $MNT/topics/r/append:acks=all" 'write l d\ne\nf\n' "read l" "close l" \
	"open d rw $MNT/topics/r/append" 'write d g\n' "read d" "close d" \
	"open p0 rw $MNT/topics/r/0/append:acks=0" 'write p0 h\n' "read p0" "close p0" \
	"open p1 rw $MNT/topics/r/0/append:acks=1" 'write p1 i\nj\n' 'write p1 k\n' "read p1" "close p1" \
	"open pa rw $MNT/topics/r/0/append:acks=all" 'write pa l\n' "read pa" "close pa")
assert_eq "r 0 - 2" "${R[2]}" "topic append, acks=0: '-' for the offset"
assert_eq "r 0 2 1" "${R[6]}" "topic append, acks=1: the base offset"
assert_eq "r 0 3 3" "${R[10]}" "topic append, acks=all: the base offset"
assert_eq "r 0 6 1" "${R[14]}" "topic append, configured acks (all)"
assert_eq "r 0 - 1" "${R[18]}" "partition append, acks=0"
assert_eq "r 0 8 2|r 0 10 1" "${R[23]}" "partition append, acks=1: one line per write"
assert_eq "r 0 11 1" "${R[27]}" "partition append, acks=all"
assert_eq "12" "$(mk_read "$MNT/topics/r/0/leo")" "every record is in"
mapfile -t R < <(mk_session "open w w $MNT/topics/r/append" 'write w m\n' "close w")
assert_eq "ok ok ok" "${R[*]}" "an O_WRONLY append keeps no receipts and works"
mark=$(mk_errors_mark)
assert_fails_with EINVAL mk_py open "$MNT/topics/r/append" r
assert_error_since "$mark" INVALID_REQUEST "an append file opened O_RDONLY"

# ---- stable across a remount --------------------------------------------------------
mk_remount
sum=$(leo_sum k)
mk_write_file "$MNT/topics/k/append:tsv" "$MK_TMP/keyed.tsv" || fail "keyed write after remount"
assert_eq "$((sum + 400))" "$(leo_sum k)" "400 more keyed records after the remount"
for p in 0 1 2 3; do
	got=$(mk_read "$MNT/topics/k/$p/records:tsv" | cut -f3,4 | grep '^key-' | sort -u)
	assert_eq "$(sort -u "$MK_TMP/want-$p")" "$got" \
		"after the remount, partition $p still gets exactly its keys"
done
mk_unmount

# ============================================================================
# linger.ms = 100, batch.size = 500, manual clock
# ============================================================================
# Records of 8 value bytes: 29 fit a batch of batch.size 500 (a batch of
# 496 bytes), 30 do not (511).
assert_eq "496 511" "$(frame_size 29 8) $(frame_size 30 8)" "(frame arithmetic)"
mk_mount '[cluster]
clock = manual
[producer]
linger.ms = 100
batch.size = 500'
mk_ctl "create-topic l partitions=2" || bail "create-topic l"
recs() { # recs FROM TO: lines rec-FROM..rec-TO (4-digit), escaped
	local i s=""
	for ((i = $1; i <= $2; i++)); do s+=$(printf 'rec-%04d\\n' "$i"); done
	printf '%s' "$s"
}

# A lingering batch goes when /clock passes linger.ms, and not before.
mapfile -t R < <(mk_session "put $MNT/clock 1000" \
	"open a rw $MNT/topics/l/append" "write a $(recs 0 0)" \
	"get $MNT/topics/l/0/leo" "put $MNT/clock +60" "write a $(recs 1 1)" \
	"put $MNT/clock +39" "get $MNT/topics/l/0/leo" "read a" \
	"put $MNT/clock +1" "get $MNT/topics/l/0/leo" "read a" "close a")
assert_eq "0" "${R[3]}" "a write under linger.ms: nothing sent yet"
assert_eq "0" "${R[7]}" "99 ms later: still lingering (the deadline is from the first record)"
assert_eq "" "${R[8]}" "no receipt yet"
assert_eq "2" "${R[10]}" "at 100 ms the clock sends the batch"
assert_eq "l 0 0 2" "${R[11]}" "its receipt comes to the writer's descriptor"

# batch.size: a record that would take the batch past it closes the batch,
# which is sent inside the write (Kafka's rule: no batch exceeds batch.size);
# the rest moves on (keyless) to the next partition and lingers there. This
# second descriptor of topic l starts on partition 1 (rotation per topic).
mapfile -t R < <(mk_session "open a rw $MNT/topics/l/append" \
	"write a $(recs 2 41)" "get $MNT/topics/l/1/leo" "get $MNT/topics/l/0/leo" "read a" \
	"put $MNT/clock +100" "get $MNT/topics/l/0/leo" "read a" "close a")
assert_eq "ok" "${R[1]}" "a write of 40 records"
assert_eq "29" "${R[2]}" "the 30th record would overflow batch.size: 29 sent within the write"
assert_eq "2" "${R[3]}" "the other 11 linger on the next partition"
assert_eq "l 1 0 29" "${R[4]}" "the full batch's receipt"
assert_eq "13" "${R[6]}" "sent when linger.ms passes"
assert_eq "l 0 2 11" "${R[7]}" "its receipt"
assert_eq "$(printf 'rec-%04d\n' {2..30})" "$(mk_read "$MNT/topics/l/1/records")" \
	"partition 1: records in the order written"
assert_eq "$(printf 'rec-%04d\n' 0 1 {31..41})" "$(mk_read "$MNT/topics/l/0/records")" \
	"partition 0: records in the order written"

# close, fsync: everything goes, without the clock. Keys: murmur2("bob")
# mod 2 = 0, murmur2("alice") mod 2 = 1.
assert_eq "0 1" "$(part_of bob 2) $(part_of alice 2)" "(bob -> 0, alice -> 1)"
l0=$(mk_read "$MNT/topics/l/0/leo")
l1=$(mk_read "$MNT/topics/l/1/leo")
mapfile -t R < <(mk_session "open a rw $MNT/topics/l/append:tsv" \
	'write a bob\t1\nalice\t2\n' 'write a bob\t3\n' \
	"get $MNT/topics/l/0/leo" "fsync a" "get $MNT/topics/l/0/leo" \
	"get $MNT/topics/l/1/leo" "read a" 'write a alice\t4\n' \
	"get $MNT/topics/l/1/leo" "close a" "get $MNT/topics/l/1/leo")
assert_eq "$l0" "${R[3]}" "two writes under linger.ms: nothing sent"
assert_eq "ok" "${R[4]}" "fsync"
assert_eq "$((l0 + 2)) $((l1 + 1))" "${R[5]} ${R[6]}" "fsync sent every lingering record"
assert_eq "l 0 $l0 2|l 1 $l1 1" "${R[7]}" "fsync: one receipt per partition touched"
assert_eq "$((l1 + 1))" "${R[9]}" "a later write lingers again"
assert_eq "ok $((l1 + 2))" "${R[10]} ${R[11]}" "close sent it"
assert_eq $'bob\t1\nbob\t3' "$(mk_read "$MNT/topics/l/0/records@$l0:tsv" | cut -f3,4)" \
	"keyed records in order across writes (partition 0)"
assert_eq $'alice\t2\nalice\t4' "$(mk_read "$MNT/topics/l/1/records@$l1:tsv" | cut -f3,4)" \
	"keyed records in order across writes (partition 1)"

# SIGTERM with a descriptor still holding a lingering batch: flushed.
sum=$(leo_sum l)
mk_session "open a w $MNT/topics/l/append" "write a $(recs 100 102)" \
	"mark $MK_TMP/written" "wait $MK_TMP/go" >"$MK_TMP/bg.out" 2>&1 &
bg=$!
mk_wait_for 30 test -e "$MK_TMP/written" || fail "the background writer did not write"
assert_eq "$sum" "$(leo_sum l)" "3 records lingering in an open descriptor"
kill -TERM "$MK_PID"
for ((i = 0; i < 1500; i++)); do kill -0 "$MK_PID" 2>/dev/null || break; sleep 0.02; done
mk_alive && fail "the daemon did not exit within 30 s of SIGTERM"
wait "$MK_PID"     # (libfuse reports the signal: the status is not 0)
MK_PID=""
touch "$MK_TMP/go"
wait "$bg"
fusermount3 -u -z "$MNT" 2>/dev/null
mk_wait_for 10 eval '! mk_in_mounts' || bail "mount not gone after SIGTERM"
mk_mount
assert_eq "$((sum + 3))" "$(leo_sum l)" "SIGTERM flushed the lingering batch"

# ============================================================================
# bad input: an errno, an /errors line, nothing appended from the write
# ============================================================================
mk_ctl "create-topic e partitions=2" || bail "create-topic e"
mk_write "$MNT/topics/e/config" "message.max.bytes=300" || fail "set message.max.bytes"
mk_write "$MNT/topics/e/append" $'seed\n' || fail "seed e"
# check_bad ERRNO CODE PATH-SUBSTRING CMD...
check_bad() {
	local errno=$1 code=$2 path=$3 mark before label
	shift 3
	label=$(mk_label "$@")
	before=$(leos e)
	mark=$(mk_errors_mark)
	assert_fails_with "$errno" "$@"
	assert_error_since "$mark" "$code" "$label" "$path"
	mk_write "$MNT/clock" "+1000" >/dev/null
	assert_eq "$before" "$(leos e)" "$label: nothing appended"
}
long=$(printf 'x%.0s' {1..400})
mid=$(printf 'y%.0s' {1..280})     # a line under 300 bytes, its batch over
check_bad EMSGSIZE MESSAGE_TOO_LARGE "topics/e/append" \
	mk_write "$MNT/topics/e/append" $'ok-1\n'"$long"$'\nok-2\n'
check_bad EMSGSIZE MESSAGE_TOO_LARGE "topics/e/0/append" \
	mk_write "$MNT/topics/e/0/append" $'ok-1\n'"$long"$'\n'
check_bad EMSGSIZE MESSAGE_TOO_LARGE "topics/e/0/append" \
	mk_write "$MNT/topics/e/0/append" "$mid"$'\n'
check_bad EMSGSIZE MESSAGE_TOO_LARGE "topics/e/0/append" \
	mk_write "$MNT/topics/e/0/append" "$(printf 'line-%03d\n' {1..40})"
check_bad EMSGSIZE MESSAGE_TOO_LARGE "topics/e/append" \
	mk_write "$MNT/topics/e/append" "$mid"$'\n'
# Keyed records for both partitions, one of them too large for a batch.
check_bad EMSGSIZE MESSAGE_TOO_LARGE "topics/e/append" \
	mk_write "$MNT/topics/e/append:tsv" $'bob\tsmall\nalice\t'"$mid"$'\n'
check_bad EMSGSIZE MESSAGE_TOO_LARGE "topics/e/append" \
	mk_write "$MNT/topics/e/append:tsv" $'alice\t'"$mid"$'\nbob\tsmall\n'
# A record that can never fit a batch is refused by the write itself (as
# Kafka's send() refuses it), not later by the close, even under linger.ms.
mapfile -t R < <(mk_session "open a rw $MNT/topics/e/append" "write a $mid\n" "close a")
assert_eq "EMSGSIZE ok" "${R[1]} ${R[2]}" \
	"topic append under linger.ms: the write of a record over message.max.bytes is EMSGSIZE"
check_bad EINVAL INVALID_RECORD "topics/e/append:tsv" \
	mk_write_e "$MNT/topics/e/append:tsv" 'k\tgood\nk\tbad\\qescape\n'
check_bad EINVAL INVALID_RECORD "topics/e/append:tsv" \
	mk_write_e "$MNT/topics/e/append:tsv" 'v1\nshort\\x4\n'
check_bad EINVAL INVALID_RECORD "topics/e/append:tsv" \
	mk_write_e "$MNT/topics/e/append:tsv" 'k\tv\tnot-a-header\n'
check_bad EINVAL INVALID_RECORD "topics/e/append:tsv:key=K" \
	mk_write_e "$MNT/topics/e/append:tsv:key=K" 'v\nk\tv\n'
check_bad EINVAL INVALID_REQUEST "topics/e/append:bogus" \
	mk_write "$MNT/topics/e/append:bogus" $'x\n'
check_bad EINVAL INVALID_REQUEST "topics/e/append:key" \
	mk_write "$MNT/topics/e/append:key" $'x\n'
check_bad EINVAL INVALID_REQUEST "topics/e/append:acks=2" \
	mk_write "$MNT/topics/e/append:acks=2" $'x\n'
check_bad EINVAL INVALID_REQUEST "topics/e/append:seq=1" \
	mk_write "$MNT/topics/e/append:seq=1" $'x\n'
check_bad ENOENT UNKNOWN_PRODUCER_ID "topics/e/append:producer=nobody" \
	mk_write "$MNT/topics/e/append:producer=nobody" $'x\n'
check_bad ENOENT UNKNOWN_PRODUCER_ID "topics/e/0/append:producer=nobody" \
	mk_write "$MNT/topics/e/0/append:producer=nobody" $'x\n'

# A bad write leaves the descriptor usable, and a lingering batch of an
# earlier write is not lost with it (linger.ms = 100 here).
mapfile -t R < <(mk_session "open a rw $MNT/topics/e/append:tsv" \
	'write a k\tfine\n' 'write a k\tbad\\q\n' 'write a k\tfine-too\n' "close a")
assert_eq "ok EINVAL ok ok" "${R[*]:1}" "a refused write between two good ones"
ke=$(part_of k 2)
assert_eq $'k\tfine\nk\tfine-too' "$(mk_read "$MNT/topics/e/$ke/records:tsv" | cut -f3,4 | grep '^k')" \
	"only the good writes were appended"

mk_unmount
