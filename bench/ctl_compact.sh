#!/usr/bin/env bash
# bench/ctl_compact.sh — `/ctl compact` through a mount across many passes
# (issue 23 point 4): a compacted topic on small segments (segment.bytes
# 4096) takes 200 keyed appends over 20 keys, then one timed
# `echo compact > ctl`, PASSES times (default 100). A pass must cost what
# its dirty bytes cost, not more with every pass before it: the row is the
# median pass time of the last quartile over that of the first (aim: flat,
# about 1), with the closed segments left at the end (aim: about live
# bytes / segment.bytes + 1, not one per pass).
# Usage: bash bench/ctl_compact.sh [PASSES]   (after: ninja -C build)
#
# Environment: BUILD_DIR, MKFS_BIN, BENCH_TMPDIR, BENCH_KEEP as run.sh.
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$REPO/build}
MKFS_BIN=${MKFS_BIN:-$BUILD/minikafkafs}
PASSES=${1:-100}

die() { echo "ctl_compact.sh: $*" >&2; exit 1; }
[ -x "$MKFS_BIN" ] || die "$MKFS_BIN not built"
parent=${BENCH_TMPDIR:-$BUILD/bench}
mkdir -p "$parent" || die "cannot create $parent"
TMP=$(mktemp -d "$parent/ctlcompact.XXXXXX") || die "mktemp failed"
MNT=$TMP/mnt
mkdir -p "$MNT" "$TMP/data"
PID=''
cleanup() {
	if [ -n "$PID" ]; then
		fusermount3 -u "$MNT" 2>/dev/null
		wait "$PID" 2>/dev/null
	fi
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

printf '[cluster]\nbrokers = 1\nclock = manual\n' >"$TMP/data/minikafka.ini"
"$MKFS_BIN" -f "$TMP/data" "$MNT" >"$TMP/daemon.log" 2>&1 &
PID=$!
for ((i = 0; i < 500; i++)); do
	[ -e "$MNT/README" ] && break
	kill -0 "$PID" 2>/dev/null || die "the daemon exited: $(tail -3 "$TMP/daemon.log")"
	sleep 0.02
done
[ -e "$MNT/README" ] || die "no mount"
echo "create-topic c cleanup.policy=compact segment.bytes=4096" >"$MNT/ctl" ||
	die "create-topic"

# One process does every pass: appends through :key= files, then times
# the compact command (a write of "compact" to /ctl, which returns when
# the pass has swapped its segments in).
python3 - "$MNT" "$PASSES" <<'PY'
import os, statistics, sys, time
mnt, passes = sys.argv[1], int(sys.argv[2])
times = []
for p in range(passes):
    for i in range(200):
        with open("%s/topics/c/0/append:key=k%02d:acks=1" % (mnt, i % 20), "w") as f:
            f.write("p%03d-%03d-%s\n" % (p, i, "x" * 40))
    t = time.perf_counter()
    with open(mnt + "/ctl", "w") as f:
        f.write("compact\n")
    times.append((time.perf_counter() - t) * 1e3)
q = max(1, passes // 4)
first, last = statistics.median(times[:q]), statistics.median(times[-q:])
segs = len([n for n in os.listdir(mnt + "/topics/c/0/segments") if n.endswith(".log")])
print("first_ms=%.2f last_ms=%.2f ratio=%.2f segments=%d passes=%d"
      % (first, last, last / first, segs, passes))
PY
