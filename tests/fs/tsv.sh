#!/usr/bin/env bash
# tsv.sh — the TSV view is binary-safe: records whose keys, values and
# headers hold tabs, newlines, CR, NUL and other control bytes, backslashes,
# null and empty keys and values round-trip exactly through append:tsv and
# records:tsv; the plain view of the same records shows the raw values.
. "$(dirname "$0")/lib.sh"

mk_mount '[cluster]
clock = manual'
mk_ctl "create-topic bin" || bail "create-topic bin"
P=$MNT/topics/bin/0

# The records, their TSV input (canonical escapes), the expected TSV and
# plain output, all made by python from one list so nothing is hand-escaped.
"$MK_PYTHON" - "$MK_TMP" <<'PY'
import os, sys
out = sys.argv[1]
N = None
recs = [
    # (key, value, [(name, value), ...])
    (N, b"plain", []),
    (b"key1", b"tab\there", []),
    (b"k\tey", b"line1\nline2\r\n", []),
    (N, b"nul\x00byte\x00", []),
    (b"back\\slash", b"\\", []),
    (b"", b"empty key", []),
    (b"empty value", b"", []),
    (b"tomb", N, []),                        # null value: a tombstone
    (N, b"\\N", []),                         # the two characters \N, not null
    (b"ctl", b"\x01\x1b\x7f end", []),
    (b"hk", b"with headers", [(b"h1", b"v1"), (b"h2", N), (b"h3", b""),
                              (b"bin", b"a\tb\x00c\\")]),
    (N, bytes(range(256)), []),              # every byte value
    (b"\xc3\xa9t\xc3\xa9", b"utf-8 \xe2\x82\xac", []),
]

def esc(b, eq=False):
    if b is None:
        return b"\\N"
    o = bytearray()
    for c in b:
        if c == 0x5c: o += b"\\\\"
        elif c == 9: o += b"\\t"
        elif c == 10: o += b"\\n"
        elif c == 13: o += b"\\r"
        elif eq and c == 0x3d: o += b"\\x3d"
        elif c < 0x20 or c == 0x7f: o += b"\\x%02x" % c
        else: o.append(c)
    return bytes(o)

inp, tsv, plain = bytearray(), bytearray(), bytearray()
for off, (k, v, hs) in enumerate(recs):
    fields = [esc(k), esc(v)] + [esc(n, True) + b"=" + esc(hv) for n, hv in hs]
    inp += b"\t".join(fields) + b"\n"
    tsv += b"%d\t0\t" % off + b"\t".join(fields) + b"\n"
    plain += (v or b"") + b"\n"
open(os.path.join(out, "in.tsv"), "wb").write(inp)
open(os.path.join(out, "want.tsv"), "wb").write(tsv)
open(os.path.join(out, "want.plain"), "wb").write(plain)
open(os.path.join(out, "count"), "w").write("%d\n" % len(recs))
PY
n=$(cat "$MK_TMP/count")

assert_ok "append:tsv of $n binary records in one write" mk_write_file "$P/append:tsv" "$MK_TMP/in.tsv"
assert_eq "$n" "$(mk_read "$P/leo")" "all $n records appended"
assert_eq "1" "$(mk_frame_count "$P/segments/00000000000000000000.log")" "as one batch"
mk_read "$P/records:tsv" >"$MK_TMP/got.tsv"
assert_files_eq "$MK_TMP/want.tsv" "$MK_TMP/got.tsv" "records:tsv gives back exactly what append:tsv took"
mk_read "$P/records" >"$MK_TMP/got.plain"
assert_files_eq "$MK_TMP/want.plain" "$MK_TMP/got.plain" "plain records shows the raw values (tombstone = empty line)"

# ---- non-canonical escapes are accepted and come back canonical -----------
mk_ctl "create-topic esc" || bail "create-topic esc"
E=$MNT/topics/esc/0
assert_ok "append:tsv with \\xHH in upper case and for printable bytes" \
	mk_write "$E/append:tsv" 'x\x41\xFF\x0A'
assert_eq "$(printf '0\t0\t\\N\txA\xff\\n')" "$(mk_read "$E/records:tsv")" \
	"\\x41 reads back as A, \\xFF as the raw byte, \\x0A as \\n"
assert_ok "a key with a single field value" mk_write_e "$E/append:tsv" 'k\tv\n'
assert_eq "$(printf '1\t0\tk\tv')" "$(mk_read "$E/records@1:tsv")" "KEY<TAB>VALUE"

# ---- key= on a TSV append ------------------------------------------------------
assert_ok "append:tsv:key=K with value-only lines" mk_write_e "$E/append:tsv:key=K" 'one\ntwo\n'
assert_eq "$(printf '2\t0\tK\tone\n3\t0\tK\ttwo')" "$(mk_read "$E/records@2:tsv")" \
	"key= gives every record of the write its key"

# ---- plain appends are binary too (only the newline ends a record) ----------
assert_ok "plain append of a line with TAB, NUL, CR and backslash" \
	mk_write_e "$E/append" 'a\tb\x00c\rd\\e\n'
assert_eq "$(printf '4\t0\t\\N\ta\\tb\\x00c\\rd\\\\e')" "$(mk_read "$E/records@4:tsv")" \
	"the plain line is stored as given"
assert_ok "plain append:key=alice" mk_write "$E/append:key=alice" $'x\n'
assert_eq "$(printf '5\t0\talice\tx')" "$(mk_read "$E/records@5:tsv")" "append:key= sets the key"
assert_ok "plain append of an empty line" mk_write "$E/append" $'\n'
assert_eq "$(printf '6\t0\t\\N\t')" "$(mk_read "$E/records@6:tsv")" "an empty line is an empty (not null) value"

# ---- survives a remount byte for byte ---------------------------------------------
mk_remount
mk_read "$P/records:tsv" >"$MK_TMP/got2.tsv"
assert_files_eq "$MK_TMP/want.tsv" "$MK_TMP/got2.tsv" "records:tsv identical after remount"

mk_unmount
