#!/usr/bin/env bash
# segments.sh — with a small segment.bytes appends roll segments; segments/
# shows the leader's files raw under their 20-digit names, Kafka's three a
# segment (.log, .index, .timeindex); deleted index files are rebuilt and
# lose nothing.
. "$(dirname "$0")/lib.sh"

mk_mount '[cluster]
clock = manual'
assert_ok "create-topic s segment.bytes=200" mk_ctl "create-topic s segment.bytes=200"
P=$MNT/topics/s/0
D=$DATA/broker-1/s-0

for i in $(seq 0 9); do
	mk_write "$P/append" "value-$i" || fail "append value-$i"
done
# A multi-record batch larger than segment.bytes still goes in whole.
big=$(for i in $(seq 10 19); do echo "value-$i"; done)
assert_ok "a 10-record batch larger than segment.bytes" mk_write "$P/append" "$big"$'\n'
mk_write "$P/append" "value-20" || fail "append value-20"
assert_eq "21" "$(mk_read "$P/leo")" "21 records"

names=$(ls "$P/segments")
bad=$(printf '%s\n' "$names" | grep -vE '^[0-9]{20}\.(log|index|timeindex)$')
assert_eq "" "$bad" "every name in segments/ is 20 digits and .log, .index or .timeindex"
nlog=$(printf '%s\n' "$names" | grep -c '\.log$')
assert_true "several segments ($nlog)" test "$nlog" -ge 3
assert_eq "$nlog" "$(printf '%s\n' "$names" | grep -c '\.index$')" "one .index per .log"
assert_eq "$nlog" "$(printf '%s\n' "$names" | grep -c '\.timeindex$')" "one .timeindex per .log"
assert_eq "$(printf '%s\n' "$names" | sort)" "$(ls "$D" | grep -E '^[0-9]{20}\.(log|index|timeindex)$' | sort)" \
	"DATA_DIR holds Kafka's three files per segment, as segments/ lists them"
assert_eq "$(ls "$D" | grep -E '^[0-9]{20}\.log$' | sort)" "$(printf '%s\n' "$names" | grep '\.log$' | sort)" \
	"segments/ lists the .log files of DATA_DIR/broker-1/s-0"
assert_eq "00000000000000000000.log" "$(printf '%s\n' "$names" | grep '\.log$' | sort | head -n 1)" \
	"the first segment's base offset is 0"

# Each segment holds whole batches, its name is the offset of its first record.
prev_end=-1
all_ok=1
for f in $(printf '%s\n' "$names" | grep '\.log$' | sort); do
	base=$((10#${f%.log}))
	magic=$(od -An -tu1 -j16 -N1 "$P/segments/$f" | tr -d ' ')
	[ "$magic" = "2" ] || { all_ok=0; note "$f: magic '$magic' at byte 16"; }
	size=$(stat -c %s "$P/segments/$f")
	[ "$size" = "$(mk_size "$D/$f")" ] || { all_ok=0; note "$f: st_size $size differs from DATA_DIR"; }
	cmp -s "$P/segments/$f" "$D/$f" || { all_ok=0; note "$f: raw read differs from DATA_DIR"; }
	[ "$(mk_valid_size "$P/segments/$f")" = "$size" ] || { all_ok=0; note "$f: not whole frames"; }
	first=$(mk_read "$P/records@$base:tsv:max=1" | cut -f1)
	[ "$first" = "$base" ] || { all_ok=0; note "$f: first record offset $first"; }
	[ "$base" -gt "$prev_end" ] || { all_ok=0; note "$f: base not increasing"; }
	prev_end=$base
	# Below segment.bytes unless a single batch is larger (a new segment
	# accepts one batch of any size).
	if [ "$size" -gt 200 ] && [ "$(mk_frame_count "$D/$f")" != 1 ]; then
		all_ok=0
		note "$f: $size bytes over segment.bytes=200 with more than one batch"
	fi
done
assert_eq 1 "$all_ok" "each segment: RecordBatch v2 (magic 2), raw bytes = DATA_DIR, whole frames, named by its first offset, within segment.bytes"
# Kafka's entry sizes, and exactly the entries (no preallocation): 8 bytes
# an offset entry, 12 a time entry, in every segment's files.
sizes_ok=1
for f in $(printf '%s\n' "$names" | grep -E 'index$'); do
	sz=$(stat -c %s "$P/segments/$f")
	case $f in
	*.timeindex) w=12 ;;
	*) w=8 ;;
	esac
	[ "$sz" -gt 0 ] && [ $((sz % w)) = 0 ] || { sizes_ok=0; note "$f: $sz bytes"; }
	[ "$sz" = "$(mk_size "$D/$f")" ] || { sizes_ok=0; note "$f: st_size $sz differs from DATA_DIR"; }
done
assert_eq 1 "$sizes_ok" "every .index is 8-byte entries, every .timeindex 12-byte ones, none empty"
assert_fails_with ENOENT mk_read "$P/segments/00000000000000000999.log"
assert_fails_with EINVAL mk_write "$P/segments/00000000000000000000.log" "x"

# Records read the same across segment boundaries.
want=$(for i in $(seq 0 20); do echo "value-$i"; done)
assert_eq "$want" "$(mk_read "$P/records")" "all records across segments"
for off in 0 5 10 15 20; do
	assert_eq "value-$off" "$(mk_read "$P/records@$off:max=1")" "records@$off"
done
mk_read "$P/records:tsv" >"$MK_TMP/before.tsv"

# ---- delete index files while unmounted: they are rebuilt ---------------------------
mk_unmount
first_idx=$D/00000000000000000000.index
first_tim=$D/00000000000000000000.timeindex
active_idx=$(ls "$D"/*.index | sort | tail -n 1)
active_tim=${active_idx%.index}.timeindex
mid_idx=$(ls "$D"/*.index | sort | sed -n 2p)
mid_tim=${mid_idx%.index}.timeindex
third_tim=$(ls "$D"/*.timeindex | sort | sed -n 3p)
for f in "$first_idx" "$first_tim" "$active_idx" "$active_tim" "$mid_tim" "$third_tim"; do
	cp "$f" "$MK_TMP/$(basename "$f")"
done
# The first segment loses both, the middle one its .index (its .timeindex
# stays), the third its .timeindex (its .index stays), the active both.
rm -f "$first_idx" "$first_tim" "$active_idx" "$active_tim" "$mid_idx" "$third_tim"
note "deleted $(basename "$first_idx") $(basename "$first_tim") $(basename "$mid_idx") $(basename "$third_tim") $(basename "$active_idx") $(basename "$active_tim")"
# The merged 16-byte .index of before issue 25 point 2 in the first segment's place
# (no .timeindex beside it): never taken for Kafka's, rebuilt.
"$MK_PYTHON" -c '
import struct, sys
src, dst = sys.argv[1], sys.argv[2]
d = open(src, "rb").read()
out = b"".join(struct.pack(">q", 1700000000000 + i) + d[i * 8:i * 8 + 8]
               for i in range(len(d) // 8))
open(dst, "wb").write(out)' "$MK_TMP/$(basename "$first_idx")" "$first_idx"
mk_mount
assert_true "a closed segment's .timeindex is left alone at mount (read at first use)" \
	test -f "$mid_tim"
mk_read "$P/records:tsv" >"$MK_TMP/after.tsv"
assert_files_eq "$MK_TMP/before.tsv" "$MK_TMP/after.tsv" "every record reads back with the indexes deleted"
for off in 0 3 10 17 20; do
	assert_eq "value-$off" "$(mk_read "$P/records@$off:max=1")" "records@$off without its index"
done
assert_eq "$names" "$(ls "$P/segments")" "segments/ lists the same names"
assert_true "the active segment's indexes reappeared" test -f "$active_idx" -a -f "$active_tim"
assert_true "the middle segment's .index reappeared (after reading it)" test -f "$mid_idx"
assert_true "the third segment's .timeindex reappeared (after reading it)" test -f "$third_tim"
for f in "$first_idx" "$first_tim" "$active_idx" "$active_tim" "$mid_tim" "$third_tim"; do
	assert_files_eq "$MK_TMP/$(basename "$f")" "$f" "the rebuilt $(basename "$f") equals the original"
done

# Appends go on after the rebuild, into the right segment.
assert_ok "append after the rebuild" mk_write "$P/append" "value-21"
assert_eq "value-21" "$(mk_read "$P/records@21")" "records@21"
mk_unmount
mk_mount
assert_eq "$want"$'\nvalue-21' "$(mk_read "$P/records")" "all 22 records after another remount"

# ---- a damaged closed segment is never repaired silently ---------------------------
mk_ctl "create-topic other" || fail "create-topic other"
mk_write "$MNT/topics/other/0/append" "fine" || fail "append to other"
mk_unmount
closed=$D/00000000000000000000.log
closed_size=$(mk_size "$closed")
cp "$closed" "$MK_TMP/closed.orig"
# Flip one byte inside the first frame's payload: its CRC no longer matches.
"$MK_PYTHON" -c '
import sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
d[20] ^= 0xff
open(p, "wb").write(bytes(d))' "$closed"
mk_mount
assert_eq "fine" "$(mk_read "$MNT/topics/other/0/records")" "the rest of the cluster works"
mark=$(mk_errors_mark)
assert_fails_with EIO mk_read "$P/records@0"
errs=$(mk_read "$MNT/errors" | tail -n +$((mark + 1)))
assert_match "KAFKA_STORAGE_ERROR [^"$'\n'"]*00000000000000000000\.log[^"$'\n'"]* at byte [0-9]+" "$errs" \
	"/errors names the damaged file and the position"
assert_eq "none" "$(mk_read "$P/leader")" "the damaged replica went offline: no leader"
assert_fails_with EHOSTDOWN mk_read "$P/records@15"
assert_eq "$closed_size" "$(mk_size "$closed")" "the closed segment was not truncated"
assert_eq "$("$MK_PYTHON" -c 'import sys; d=bytearray(open(sys.argv[1],"rb").read()); d[20]^=0xff; sys.stdout.write(d.hex())' "$closed")" \
	"$(od -An -v -tx1 "$MK_TMP/closed.orig" | tr -d ' \n')" "the closed segment was not rewritten"
assert_ok "the healthy topic still takes appends" mk_write "$MNT/topics/other/0/append" "still fine"

# One failed append is one /errors line, terminated line or not.
mark=$(mk_errors_mark)
assert_fails_with EHOSTDOWN mk_write "$P/append" $'refused\n'
assert_eq "$((mark + 1))" "$(mk_errors_mark)" "a refused one-line write adds one /errors line"
# An unterminated line is sent at the last close (issue 7 point 4), whose
# error can only be an /errors line: close(2) has returned by then.
mark=$(mk_errors_mark)
assert_ok "an unterminated write is carried to the last close" mk_write "$P/append" "refused-unterminated"
one_more() { [ "$(mk_errors_mark)" -gt "$mark" ]; }
mk_wait_for 10 one_more
assert_eq "$((mark + 1))" "$(mk_errors_mark)" "a refused unterminated line adds one /errors line at the last close"
assert_match "at the last close" "$(mk_read "$MNT/errors" | tail -n 1)" "the line says where it was refused"
mk_unmount
