#!/usr/bin/env bash
# roll-and-repair.sh — chapter 2's lab, "roll and repair the tail", on the
# filesystem.
#
# A tiny segment.bytes makes every batch start a new segment, and
# index.interval.bytes=1 indexes every batch. Three appends give three
# segments with bases 0, 1, 2. Then we stop the daemon, append a partial
# frame to the active segment (as if the process died in the middle of a
# write) and mount again: recovery cuts the active segment back to its last
# whole frame, the log end is still 3 and every value is there.
#
# Run it: bash examples/roll-and-repair.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
run() { echo "\$ $1"; eval "$1"; }

# The index file as the book prints it: ((absolute offset, byte position),).
show_index() {
	"$MK_PYTHON" - "$1" <<'PY'
import os, struct, sys
path = sys.argv[1]
base = int(os.path.basename(path).split(".")[0])
d = open(path, "rb").read()
# Kafka's offset index: 8-byte entries, u32 relative offset, u32 position
entries = tuple((base + r, p) for r, p in struct.iter_unpack(">II", d))
print(entries)
PY
}

mk_mount '[cluster]
clock = manual'
cd "$MNT"
T=topics/events/0

say "a topic whose segments hold one small batch each, every batch indexed"
run 'echo "create-topic events segment.bytes=100 index.interval.bytes=1" > ctl'
run 'grep -E "^(segment|index)" topics/events/config'

say "three appends, one record each, timestamps 0, 1, 2 from the manual clock"
for i in 0 1 2; do
	run "echo value-$i > $T/append; echo +1 > clock"
done

say "segment bases: one segment per batch"
run "ls $T/segments"
bases=$(ls $T/segments | grep '\.log$' | sed 's/\.log$//' | while read -r b; do echo $((10#$b)); done |
	tr '\n' ' ' | sed 's/ $//')
echo "segment bases: [${bases// /, }]"
assert_eq "0 1 2" "$bases" "three segments with bases 0, 1, 2"

say "the active segment's index: offset 2 is at byte 0 of 00000000000000000002.log"
run "od -A d -t x1 $T/segments/00000000000000000002.index"
idx=$(show_index "$T/segments/00000000000000000002.index")
echo "active index: $idx"
assert_eq "((2, 0),)" "$idx" "active index ((2, 0),)"

say "stop the daemon; remember the active segment's size"
cd /
mk_unmount
active=$DATA/broker-1/events-0/00000000000000000002.log
valid_size=$(stat -c %s "$active")
echo "active segment: broker-1/events-0/$(basename "$active"), $valid_size bytes"

say "a process died in the middle of a write: a partial frame at the end"
echo "\$ printf 'MKF1\\x00\\x00\\x00\\x20partial' >> broker-1/events-0/$(basename "$active")"
printf 'MKF1\x00\x00\x00\x20partial' >>"$active"
echo "now $(stat -c %s "$active") bytes"

say "mount again: recovery scans the active segment and cuts the torn tail"
mk_mount
cd "$MNT"
run "cat $T/leo"
assert_eq "3" "$(cat $T/leo)" "recovered leo: 3"
size=$(stat -c %s "$active")
echo "tail repaired: $([ "$size" = "$valid_size" ] && echo True || echo False) ($size bytes)"
assert_eq "$valid_size" "$size" "the active segment is back to its valid size"
run "cat $T/records"
assert_eq $'value-0\nvalue-1\nvalue-2' "$(cat $T/records)" "values: value-0, value-1, value-2"
run "cat $T/records:tsv"
assert_eq "$(printf '0\t0\t\\N\tvalue-0\n1\t1\t\\N\tvalue-1\n2\t2\t\\N\tvalue-2')" \
	"$(cat $T/records:tsv)" "offsets 0, 1, 2 with timestamps 0, 1, 2"

say "exercise 2: delete the active .index while stopped; it is rebuilt from the log"
cd /
mk_unmount
echo "\$ rm broker-1/events-0/00000000000000000002.index"
rm "$DATA/broker-1/events-0/00000000000000000002.index"
mk_mount
cd "$MNT"
run "cat $T/records"
assert_eq $'value-0\nvalue-1\nvalue-2' "$(cat $T/records)" "values unchanged without the index"
assert_true "the index file is there again" test -f "$DATA/broker-1/events-0/00000000000000000002.index"
idx=$(show_index "$DATA/broker-1/events-0/00000000000000000002.index")
echo "rebuilt active index: $idx"
assert_eq "((2, 0),)" "$idx" "rebuilt active index ((2, 0),)"

cd /
mk_unmount
