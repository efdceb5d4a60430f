#!/usr/bin/env bash
# longline.sh — a line over message.max.bytes is EMSGSIZE from the write
# that carries any part of it, however the kernel splits the write, and
# nothing of it is ever appended (docs/filesystem.md, section 5, "Lines
# over message.max.bytes"; issue 23 point 1).
#
# Append files are direct I/O: the kernel cuts one write(2) into pieces of
# at most max_write (1 MiB) by the pages of the writer's buffer, the first
# one 1 MiB less the buffer's offset in its page, and a piece refused
# after another was taken makes write(2) return a short count.
# tests/fs/longline.py places each buffer at an exact page offset.
#
#   - one over-long line in one write(2), through every append form, from
#     buffers at page offsets 0, 1, 1328, 4095 and 2731: EMSGSIZE from the
#     write itself (no short count), nothing stored, the descriptor still
#     takes the next line, close succeeds;
#   - the limit exactly: the longest line that fits is stored whole (one
#     piece, or carried over two writes); one byte more is EMSGSIZE; the
#     kernel splitting a line within a page of the limit is EMSGSIZE (the
#     documented window);
#   - complete lines, then an over-long one, in one write(2): the lines
#     stored, a short count, nothing of the long line; a line that fits
#     across two pieces is stored whole;
#   - a TSV record over the limit (its line under it): EMSGSIZE, nothing;
#   - a refusal part-way through a line (a larger message.max.bytes, or a
#     line carried between writes): the write that crosses is EMSGSIZE,
#     every later write on that descriptor too (an /errors line says to
#     open the file again), close succeeds and appends nothing of the
#     line, a new descriptor writes as usual.
. "$(dirname "$0")/lib.sh"

mk_mount
mk_ctl "create-topic t partitions=2" || bail "create-topic t"
T=$MNT/topics/t

ll() { "$MK_PYTHON" -I "$MK_LIB_DIR/longline.py" "$@"; }

# The number of records in every partition of topic $1 (default t).
leos() {
	local n=0 p
	for p in "$MNT/topics/${1:-t}"/[0-9]*; do
		n=$((n + $(<"$p/leo")))
	done
	echo "$n"
}

# The longest record value of topic $1 (default t), in bytes.
longest() {
	local p
	for p in "$MNT/topics/${1:-t}"/[0-9]*; do
		cat "$p/records"
	done | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }'
}

# refused_midway TOPIC EXPECTED MSG OFF OP...: longline.py on
# topics/TOPIC/0/append prints EXPECTED; the newest /errors line is the
# refusal of a write after a line refused part-way through, and it says
# to open the file again.
refused_midway() {
	local topic=$1 expect=$2 msg=$3 mark last
	shift 3
	mark=$(mk_errors_mark)
	assert_eq "$expect" "$(ll "$MNT/topics/$topic/0/append" "$@")" "$msg"
	assert_error_since "$mark" MESSAGE_TOO_LARGE "$msg" "topics/$topic/0/append"
	last=$(mk_read "$MNT/errors" | tail -n 1)
	assert_match "open the file again" "$last" "$topic: the /errors line says to open the file again"
}

M=1048588          # message.max.bytes, the default
OVER=1048676       # the issue's line: 1,048,675 bytes and its newline
# The longest plain line a partition batch holds: Kafka's 61-byte batch
# header and 11 bytes of record around the value (a 3-byte varint length,
# attributes, timestamp and offset deltas, key length -1, a 3-byte value
# length, header count: core/storage/codec.h).
FITS=$((M - 61 - 11))

# ---- one over-long line, every append form, five buffer offsets -----------------
# One descriptor per offset: the line, then a short line, then close.
for form in append append:acks=1 append:tsv append:key=K topic; do
	path=$T/0/$form
	[ "$form" = topic ] && path=$T/append
	ops=() expect=()
	for off in 0 1 1328 4095 2731; do
		ops+=(line $OVER "@$off" text 'ok\n' close open)
		expect+=(EMSGSIZE all ok ok)
	done
	before=$(leos)
	mark=$(mk_errors_mark)
	assert_eq "${expect[*]} all ok" "$(ll "$path" 0 "${ops[@]}" text 'after\n' close)" \
		"$form, buffers at page offsets 0 1 1328 4095 2731: each write EMSGSIZE (no short count), the next line taken, close succeeds"
	assert_eq "$((mark + 5))" "$(mk_errors_mark)" "$form: an /errors line for each refusal"
	assert_error_since "$mark" MESSAGE_TOO_LARGE "$form" "topics/t"
	assert_eq "$((before + 6))" "$(leos)" "$form: only the short lines were stored"
done
assert_eq 5 "$(longest)" "nothing of any over-long line was stored"

# ---- the limit exactly --------------------------------------------------------------
mk_ctl "create-topic e partitions=1" || bail "create-topic e"
E=$MNT/topics/e/0
assert_eq "all ok" "$(ll "$E/append" 0 line $((FITS + 1)) close)" \
	"the longest line that fits, in one piece (page-aligned buffer): taken"
assert_eq "EMSGSIZE ok" "$(ll "$E/append" 0 line $((FITS + 2)) close)" \
	"one byte longer: EMSGSIZE"
assert_eq "all all ok" "$(ll "$E/append" 0 raw 600000 line $((FITS + 1 - 600000)) close)" \
	"the longest line that fits, over two writes: taken"
assert_eq "EMSGSIZE ok" "$(ll "$E/append" 1328 line $((FITS + 1)) close)" \
	"the longest line that fits, split by the kernel (offset 1328): within a page of the limit, EMSGSIZE"
assert_eq 2 "$(mk_read "$E/leo")" "two whole lines stored"
assert_eq "$FITS" "$(longest e)" "each of them whole"

# ---- complete lines, then an over-long one, in one write(2) ------------------------
# From offset 1328 the first piece is 1,047,248 bytes: 100 lines of 100
# bytes and the first 1,037,248 bytes of the long line, taken; the second
# piece crosses the limit. write(2) returns the first piece's count.
mk_ctl "create-topic m partitions=1" || bail "create-topic m"
MP=$MNT/topics/m/0
refused_midway m "1047248 EMSGSIZE EMSGSIZE ok" \
	"lines then an over-long line in one write: a short count, then the rest and a new line are EMSGSIZE, close succeeds" \
	1328 lines 100 100 $OVER rest text 'new\n' close
assert_eq 100 "$(mk_read "$MP/leo")" "the 100 lines before it were stored"
assert_eq 99 "$(longest m)" "nothing of the over-long line"
# Nine lines of 100,000 bytes, then one of 200,000 that the pieces cut.
assert_eq "all ok" "$(ll "$MP/append" 1328 lines 9 100000 200001 close)" \
	"a line that fits, cut by the kernel's pieces: the whole write is taken"
assert_eq 110 "$(mk_read "$MP/leo")" "all ten lines stored"
assert_eq 200000 "$(longest m)" "the cut line whole"

# ---- a TSV record over the limit ---------------------------------------------------
# A line of M - 8 bytes is under the line limit; its record's batch is not.
before=$(leos e)
assert_eq "EMSGSIZE ok" "$(ll "$E/append:tsv" 1328 line $((M - 7)) close)" \
	"a TSV record over the limit in one write: EMSGSIZE"
assert_eq "EMSGSIZE all ok" "$(ll "$E/append:tsv" 0 line $((M - 7)) text 'ok\n' close)" \
	"the same from a page-aligned buffer: EMSGSIZE, the descriptor goes on"
assert_eq "all EMSGSIZE EMSGSIZE ok" \
	"$(ll "$E/append:tsv" 0 raw 600000 line $((M - 7 - 600000)) text 'ok\n' close)" \
	"a TSV record over the limit carried over two writes: the completing write is EMSGSIZE, and so is every later one"
assert_eq "$((before + 1))" "$(leos e)" "only the one line stored"
assert_eq "$FITS" "$(longest e)" "nothing of the TSV records"

# ---- a refusal part-way through a line: message.max.bytes over 1 MiB ---------------
mk_ctl "create-topic b partitions=1" || bail "create-topic b"
mk_write "$MNT/topics/b/config" "message.max.bytes=3145728" || fail "message.max.bytes=3 MiB"
B=$MNT/topics/b/0
# 3.5 MiB from offset 1328: pieces of 1,047,248 and 1,048,576 bytes are
# carried; the third would leave a line within a page of 3 MiB.
refused_midway b "2095824 EMSGSIZE EMSGSIZE ok" \
	"a 3.5 MiB line under a 3 MiB limit: a short count, then EMSGSIZE for the rest and for every later write" \
	1328 line 3670016 rest text 'fresh\n' close
assert_eq 0 "$(mk_read "$B/leo")" "nothing stored, not at close either"
assert_eq "all all ok" "$(ll "$B/append" 1328 line 2500000 text 'after\n' close)" \
	"a new descriptor: a 2.5 MiB line (cut into three pieces) and a short one are taken"
assert_eq "2 2499999" "$(mk_read "$B/leo") $(longest b)" "both stored, the long one whole"

# A line carried between writes (each one piece) that grows over the limit.
before=$(mk_read "$E/leo")
refused_midway e "all all EMSGSIZE EMSGSIZE ok" \
	"a carried line that a later write takes over the limit: that write and the next are EMSGSIZE" \
	0 text 'first\n' raw 600000 raw 600000 text 'end\n' close
assert_eq "$((before + 1))" "$(mk_read "$E/leo")" "the line before it stored, nothing of the long one"
assert_eq "$FITS" "$(longest e)" "no part of it"

# The kernel sends a release after close(2) returned: after a remount
# every last close has been done, and none appended anything more.
mk_remount
assert_eq "30 5" "$(leos) $(longest)" "after a remount: t as it was"
assert_eq "4 $FITS" "$(leos e) $(longest e)" "e as it was"
assert_eq "110 200000" "$(leos m) $(longest m)" "m as it was"
assert_eq "2 2499999" "$(leos b) $(longest b)" "b as it was"

mk_unmount
