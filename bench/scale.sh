#!/usr/bin/env bash
# bench/scale.sh — the scale and no-stall rows of issue 11 (bench/README.md).
# Usage: bash bench/scale.sh   (after: ninja -C build; run.sh calls it too)
#
#   1000p RF3        under `ulimit -n 1024`, three brokers, mode = auto: a
#                    cluster holding one topic of 1,000 partitions at
#                    replication factor 3 is mounted, written (three
#                    partitions) and read, and unmounted; the sum of the
#                    three against the aim of 1 s. Also: descriptors and
#                    threads held, the daemon's peak RSS (aim < 64 MiB).
#   mount 1GiB       mount time of a data directory holding BENCH_SCALE_BYTES
#                    (default 1G) of closed segments against an empty one's,
#                    the median of BENCH_SCALE_MOUNTS (default 9) mounts each,
#                    interleaved; aim: at most 1.5 times.
#   no stall         while the broker holding those bytes is crashed and
#                    restarted (three times), another partition's hw is read
#                    in a loop: the slowest read against the aim of 50 ms,
#                    beside the slowest over as long with no restart.
#
# Environment: BUILD_DIR, MKFS_BIN, BENCH_TMPDIR, BENCH_KEEP as run.sh.
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$REPO/build}
MKFS_BIN=${MKFS_BIN:-$BUILD/minikafkafs}
BW=$BUILD/bench/bwrite
BYTES=${BENCH_SCALE_BYTES:-1G}
MOUNTS_N=${BENCH_SCALE_MOUNTS:-9}

die() { echo "scale.sh: $*" >&2; exit 1; }
[ -x "$MKFS_BIN" ] || die "$MKFS_BIN not built"
[ -x "$BW" ] || die "$BW not built"
command -v python3 >/dev/null || die "python3 not found (the hw reader)"

parent=${BENCH_TMPDIR:-$BUILD/bench}
mkdir -p "$parent" || die "cannot create $parent"
TMP=$(mktemp -d "$parent/scale.XXXXXX") || die "mktemp failed"
MNT=$TMP/mnt
mkdir -p "$MNT"
PID=''

unmount_left() {
    if [ -n "$PID" ]; then
        fusermount3 -u "$MNT" 2>/dev/null
        wait "$PID" 2>/dev/null
        PID=''
    fi
}
cleanup() {
    unmount_left
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

now() { date +%s%N; }
ms() { echo $((($2 - $1) / 1000000)); }   # ms between two now's

# mnt DATA: start the daemon on DATA, wait for the mount (at most 60 s).
mnt() {
    "$MKFS_BIN" -f "$1" "$MNT" >>"$TMP/daemon.log" 2>&1 &
    PID=$!
    local i
    for ((i = 0; i < 30000; i++)); do
        grep -q " $MNT " /proc/mounts && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.002
    done
    die "the daemon did not mount $1 (see $TMP/daemon.log)"
}
umnt() {
    fusermount3 -u "$MNT" || die "fusermount3 -u failed"
    wait "$PID"
    PID=''
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "scale rows — $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs, scratch $TMP"

# ---- 1,000 partitions at replication factor 3 ------------------------------
(
    trap unmount_left EXIT
    ulimit -n 1024 || die "cannot lower the descriptor limit"
    D=$TMP/p1000
    mkdir -p "$D"
    printf '%s\n' '[cluster]' 'brokers = 1,2,3' 'default.replication.factor = 3' \
        'min.insync.replicas = 2' '[replication]' 'mode = auto' >"$D/minikafka.ini"
    mnt "$D"
    t0=$(now)
    echo "create-topic big partitions=1000" >"$MNT/ctl" || die "create-topic failed"
    t1=$(now)
    umnt
    t2=$(now)
    create=$(ms "$t0" "$t1") cunmount=$(ms "$t1" "$t2")
    t0=$(now)
    mnt "$D"
    t1=$(now)
    for p in 0 333 999; do
        echo "v$p" >"$MNT/topics/big/$p/append" || die "append to $p failed"
    done
    for p in 0 333 999; do
        [ "$(cat "$MNT/topics/big/$p/records")" = "v$p" ] || die "partition $p reads wrong"
    done
    t2=$(now)
    nfd=$(ls "/proc/$PID/fd" | wc -l)
    nthr=$(ls "/proc/$PID/task" | wc -l)
    hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$PID/status")
    umnt
    t3=$(now)
    m=$(ms "$t0" "$t1") w=$(ms "$t1" "$t2") u=$(ms "$t2" "$t3")
    total=$((m + w + u))
    verdict=MISSED
    [ "$total" -lt 1000 ] && verdict=met
    printf '%-15s mount %d ms + work %d ms + unmount %d ms = %d ms  (aim < 1000 ms: %s)\n' \
        "1000p RF3" "$m" "$w" "$u" "$total" "$verdict"
    verdict=MISSED
    [ "$hwm" -lt 65536 ] && verdict=met
    printf '%-15s %d descriptors (limit 1024), %d threads, peak RSS %d KiB  (aim < 65536 KiB: %s)\n' \
        "" "$nfd" "$nthr" "$hwm" "$verdict"
    printf '%-15s (create-topic partitions=1000: %d ms; the unmount after it: %d ms; no aim)\n' \
        "" "$create" "$cunmount"
)

# ---- 1 GiB of closed segments: mount time and no stall ---------------------
E=$TMP/empty D=$TMP/big
mkdir -p "$E" "$D"
for d in "$E" "$D"; do
    printf '%s\n' '[cluster]' 'brokers = 1,2' 'default.replication.factor = 1' >"$d/minikafka.ini"
done
mnt "$D"
echo "create-topic big partitions=2" >"$MNT/ctl"     # big-1 on broker 2
echo "create-topic small partitions=1" >"$MNT/ctl"   # small-0 on broker 1
echo x >"$MNT/topics/small/0/append"
"$BW" write "$MNT/topics/big/1/append:acks=1" "$BYTES" 128K >/dev/null || die "filling big-1 failed"
nseg=$(ls "$D/broker-2/big-1" | grep -c '\.log$')
umnt
me=() mb=()
for ((i = 0; i < MOUNTS_N; i++)); do
    t0=$(now); mnt "$E"; t1=$(now); umnt
    me+=($(( (t1 - t0) / 1000 )))
    t0=$(now); mnt "$D"; t1=$(now); umnt
    mb+=($(( (t1 - t0) / 1000 )))
done
e=$(printf '%s\n' "${me[@]}" | median) b=$(printf '%s\n' "${mb[@]}" | median)
r=$(awk -v b="$b" -v e="$e" 'BEGIN { printf "%.2f", b / e }')
verdict=MISSED
awk -v r="$r" 'BEGIN { exit !(r <= 1.5) }' && verdict=met
printf '%-15s %8.1f ms  %-10s %8.1f ms  ratio %s  (aim <= 1.5: %s; %d segments, median of %d)\n' \
    "mount $BYTES" "$(awk -v v="$b" 'BEGIN { print v / 1000 }')" "empty" \
    "$(awk -v v="$e" 'BEGIN { print v / 1000 }')" "$r" "$verdict" "$nseg" "$MOUNTS_N"

mnt "$D"
worst=0 base=0 restarts=()
# Each round: the slowest hw read while the broker restarts, and (the
# baseline) while nothing else happens, over the same time.
for i in 1 2 3 4 5 6; do
    restart=$((i % 2))
    [ "$restart" = 1 ] && { echo >"$MNT/brokers/2/crash" || die "crash failed"; }
    rm -f "$TMP/stop"
    python3 - "$MNT/topics/small/0/hw" "$TMP/stop" >"$TMP/lat" <<'EOF' &
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
worst, n = 0.0, 0
while not os.path.exists(stop):
    t = time.monotonic()
    with open(path) as f:
        f.read()
    worst = max(worst, (time.monotonic() - t) * 1000)
    n += 1
print("%.1f %d" % (worst, n))
EOF
    L=$!
    sleep 0.2
    t0=$(now)
    [ "$restart" = 1 ] && { echo >"$MNT/brokers/2/restart" || die "restart failed"; }
    t1=$(now)
    sleep 0.2
    touch "$TMP/stop"
    wait "$L"
    read -r w n <"$TMP/lat"
    if [ "$restart" = 1 ]; then
        restarts+=("$(ms "$t0" "$t1")")
        worst=$(awk -v a="$w" -v b="$worst" 'BEGIN { print (a > b) ? a : b }')
    else
        base=$(awk -v a="$w" -v b="$base" 'BEGIN { print (a > b) ? a : b }')
    fi
done
umnt
verdict=MISSED
awk -v w="$worst" 'BEGIN { exit !(w < 50) }' && verdict=met
printf '%-15s slowest hw read %s ms while broker 2 (%s) restarted in %s ms; %s ms with no restart  (aim < 50 ms: %s)\n' \
    "no stall" "$worst" "$BYTES" "$(IFS=/; echo "${restarts[*]}")" "$base" "$verdict"
