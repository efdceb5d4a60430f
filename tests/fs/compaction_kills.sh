#!/usr/bin/env bash
# compaction_kills.sh — compaction stays cheap through kills (issue 23
# point 4): keyed appends over five keys on small segments, 25 cleaning
# cycles each ended by a kill -9 — after a /ctl compact with the background
# cleaner running every 20 ms, or (every fifth cycle) inside a compaction
# swap at a failpoint, recovered by the next open. After every cycle the
# closed segments are packed: about live bytes / segment.bytes + 1 of them,
# none empty but possibly the first, no two neighbours that would fit in
# one segment; and every key's latest value is there.
. "$(dirname "$0")/lib.sh"

# (The cluster clock does not matter here: no tombstones, no retention.)
AUTO='[cluster]
brokers = 1
[replication]
mode = auto
[log]
log.retention.check.interval.ms = 20'
MANUAL='[cluster]
brokers = 1'
SB=300
POINTS=(cleaner.swap.writing cleaner.swap.journal cleaner.swap.moved-one
	cleaner.swap.deleted-one cleaner.swap.state)

# burst CYCLE [dies]: 30 keyed appends (keys k0..k4), then /ctl compact,
# from one process; prints the last value written per key as "KEY VALUE"
# lines. With dies, the compaction is expected to kill the daemon.
burst() {
	"$MK_PYTHON" -I - "$MNT" "$1" "${2:-}" <<'PY'
import sys
mnt, cycle, dies = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "dies"
last = {}
for i in range(30):
    k, v = "k%d" % (i % 5), "c%02d-%02d-%s" % (cycle, i, "x" * 8)
    with open("%s/topics/c/0/append:key=%s:acks=1" % (mnt, k), "w") as f:
        f.write(v)
    last[k] = v
for k in sorted(last):
    print(k, last[k])
try:
    with open(mnt + "/ctl", "w") as f:
        f.write("compact")
except OSError:
    if not dies:
        raise
PY
}

# packed: the closed .log files of the partition (all but the highest
# base) hold what the last pass kept packed: no two neighbours would fit
# in one segment (so at most 2 * bytes / SB + 1 of them; about bytes / SB
# + 1 here, with three records a segment) and at most one is empty.
packed() {
	local sizes n bytes empty fits
	sizes=$(stat -c '%n %s' "$PDIR"/*.log 2>/dev/null | sort | head -n -1 |
		awk '{ print $2 }')
	n=$(printf '%s\n' "$sizes" | grep -c .)
	bytes=$(printf '%s\n' "$sizes" | awk '{ s += $1 } END { print s + 0 }')
	empty=$(printf '%s\n' "$sizes" | grep -cx 0)
	fits=$(printf '%s\n' "$sizes" | awk -v sb=$SB 'NR > 1 && p + $1 <= sb { f++ } { p = $1 } END { print f + 0 }')
	PACKED="$n closed segments, $bytes bytes, $empty empty, $fits neighbours fitting in one"
	[ "$n" -le $((2 * bytes / SB + 1)) ] && [ "$empty" -le 1 ] && [ "$fits" = 0 ]
}

mk_mount "$AUTO"
mk_ctl "create-topic c segment.bytes=$SB cleanup.policy=compact" || bail "create-topic c"
T=$MNT/topics/c/0
PDIR=$DATA/broker-1/c-0
bad=0 worst=0
for ((cycle = 1; cycle <= 25; cycle++)); do
	if ((cycle % 5 == 0)); then
		# No background cleaner: this cycle's /ctl compact reaches the
		# point; the next cycle checks what the open recovered.
		mk_kill
		point=${POINTS[$((cycle / 5 - 1))]}
		MKFS_FAILPOINTS=$point mk_mount "$MANUAL"
		burst "$cycle" dies >"$MK_TMP/last" || fail "burst $cycle"
		mk_wait_for 10 eval '! mk_alive' || fail "the daemon did not die at $point"
		wait "$MK_PID" 2>/dev/null
		MK_PID=""
		fusermount3 -u -z "$MNT" 2>/dev/null
		mk_wait_for 10 eval '! mk_in_mounts' || bail "dead mount not cleared"
		mk_mount "$AUTO"
		continue
	fi
	burst "$cycle" >"$MK_TMP/last" || fail "burst $cycle"
	n=$(ls "$PDIR" | grep -cE '^[0-9]{20}\.log$')
	[ "$n" -gt "$worst" ] && worst=$n
	# A background pass may still be cleaning what the HW reached late.
	if ! mk_wait_for 2 packed; then
		bad=$((bad + 1))
		[ "$bad" -le 3 ] && note "cycle $cycle: $PACKED"
	fi
	mk_kill
	mk_mount
done
assert_eq "0" "$bad" "after each cycle's compaction the cleaned segments are packed ($PACKED; at most $worst segment files)"
assert_true "no swap journal and nothing staged" test ! -e "$PDIR/swap-journal" -a -z "$(ls "$PDIR/cleaned" 2>/dev/null)"
latest=$(mk_read "$T/records:tsv" | awk -F '\t' '{ v[$3] = $4 } END { for (k in v) print k, v[k] }' | sort)
assert_eq "$(cat "$MK_TMP/last")" "$latest" "every key's latest value survives"
assert_eq "750" "$(mk_read "$T/leo")" "offsets are kept: 25 cycles of 30 appends"
mk_unmount
