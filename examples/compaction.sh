#!/usr/bin/env bash
# compaction.sh — the compact policy on the filesystem, the article's
# example: a topic used as a table of the latest value per key.
#
# Keys are updated and deleted (a tombstone: a null value). `/ctl compact`
# rewrites the closed segments keeping, per key, only the record with the
# highest offset: offsets do not change, so the compacted view has gaps.
# The tombstone stays for delete.retention.ms after its segment was first
# cleaned — long enough for every reader to see the delete — and then a
# later compaction removes it too. The active segment is never touched.
#
# Run it: bash examples/compaction.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
run() { echo "\$ $1"; eval "$1"; }

mk_mount '[cluster]
clock = manual'
cd "$MNT"
T=topics/profiles/0

say "a compacted topic (one batch per segment, tombstones kept 60 s)"
run 'echo "create-topic profiles cleanup.policy=compact segment.bytes=100 delete.retention.ms=60000" > ctl'

say "a keyless record means nothing to compaction: refused"
echo "\$ echo anonymous > $T/append"
if echo anonymous >$T/append 2>/dev/null; then
	fail "a keyless record should be refused"
else
	pass "a keyless record is refused (EINVAL)"
fi
run "tail -n 1 errors | cut -d' ' -f3-"
assert_match "INVALID_RECORD" "$(tail -n 1 errors)" "/errors says INVALID_RECORD"

say "keys updated and deleted (TSV: KEY<TAB>VALUE, \\N is null)"
run "printf 'alice\\tParis\\n' > $T/append:tsv"
run "printf 'bob\\tLondon\\n' > $T/append:tsv"
run "printf 'alice\\tBerlin\\n' > $T/append:tsv"
run "printf 'carol\\tRome\\n' > $T/append:tsv"
run "printf 'bob\\t\\\\N\\n' > $T/append:tsv    # bob deleted: a tombstone"
run "printf 'alice\\tOslo\\n' > $T/append:tsv"
run "printf 'dave\\tLima\\n' > $T/append:tsv"
run "cat $T/records:tsv | cut -f1,3,4"
assert_eq "7" "$(cat $T/leo)" "seven records, offsets 0..6"
run "grep -E '^(cleaner_checkpoint|dirty_ratio)' $T/state"
assert_eq "dirty_ratio 1.00" "$(grep '^dirty_ratio' $T/state)" "nothing cleaned yet"

say "compact: the latest record per key; offsets kept, so gaps appear"
run "echo compact > ctl"
run "cat $T/records:tsv | cut -f1,3,4"
view=$(cut -f1,3,4 <$T/records:tsv)
assert_eq $'3\tcarol\tRome\n4\tbob\t\\N\n5\talice\tOslo\n6\tdave\tLima' "$view" \
	"alice's and bob's older values are gone; bob's tombstone stays; dave's record is in the active segment"
run "grep -E '^(log_start_offset|cleaner_checkpoint|dirty_ratio)' $T/state"
assert_eq "cleaner_checkpoint 6" "$(grep '^cleaner_checkpoint' $T/state)" "cleaned up to offset 6"
assert_eq "0" "$(cat $T/log_start_offset)" "compaction does not move the log start"
run "wc -c $T/segments/*.log"
empty=$(for f in $T/segments/*.log; do [ -s "$f" ] || echo "$f"; done | wc -l)
assert_eq "0" "$empty" "the segments of offsets 0, 1 and 2 held only superseded records: what is kept is packed into full segments, none is left empty"
assert_eq "4" "$(ls $T/segments | grep -c '\.log$')" "carol's record went into the first segment (base 0); bob's and alice's each fill one; dave's is active"
run "cat $T/records@1"
assert_eq $'Rome\n\nOslo\nLima' "$(cat $T/records@1)" "reading from a gap starts at the next record (the tombstone reads as an empty line)"

say "a minute later, the tombstone has been visible long enough: the next compaction removes it"
run "echo +60000 > clock"
run "echo compact > ctl"
run "cat $T/records:tsv | cut -f1,3,4"
assert_eq $'3\tcarol\tRome\n5\talice\tOslo\n6\tdave\tLima' "$(cut -f1,3,4 <$T/records:tsv)" \
	"bob is gone for good"

say "the compacted log survives a remount"
cd /
mk_unmount
mk_mount
cd "$MNT"
run "cat $T/records:tsv | cut -f1,3,4"
assert_eq $'3\tcarol\tRome\n5\talice\tOslo\n6\tdave\tLima' "$(cut -f1,3,4 <$T/records:tsv)" \
	"the same view after a remount"

cd /
mk_unmount
