#!/usr/bin/env bash
# bench/ab.sh — two daemons side by side on the append rows of issues 7 and
# 11 (bench/README.md, "ab.sh"): a change measured against the daemon it
# changes, in the same run, rounds interleaved.
#
# Usage: bash bench/ab.sh DAEMON_A DAEMON_B [ROUNDS]
#   DAEMON_A, DAEMON_B  minikafkafs binaries (e.g. main's, copied aside
#                       before the change, and build/minikafkafs)
#   ROUNDS              rounds (default 4)
#
# Each round writes, with bench/bwrite in 128 KiB write() calls, `sync`
# before each measurement, the two daemons in alternating order:
#   plain   a plain file (once per round, the baseline of the ratios)
#   store   nullfs's /store (bench/nullfs: the same writes kept with one
#           pwrite each in a plain file, nothing else done), once per
#           round after the plain file, when BUILD_DIR has bench/nullfs
#   app1g   BENCH_BYTES into partition 0 of a topic with 1 GiB segments
#   app1m   the same with the default 1 MiB segments
#   t4      BENCH_TOPIC_BYTES into a 4-partition topic (1 GiB segments)
#   tsv16   as many keyed TSV rows (1000 keys) into 16 partitions
#   t4m, tsv16m  the same two with the default 1 MiB segments, as
#           bench/run.sh measures issue 7's aims (ratios against app1m)
# Every topic is deleted after its row. Per round it prints MB/s; at the
# end, per daemon, the ratios of each round (app1g/plain, app1g/store,
# app1m/store, app1m/app1g,
# t4/app1g, tsv16/app1g, t4m/app1m, tsv16m/app1m; a ratio whose base row
# is not in AB_ROWS says so) and their range, and the daemon's CPU time
# (user and system, from /proc) per GiB written, median over the rounds.
#
# Environment: BENCH_BYTES (default 256M), BENCH_TOPIC_BYTES (default
# 128M), AB_ROWS (default "app1g app1m t4 tsv16"), BUILD_DIR, BENCH_TMPDIR
# (parent of the scratch directory, default BUILD_DIR/bench),
# BENCH_TIMEOUT (seconds per measurement, default 120).
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$REPO/build}
BW=$BUILD/bench/bwrite
NULLFS=$BUILD/bench/nullfs
BYTES=${BENCH_BYTES:-256M}
TBYTES=${BENCH_TOPIC_BYTES:-128M}
ROWS=${AB_ROWS:-"app1g app1m t4 tsv16"}
STEP_TIMEOUT=${BENCH_TIMEOUT:-120}

die() { echo "ab.sh: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: ab.sh DAEMON_A DAEMON_B [ROUNDS]"
A=$1 B=$2 ROUNDS=${3:-4}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
for f in "$A" "$B" "$BW"; do
    [ -x "$f" ] || die "$f: not an executable"
done
for row in $ROWS; do
    case $row in
        app1g | app1m | t4 | tsv16 | t4m | tsv16m) ;;
        *) die "unknown row '$row'" ;;
    esac
done

parent=${BENCH_TMPDIR:-$BUILD/bench}
mkdir -p "$parent" || die "cannot create $parent"
TMP=$(mktemp -d "$parent/ab.XXXXXX") || die "mktemp in $parent failed"
PIDS=()      # the daemons A and B
NULL_PID=''  # nullfs

# shellcheck disable=SC2317  # called through the trap
cleanup() {
    local x p
    for x in a b n; do
        [ -d "$TMP/m$x" ] || continue
        timeout 30 fusermount3 -u "$TMP/m$x" 2>/dev/null ||
            fusermount3 -u -z "$TMP/m$x" 2>/dev/null
    done
    for p in "${PIDS[@]}" $NULL_PID; do
        timeout 30 tail --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf --one-file-system "$TMP"
}
trap cleanup EXIT
trap 'echo "ab.sh: interrupted" >&2; exit 130' INT TERM HUP

for x in a b; do
    mkdir -p "$TMP/d$x" "$TMP/m$x"
done
"$A" -f "$TMP/da" "$TMP/ma" >"$TMP/a.log" 2>&1 &
PIDS+=($!)
"$B" -f "$TMP/db" "$TMP/mb" >"$TMP/b.log" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do
    mountpoint -q "$TMP/ma" && mountpoint -q "$TMP/mb" && break
    sleep 0.1
done
if ! mountpoint -q "$TMP/ma" || ! mountpoint -q "$TMP/mb"; then
    die "a daemon did not mount: $(cat "$TMP/a.log" "$TMP/b.log")"
fi
# nullfs /store: the ceiling of a FUSE daemon that keeps its bytes.
if [ -x "$NULLFS" ]; then
    mkdir -p "$TMP/mn"
    "$NULLFS" -f -o "store=$TMP/store.dat" "$TMP/mn" >"$TMP/n.log" 2>&1 &
    NULL_PID=$!
    for ((i = 0; i < 100; i++)); do
        mountpoint -q "$TMP/mn" && break
        sleep 0.1
    done
    mountpoint -q "$TMP/mn" || echo "ab.sh: nullfs did not mount; no store rows: $(cat "$TMP/n.log")" >&2
fi

# mbps CMD... : run one bwrite, print its MB/s (nothing when it failed).
mbps() {
    timeout -k 5 "$STEP_TIMEOUT" "$@" 2>>"$TMP/err" | sed -n 's/.*mbps=\([0-9.]*\).*/\1/p'
}

# cpu_ms PID : the daemon's user and system CPU so far, in ms (all its
# threads; /proc's clock ticks, 10 ms on most kernels).
TICK=$(getconf CLK_TCK)
cpu_ms() {
    sed 's/.*) //' "/proc/$1/stat" 2>/dev/null |
        awk -v t="$TICK" '{ printf "%d %d\n", $12 * 1000 / t, $13 * 1000 / t }'
}

# measure MOUNT ROW ROUND DAEMON : one row on one daemon (a or b); prints
# MB/s and leaves the daemon's CPU during the write in $TMP/cpu.DAEMON.ROW.ROUND.
measure() {
    local m=$1 row=$2 name=$2$3 seg=' segment.bytes=1073741824' pid u0 s0 u1 s1
    pid=${PIDS[0]}
    [ "$4" = b ] && pid=${PIDS[1]}
    case $row in
        app1m | t4m | tsv16m) seg='' ;;
    esac
    case $row in
        app1g | app1m) echo "create-topic $name$seg" >"$m/ctl" ;;
        t4 | t4m) echo "create-topic $name partitions=4$seg" >"$m/ctl" ;;
        tsv16 | tsv16m) echo "create-topic $name partitions=16$seg" >"$m/ctl" ;;
    esac || return 0
    sync
    read -r u0 s0 < <(cpu_ms "$pid")
    case $row in
        app1g | app1m) mbps "$BW" write "$m/topics/$name/0/append" "$BYTES" 128K ;;
        t4 | t4m) mbps "$BW" write "$m/topics/$name/append" "$TBYTES" 128K ;;
        tsv16 | tsv16m) mbps "$BW" write -k 1000 "$m/topics/$name/append:tsv" "$TBYTES" 128K ;;
    esac
    read -r u1 s1 < <(cpu_ms "$pid")
    [ -n "$u0" ] && [ -n "$u1" ] && echo "$((u1 - u0)) $((s1 - s0))" >"$TMP/cpu.$4.$row.$3"
    echo "delete-topic $name" >"$m/ctl"
}

declare -A FIG   # FIG[daemon,row,round]
echo "ab.sh — $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs; A=$A B=$B"
echo "MB/s per round, A/B (A first in odd rounds, B first in even ones)"
for ((r = 1; r <= ROUNDS; r++)); do
    sync
    FIG[p,plain,$r]=$(mbps "$BW" write -c "$TMP/plain.dat" "$BYTES" 128K)
    rm -f "$TMP/plain.dat"
    line="round $r: plain ${FIG[p,plain,$r]:-n/a}"
    if mountpoint -q "$TMP/mn" 2>/dev/null; then
        sync
        FIG[p,store,$r]=$(mbps "$BW" write -c "$TMP/mn/store" "$BYTES" 128K)
        : >"$TMP/store.dat"
        line+="  store ${FIG[p,store,$r]:-n/a}"
    fi
    for row in $ROWS; do
        if ((r % 2)); then
            FIG[a,$row,$r]=$(measure "$TMP/ma" "$row" "$r" a)
            FIG[b,$row,$r]=$(measure "$TMP/mb" "$row" "$r" b)
        else
            FIG[b,$row,$r]=$(measure "$TMP/mb" "$row" "$r" b)
            FIG[a,$row,$r]=$(measure "$TMP/ma" "$row" "$r" a)
        fi
        line+="  $row ${FIG[a,$row,$r]:-n/a}/${FIG[b,$row,$r]:-n/a}"
    done
    echo "$line"
done

# ratio NUM DEN : NUM/DEN to two places, or nothing.
ratio() {
    [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'
}
# Ratios of the same daemon and round; a range over the rounds.
report() { # LABEL NUMROW DENROW
    local x r v all out
    for x in a b; do
        all=()
        for ((r = 1; r <= ROUNDS; r++)); do
            if [ "$3" = plain ] || [ "$3" = store ]; then
                v=$(ratio "${FIG[$x,$2,$r]:-}" "${FIG[p,$3,$r]:-}")
            else
                v=$(ratio "${FIG[$x,$2,$r]:-}" "${FIG[$x,$3,$r]:-}")
            fi
            [ -n "$v" ] && all+=("$v")
        done
        out=$(printf '%s\n' "${all[@]}" | sort -n | awk 'NF { v[n++] = $1 }
            END { if (n) printf "%s-%s (median %s)", v[0], v[n - 1], v[int(n / 2)] }')
        printf '  %-13s %s: %s   [%s]\n' "$1" "${x^^}" "${out:-n/a}" "${all[*]}"
    done
}
has() { case " $ROWS " in *" $1 "*) return 0 ;; esac; return 1; }
echo "same-round ratios, per daemon: low-high (median) [each round]"
has app1g && report app1g/plain app1g plain
if [ -n "${FIG[p,store,1]:-}" ]; then
    has app1g && report app1g/store app1g store
    has app1m && report app1m/store app1m store
fi
# ratios BASE ROW... : each ROW over BASE, or a line saying BASE is missing.
ratios() {
    local row base=$1
    shift
    for row in "$@"; do
        if ! has "$row"; then
            continue
        elif has "$base"; then
            report "$row/$base" "$row" "$base"
        else
            printf '  %-13s n/a (%s is not in AB_ROWS)\n' "$row/$base" "$base"
        fi
    done
}
ratios app1g app1m t4 tsv16
ratios app1m t4m tsv16m
# The daemon's CPU per GiB written, per row: median user and system ms
# over the rounds (CPU time hardly depends on what else runs beside, so
# these move less than MB/s on a shared machine).
echo "daemon CPU per GiB written: median user / system ms [low-high user]"
for row in $ROWS; do
    case $row in
        app1g | app1m) size=$BYTES ;;
        *) size=$TBYTES ;;
    esac
    bytes=$(numfmt --from=iec "$size" 2>/dev/null) || continue
    for x in a b; do
        out=$(cat "$TMP"/cpu."$x"."$row".* 2>/dev/null |
            awk -v f="$bytes" 'BEGIN { n = 0 }
                NF == 2 { u[n] = $1 * 1073741824 / f; s[n] = $2 * 1073741824 / f; n++ }
                function med(v, n,   i, j, t) {
                    for (i = 1; i < n; i++)
                        for (j = i; j > 0 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
                    return v[int(n / 2)]
                }
                END { if (n) { m = med(u, n); lo = u[0]; hi = u[n - 1]; printf "%d / %d [%d-%d]", m, med(s, n), lo, hi } }')
        printf '  %-13s %s: %s\n' "$row" "${x^^}" "${out:-n/a}"
    done
done
if [ -s "$TMP/err" ]; then
    echo "errors:"
    sed 's/^/  /' "$TMP/err" | sort | uniq -c | head -n 10
fi
