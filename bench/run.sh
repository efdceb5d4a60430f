#!/usr/bin/env bash
# bench/run.sh — MiniKafka FS benchmarks against the baselines of the same run.
# See bench/README.md. Usage: bash bench/run.sh   (after: ninja -C build)
#
# Environment (all optional):
#   BUILD_DIR          build directory (default: REPO/build)
#   MKFS_BIN           the daemon (default: REPO/build/minikafkafs); when
#                      missing, only the baselines run and daemon rows are n/a
#   BENCH_BYTES        bytes to append and fetch (default 256M; K/M/G accepted)
#   BENCH_TOPIC_BYTES  bytes per topic-level append row (default 64M)
#   BENCH_CHUNK        write() size for throughput rows (default 128K)
#   BENCH_READ_BUF     read() buffer for fetch rows (default 128K)
#   BENCH_OPS          single-record write() calls (default 20000)
#   BENCH_REPEAT       runs per figure, the best one counts (default 3)
#   BENCH_KEYS         distinct keys in the keyed rows (default 1000)
#   BENCH_INI          minikafka.ini copied into the daemon's DATA_DIR
#                      (default: none, the daemon's built-in defaults)
#   BENCH_TMPDIR       parent of the scratch directory (default BUILD_DIR/bench)
#   BENCH_TIMEOUT      seconds one step may take (default 120)
#   BENCH_DEADLINE     seconds the whole run may take (default 900); steps
#                      left when it passes are n/a
#   BENCH_KEEP=1       keep the scratch directory (data dir, logs)
#   BENCH_COMP_BYTES   bytes per compressed-topic row (default BENCH_TOPIC_BYTES)
#   BENCH_COMP=0       leave out the compressed-topic rows (bench/comp_rows.sh)
#   BENCH_WARM=0       no scratch write before each measured write (warm())
# The X_WHY variables are read indirectly, through why().
# shellcheck disable=SC2034
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$REPO/build}
MKFS_BIN=${MKFS_BIN:-$REPO/build/minikafkafs}
NULLFS=$BUILD/bench/nullfs
BW=$BUILD/bench/bwrite
BYTES=${BENCH_BYTES:-256M}
TOPIC_BYTES=${BENCH_TOPIC_BYTES:-64M}
CHUNK=${BENCH_CHUNK:-128K}
READ_BUF=${BENCH_READ_BUF:-128K}
OPS=${BENCH_OPS:-20000}
NKEYS=${BENCH_KEYS:-1000}
REPEAT=${BENCH_REPEAT:-3}
STEP_TIMEOUT=${BENCH_TIMEOUT:-120}
DEADLINE=$((SECONDS + ${BENCH_DEADLINE:-900}))

die() { echo "run.sh: $*" >&2; exit 1; }

for f in "$NULLFS" "$BW"; do
    [ -x "$f" ] || die "$f not built: meson setup build && ninja -C build"
done
command -v fusermount3 >/dev/null || die "fusermount3 not found"

# "256M" -> bytes, rounded down to whole 100-byte records as bwrite does.
records_bytes() {
    local v=${1%[kKmMgG]} shift=0
    case $1 in
        *[kK]) shift=10 ;; *[mM]) shift=20 ;; *[gG]) shift=30 ;;
    esac
    [[ $v =~ ^[0-9]+$ ]] || die "bad size '$1'"
    v=$((v << shift))
    echo $((v - v % 100))
}
BYTES_N=$(records_bytes "$BYTES") || exit 1
TOPIC_BYTES_N=$(records_bytes "$TOPIC_BYTES") || exit 1
CHUNK_N=$(records_bytes "$CHUNK") || exit 1
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer"
if [ "$BYTES_N" -eq 0 ] || [ "$TOPIC_BYTES_N" -eq 0 ] || [ "$CHUNK_N" -eq 0 ]; then
    die "BENCH_BYTES, BENCH_TOPIC_BYTES and BENCH_CHUNK must hold a 100-byte record"
fi

parent=${BENCH_TMPDIR:-$BUILD/bench}
mkdir -p "$parent" || die "cannot create $parent"
TMP=$(mktemp -d "$parent/run.XXXXXX") || die "mktemp in $parent failed"
NMNT=$TMP/nullfs   # nullfs mountpoint
MMNT=$TMP/mkfs     # minikafkafs mountpoint

# ---- mounts, always undone -------------------------------------------------
UNMOUNT_KILLED=0
MOUNTS=()   # mountpoints we mounted
PIDS=()     # their daemons' pids, same order

unmount_one() { # index into MOUNTS/PIDS
    local mnt=${MOUNTS[$1]} pid=${PIDS[$1]} i
    [ -n "$mnt" ] || return 0
    # Not guarded by mountpoint(1): a mount whose daemon died fails stat()
    # with ENOTCONN, yet must be unmounted. Unmounting nothing just fails.
    timeout 30 fusermount3 -u "$mnt" 2>/dev/null ||
        fusermount3 -u -z "$mnt" 2>/dev/null
    # A graceful unmount flushes and fsyncs; give it a bounded while.
    for ((i = 0; i < 300; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "run.sh: pid $pid did not exit after unmount; killing it" >&2
        UNMOUNT_KILLED=1
        kill -TERM "$pid" 2>/dev/null
        sleep 2
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    MOUNTS[$1]=
}

# shellcheck disable=SC2317  # called through the trap
cleanup() {
    local i
    for i in "${!MOUNTS[@]}"; do
        unmount_one "$i"
    done
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "scratch directory kept: $TMP"
    else
        rm -rf --one-file-system "$TMP"
    fi
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT TERM HUP

# mount_fs NAME MOUNTPOINT CMD... : start CMD in the background and wait
# until MOUNTPOINT is mounted. Sets MOUNT_IDX. Fails if it never mounts.
mount_fs() {
    local name=$1 mnt=$2 i
    shift 2
    mkdir -p "$mnt"
    "$@" >"$TMP/$name.log" 2>&1 &
    local pid=$!
    MOUNTS+=("$mnt")
    PIDS+=("$pid")
    MOUNT_IDX=$((${#MOUNTS[@]} - 1))
    for ((i = 0; i < 100; i++)); do
        mountpoint -q "$mnt" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "run.sh: $name did not mount on $mnt; its log:" >&2
    sed 's/^/    /' "$TMP/$name.log" >&2
    unmount_one "$MOUNT_IDX"
    return 1
}

# ---- steps, each bounded ---------------------------------------------------
step_timeout() {
    local left=$((DEADLINE - SECONDS))
    [ "$left" -gt 0 ] || return 1
    [ "$left" -lt "$STEP_TIMEOUT" ] && echo "$left" || echo "$STEP_TIMEOUT"
}

# bounded CMD... : run CMD under the step timeout; on failure ERR says why.
bounded() {
    local t rc
    if ! t=$(step_timeout); then
        ERR="out of time (BENCH_DEADLINE)"
        return 1
    fi
    timeout -k 5 "$t" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    case $rc in
        0) return 0 ;;
        124 | 137) ERR="timed out after ${t}s" ;;
        *) ERR=$(head -n 1 "$TMP/err") ; ERR=${ERR:-"exit status $rc"} ;;
    esac
    ERR=${ERR//"$MMNT"/}   # "open /topics/T/append: ..." reads better
    ERR=${ERR//"$NMNT"/nullfs}
    return 1
}

# bw ARGS... : one bwrite run; its result line in RES, or ERR and failure.
bw() {
    RES=
    bounded "$BW" "$@" || return 1
    RES=$(cat "$TMP/out")
}

# field KEY LINE : the value of KEY=VALUE in a bwrite result line.
field() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p"; }

# ratio A B [DIGITS] : A/B to DIGITS places (2), or n/a.
ratio() { awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { if (b > 0) printf "%.*f", d, a / b; else print "n/a" }'; }

# passes_row LABEL NAME CMD...: run CMD (bounded), which prints first_ms,
# last_ms, ratio and segments, as one row; NAME says what failed.
passes_row() {
    local label=$1 name=$2 out
    shift 2
    if bounded "$@"; then
        out=$(cat "$TMP/out")
        printf '%-18s %8s ms     first %7s ms     ratio %s (aim 1, flat; %s segments left)\n' \
            "$label" "$(field last_ms "$out")" "$(field first_ms "$out")" \
            "$(field ratio "$out")" "$(field segments "$out")"
    else
        echo "  $name: $ERR"
    fi
}

# row LABEL VALUE UNIT BASE_LABEL BASE_VALUE [AIM] : one line of the table.
# An empty VALUE prints n/a with the reason in NA_WHY.
row() {
    local label=$1 value=$2 unit=$3 blabel=$4 bvalue=$5 aim=${6:-} r tail
    if [ -z "$value" ]; then
        tail="(${NA_WHY:-skipped})"
    elif [ -z "$bvalue" ]; then
        tail="ratio n/a"
    else
        r=$(ratio "$value" "$bvalue")
        tail="ratio $r"
        if [ -n "$aim" ]; then
            if awk -v r="$r" -v a="$aim" 'BEGIN { exit !(r >= a) }'; then
                tail+="  (aim >= $aim: met)"
            else
                tail+="  (aim >= $aim: MISSED)"
            fi
        fi
    fi
    printf '%-15s %19s  %-12s %19s  %s\n' "$label" "${value:-n/a} $unit" \
        "$blabel" "${bvalue:-n/a} $unit" "$tail"
}

# paired LABEL NUM DEN [AIM [CMP [DIGITS]]] : NUM's figure over DEN's of
# the same round (ROUND_MBPS[NUM,r] / ROUND_MBPS[DEN,r]), per round, their
# median and range, against AIM (CMP ge: ratio >= AIM, the default; le:
# ratio <= AIM; no AIM: no verdict), to DIGITS places (2).
# The host's speed drifts over a run (bench/README.md, "Issue 7 point 2
# after the runway"); a round's two figures are a minute apart at most,
# the best of each may be further.
paired() {
    local label=$1 num=$2 den=$3 aim=${4:-} cmp=${5:-ge} digits=${6:-2}
    local r a t q list='' med lo hi verdict tail=''
    for ((r = 1; r <= REPEAT; r++)); do
        a=${ROUND_MBPS[$den,$r]:-} t=${ROUND_MBPS[$num,$r]:-}
        if [ -z "$a" ] || [ -z "$t" ]; then continue; fi
        # n/a (no base figure) is left out, not sorted in as a zero
        q=$(ratio "$t" "$a" "$digits")
        [ "$q" = n/a ] || list+="$q "
    done
    [ -n "$list" ] || return 0
    read -r med lo hi < <(tr ' ' '\n' <<<"$list" | sed '/^$/d' | sort -n |
        awk -v d="$digits" '{ v[NR] = $1 } END { if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%.*f %s %s\n", d, m, v[1], v[NR] }')
    if [ -n "$aim" ]; then
        if [ "$cmp" = le ]; then
            awk -v r="$med" -v a="$aim" 'BEGIN { exit !(r <= a) }' && verdict=met || verdict=MISSED
            tail="  (aim <= $aim: $verdict)"
        else
            awk -v r="$med" -v a="$aim" 'BEGIN { exit !(r >= a) }' && verdict=met || verdict=MISSED
            tail="  (aim >= $aim: $verdict)"
        fi
    fi
    printf '%-15s paired by round: median %s (%s-%s) [%s]%s\n' "$label" \
        "$med" "$lo" "$hi" "${list% }" "$tail"
}

# raw_line LABEL KEY... : each KEY's figure of every round (ROUND_MBPS), the
# raw figures behind the paired ratios.
raw_line() {
    local label=$1 key r out='' v
    shift
    for key in "$@"; do
        v=''
        for ((r = 1; r <= REPEAT; r++)); do
            v+="${v:+/}${ROUND_MBPS[$key,$r]:-n/a}"
        done
        out+="  $key $v"
    done
    printf '%-15s by round:%s\n' "$label" "$out"
}

# paired_line KEY AIM : the topic row KEY over the partition append of the
# same round (paired above).
paired_line() { paired "" "$1" APPEND "$2"; }

WARNINGS=()
warn() { WARNINGS+=("$*"); }

# measure VAR FIELD ARGS... : run bwrite ARGS; VAR becomes the larger of
# itself and FIELD of the result (mbps or opsps). A failure leaves VAR as it
# is with the reason in VAR_WHY, and is a warning when an earlier run worked.
measure() {
    local var=$1 key=$2 v
    shift 2
    # Each measurement starts with no dirty page cache: what earlier rows
    # left (a 1 GiB-segment log is fsynced only at its unmount, rf3 logs
    # by their flushers) would otherwise be written back by the kernel,
    # on the same two CPUs, during whichever row comes 30 s later.
    sync
    warm "$@"
    if bw "$@"; then
        v=$(field "$key" "$RES")
        if [ -z "${!var}" ] ||
           awk -v a="$v" -v b="${!var}" 'BEGIN { exit !(a > b) }'; then
            printf -v "$var" '%s' "$v"
        fi
        return 0
    fi
    printf -v "${var}_WHY" '%s' "$ERR"
    [ -n "${!var}" ] && warn "$var: run $ROUND failed: $ERR"
    return 1
}

# warm BWRITE_ARGS... : before a write of BYTES, write a scratch file of
# 1.25 times as many bytes (3.5 times into the three brokers of the rf3
# daemon) and delete it, outside the clock, so that the measured write finds
# that much memory freed a moment before. On this VM a page the kernel has
# not used lately costs the first write into it about 12 us (the host
# backs it then): a plain file written into such pages runs at 330-370
# MB/s against 2700-4300 into pages freed just before ("Issue 25" in
# bench/README.md). The plain and nullfs-store baselines empty their files
# before writing, so they always found warm pages, and the daemon's logs,
# which keep theirs, found cold ones once a round's writes had used up what
# earlier steps had freed. BENCH_WARM=0 leaves it out.
warm() {
    local bytes f=1.25
    [ "${BENCH_WARM:-1}" != 0 ] && [ "$1" = write ] || return 0
    shift
    while [ "${1:-}" = -c ] || [ "${1:-}" = -k ]; do
        [ "$1" = -k ] && shift
        shift
    done
    [[ $1 == "$RMNT"/* ]] && f=3.5
    bytes=$(awk -v b="$2" -v f="$f" 'BEGIN { printf "%d", b * f }')
    bounded "$BW" write -c "$TMP/warm.dat" "$bytes" 1M
    rm -f "$TMP/warm.dat"
}

# worth VAR : whether to measure VAR in this round. A figure that failed in
# the first round (a feature not there yet) is not tried again.
worth() { [ "$ROUND" -eq 1 ] || [ -n "${!1}" ]; }

why() { local v="${1}_WHY"; NA_WHY=${!v:-}; }

# The cat rows (issue 11, point 4): cat_round and cat_table.
# shellcheck source=bench/cat_rows.sh
. "$REPO/bench/cat_rows.sh"
# The compressed-topic rows (issue 25, point 7): comp_round and comp_table.
# shellcheck source=bench/comp_rows.sh
. "$REPO/bench/comp_rows.sh"

echo "MiniKafka FS benchmarks — $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs"
fstype=$(findmnt -n -o FSTYPE -T "$TMP" 2>/dev/null) || fstype=$(stat -f -c %T "$TMP")
echo "scratch: $TMP ($fstype); every file of the run lives there"
echo "records: 100 bytes (99 chars + newline); $BYTES_N bytes per append;" \
     "writes of $CHUNK_N bytes ($((CHUNK_N / 100)) records); reads of $READ_BUF"
echo "every figure is the best of $REPEAT runs; baselines and daemon interleaved"
echo "plain-file writes are not fsynced: page cache to page cache; sync before every bwrite measurement"
echo

PLAIN_W='' PLAIN_R='' PLAIN_OPS='' NULL_W='' NULL_R='' NULL_OPS='' NULL_REQ='' NULL_STORE=''
APPEND='' FETCH='' SINGLE='' POLL='' APPEND_1G=''
R_SINGLE_ALL='' R_SINGLE_ONE='' R_APPEND_ONE='' R_APPEND_ALL=''
ISR_ALL='' ISR_ONE='' SHRINKS_ALL='' SHRINKS_ONE=''
TOPIC_ROWS=(plain1 plain4 plain16 keyed1 keyed4 keyed16)
# Each round's MB/s of the partition append and of the topic rows
# (ROUND_MBPS[ROW,r]): the topic rows' ratios paired by round.
declare -A ROUND_MBPS=()
for key in "${TOPIC_ROWS[@]}"; do
    printf -v "TOPIC_$key" '%s' ""
done

# ---- mounts --------------------------------------------------------------------
NULL_IDX=''
if mount_fs nullfs "$NMNT" "$NULLFS" -f -o "source_size=$BYTES_N" \
        -o "store=$TMP/store.dat" "$NMNT"; then
    NULL_IDX=$MOUNT_IDX
else
    NULL_W_WHY="nullfs did not mount"; NULL_R_WHY=$NULL_W_WHY; NULL_OPS_WHY=$NULL_W_WHY
    NULL_STORE_WHY=$NULL_W_WHY
fi

DAEMON_WHY="daemon not built: $MKFS_BIN"
DAEMON_IDX=''
if [ -x "$MKFS_BIN" ]; then
    DAEMON_WHY="daemon did not mount (log above)"
    mkdir -p "$TMP/data"
    if [ -n "${BENCH_INI:-}" ]; then
        cp "$BENCH_INI" "$TMP/data/minikafka.ini" || die "cannot copy $BENCH_INI"
    fi
    if mount_fs minikafkafs "$MMNT" "$MKFS_BIN" -f "$TMP/data" "$MMNT"; then
        DAEMON_WHY=''
        DAEMON_IDX=$MOUNT_IDX
    fi
fi

# A second daemon for the replication rows (issue 11): three brokers in
# auto mode, replication factor 3, min.insync.replicas 2.
RMNT=$TMP/repl
REPL_IDX='' REPL_WHY="daemon not built: $MKFS_BIN"
if [ -x "$MKFS_BIN" ]; then
    REPL_WHY="replicated daemon did not mount (log above)"
    mkdir -p "$TMP/rdata"
    printf '%s\n' '[cluster]' 'brokers = 1,2,3' 'default.replication.factor = 3' \
        'min.insync.replicas = 2' '[replication]' 'mode = auto' >"$TMP/rdata/minikafka.ini"
    if mount_fs replicated "$RMNT" "$MKFS_BIN" -f "$TMP/rdata" "$RMNT"; then
        REPL_WHY=''
        REPL_IDX=$MOUNT_IDX
    fi
fi

# ---- one round of every measurement ----------------------------------------------
baseline_round() {
    local plain=$TMP/plain.dat
    measure PLAIN_W mbps write -c "$plain" "$BYTES_N" "$CHUNK_N" &&
        ROUND_MBPS[PLAIN_W,$ROUND]=$(field mbps "$RES")
    measure PLAIN_R mbps read "$plain" "$READ_BUF"
    measure PLAIN_OPS opsps ops -c "$TMP/plain-ops.dat" "$OPS"
    rm -f "$plain" "$TMP/plain-ops.dat"
    [ -n "$NULL_IDX" ] || return 0
    measure NULL_W mbps write "$NMNT/sink" "$BYTES_N" "$CHUNK_N"
    # The same writes kept in a plain file by nullfs, nothing else done
    # (opened with O_TRUNC: the file is emptied first, and again after).
    measure NULL_STORE mbps write -c "$NMNT/store" "$BYTES_N" "$CHUNK_N" &&
        ROUND_MBPS[NULL_STORE,$ROUND]=$(field mbps "$RES")
    : >"$TMP/store.dat"
    measure NULL_R mbps read "$NMNT/source" "$READ_BUF" &&
        ROUND_MBPS[NULL_R,$ROUND]=$(field mbps "$RES")
    measure NULL_OPS opsps ops "$NMNT/sink" "$OPS" 4096
}

# disk_round PARTITION_DIR TOPIC APPENDED : what the partition takes for
# the APPENDED bytes of records, right after the append's close (issue 25
# point 7, aim: the logs at most 1.1 times the input). Per round in
# ROUND_MBPS: DISK_IN (the input), DISK_LOG (the logs' content: the sizes
# of the mount's segments/*.log, which stop at the last batch), DISK_LOGF
# (the .log files of the data directory: the segment being written, and
# any taken from the pool, is zeros up to its prefill past that), DISK_DIR
# (every file of the partition's directory: logs, indexes, checkpoints,
# the pool's prepared files) and DISK_ALLOC (its blocks, du -B1).
disk_round() {
    local part=$1 topic=$2 r=$ROUND dirs
    ROUND_MBPS[DISK_IN,$r]=$3
    # shellcheck disable=SC2016
    if bounded sh -c 'stat -c %s "$1"/segments/*.log' sh "$part"; then
        ROUND_MBPS[DISK_LOG,$r]=$(awk '{ s += $1 } END { print s + 0 }' "$TMP/out")
    else
        DISK_WHY="stat segments/*.log: $ERR"
    fi
    dirs=("$TMP"/data/broker-*/"$topic"-0)
    if [ ! -d "${dirs[0]}" ]; then
        DISK_WHY="no log directory $TMP/data/broker-*/$topic-0"
        return 0
    fi
    ROUND_MBPS[DISK_LOGF,$r]=$(find "${dirs[@]}" -maxdepth 1 -type f -name '*.log' -printf '%s\n' |
        awk '{ s += $1 } END { print s + 0 }')
    ROUND_MBPS[DISK_DIR,$r]=$(find "${dirs[@]}" -type f -printf '%s\n' |
        awk '{ s += $1 } END { print s + 0 }')
    ROUND_MBPS[DISK_ALLOC,$r]=$(du -s -B1 "${dirs[@]}" | awk '{ s += $1 } END { print s + 0 }')
}

# disk_table : the bytes of the first round, and each ratio to the input
# paired by round (three places: the aim is 1.1).
disk_table() {
    local v key label aim
    if [ -z "${ROUND_MBPS[DISK_IN,1]:-}" ]; then
        printf '%-15s n/a (%s)\n' "disk" "${DISK_WHY:-${APPEND_WHY:-no append}}"
        return 0
    fi
    printf '%-15s input %s B: .log content %s B, .log files %s B, partition dir %s B (allocated %s B)\n' \
        "disk (run 1)" "${ROUND_MBPS[DISK_IN,1]}" "${ROUND_MBPS[DISK_LOG,1]:-n/a}" \
        "${ROUND_MBPS[DISK_LOGF,1]:-n/a}" "${ROUND_MBPS[DISK_DIR,1]:-n/a}" "${ROUND_MBPS[DISK_ALLOC,1]:-n/a}"
    [ -n "${DISK_WHY:-}" ] && echo "  disk: $DISK_WHY"
    for v in "DISK_LOG:.log / input:1.1" "DISK_LOGF:.log files/in:" \
             "DISK_DIR:dir / input:" "DISK_ALLOC:dir alloc/in:"; do
        IFS=: read -r key label aim <<<"$v"
        paired "$label" "$key" DISK_IN "$aim" le 3
    done
}

# Fresh topics every round: NAME + round number.
daemon_round() {
    local T=$MMNT/topics r=$ROUND key kind p name appended fetched polled sum
    if worth APPEND; then
        if ! bounded mkdir "$T/bench$r"; then
            APPEND_WHY="mkdir /topics/bench$r: $ERR"; FETCH_WHY=$APPEND_WHY
        elif measure APPEND mbps write "$T/bench$r/0/append" "$BYTES_N" "$CHUNK_N"; then
            ROUND_MBPS[APPEND,$r]=$(field mbps "$RES")
            appended=$(field bytes "$RES")
            # Bytes on disk for the bytes appended (issue 25 point 7).
            disk_round "$T/bench$r/0" "bench$r" "$appended"
            if measure FETCH mbps read "$T/bench$r/0/records" "$READ_BUF"; then
                ROUND_MBPS[FETCH,$r]=$(field mbps "$RES")
                fetched=$(field bytes "$RES")
                [ "$fetched" = "$appended" ] ||
                    warn "fetch: read $fetched bytes from /topics/bench$r/0/records, appended $appended"
            fi
            # A group member polls the same partition to its end: one open
            # of poll:follow:max=N returns exactly the N records appended,
            # in polls of at most max.poll.records each.
            if ! bounded mkdir "$MMNT/groups/bench$r" ||
               ! bounded sh -c 'echo "m $1" > "$2"' sh "bench$r" "$MMNT/groups/bench$r/join"; then
                POLL_WHY="group bench$r: $ERR"
            elif measure POLL mbps read \
                "$MMNT/groups/bench$r/members/m/poll:follow:max=$((appended / 100))" "$READ_BUF"; then
                polled=$(field bytes "$RES")
                [ "$polled" = "$appended" ] ||
                    warn "poll: read $polled bytes from /groups/bench$r/members/m/poll, appended $appended"
            fi
            cat_round "$T/bench$r/0" "bench$r" "$appended"
        else
            FETCH_WHY="no append"; POLL_WHY="no append"
        fi
    fi
    # The same append into 1 GiB segments (no roll, no roll fsync).
    if worth APPEND_1G; then
        # shellcheck disable=SC2016
        if bounded sh -c 'echo "create-topic $1 segment.bytes=1073741824" > "$2"' \
                sh "seg$r" "$MMNT/ctl"; then
            measure APPEND_1G mbps write "$T/seg$r/0/append" "$BYTES_N" "$CHUNK_N" &&
                ROUND_MBPS[APPEND_1G,$r]=$(field mbps "$RES")
        else
            APPEND_1G_WHY="create-topic seg$r: $ERR"
        fi
    fi
    if worth SINGLE; then
        if bounded mkdir "$T/single$r"; then
            measure SINGLE opsps ops "$T/single$r/0/append" "$OPS"
        else
            SINGLE_WHY="mkdir /topics/single$r: $ERR"
        fi
    fi
    # Topic-level appends: keyless, and keyed through append:tsv.
    for key in "${TOPIC_ROWS[@]}"; do
        worth "TOPIC_$key" || continue
        kind=${key%%[0-9]*} p=${key#"$kind"} name=t${key}r$r
        # shellcheck disable=SC2016  # $1.. expand in the inner sh
        if ! bounded sh -c 'echo "create-topic $1 partitions=$2" > "$3"' \
                sh "$name" "$p" "$MMNT/ctl"; then
            printf -v "TOPIC_${key}_WHY" '%s' "create-topic: $ERR"
            continue
        fi
        if [ "$kind" = plain ]; then
            measure "TOPIC_$key" mbps write "$T/$name/append" \
                "$TOPIC_BYTES_N" "$CHUNK_N" || continue
        else
            measure "TOPIC_$key" mbps write -k "$NKEYS" "$T/$name/append:tsv" \
                "$TOPIC_BYTES_N" "$CHUNK_N" || continue
        fi
        ROUND_MBPS[$key,$r]=$(field mbps "$RES")
        # The partitions' log end offsets must add up to the records.
        # shellcheck disable=SC2016
        if bounded sh -c 'cat "$1"/*/leo' sh "$T/$name"; then
            sum=$(awk '{ s += $1 } END { print s + 0 }' "$TMP/out")
            [ "$sum" = $((TOPIC_BYTES_N / 100)) ] ||
                warn "$name: partitions' leo add up to $sum, $((TOPIC_BYTES_N / 100)) records written"
        else
            warn "$name: cannot read the partitions' leo: $ERR"
        fi
    done
}

# Replication factor 3 in auto mode: single-record loops with acks=all and
# acks=1, and sustained appends with each.
repl_round() {
    local T=$RMNT/topics r=$ROUND
    if ! bounded mkdir "$T/r$r"; then
        R_SINGLE_ALL_WHY="mkdir /topics/r$r: $ERR"
        return
    fi
    worth R_SINGLE_ONE && measure R_SINGLE_ONE opsps ops "$T/r$r/0/append:acks=1" "$OPS"
    worth R_SINGLE_ALL && measure R_SINGLE_ALL opsps ops "$T/r$r/0/append" "$OPS"
    # acks=all first: a burst of acks=1 can leave the followers more than
    # replica.lag.max.messages behind, out of the ISR for a while.
    local s0
    worth R_APPEND_ALL && s0=$(shrinks_of "$T/r$r/0") && measure R_APPEND_ALL mbps write "$T/r$r/0/append" "$TOPIC_BYTES_N" "$CHUNK_N" &&
        isr_after ISR_ALL "$T/r$r/0/isr" && shrinks_during SHRINKS_ALL "$T/r$r/0" "$s0"
    worth R_APPEND_ONE && s0=$(shrinks_of "$T/r$r/0") && measure R_APPEND_ONE mbps write "$T/r$r/0/append:acks=1" "$TOPIC_BYTES_N" "$CHUNK_N" &&
        isr_after ISR_ONE "$T/r$r/0/isr" && shrinks_during SHRINKS_ONE "$T/r$r/0" "$s0"
}

# The partition's isr_shrinks (replicas that left its ISR since the mount;
# "?" when unreadable or not read within the step timeout: a hung daemon
# must not hang the run).
shrinks_of() {
    local n='?'
    if bounded cat "$1/isr_shrinks"; then
        n=$(<"$TMP/out")
        [[ $n =~ ^[0-9]+$ ]] || n='?'
    fi
    echo "$n"
}

# shrinks_during VAR PARTITION_DIR BEFORE: how many replicas left the ISR
# during the burst (at any moment, not only at its end), appended to the
# variable named VAR as isr_after does.
shrinks_during() {
    local now n
    now=$(shrinks_of "$2")
    if [[ $now =~ ^[0-9]+$ && $3 =~ ^[0-9]+$ ]]; then n=$((now - $3)); else n='?'; fi
    printf -v "$1" '%s' "${!1:+${!1}/}$n"
}

# Issue 11 point 2 asks that sustained appends keep the ISR full: the
# members of the ISR read right after a burst's close, one entry per round
# ("3" full, "2" one follower dropped), appended to the variable named $1.
isr_after() {
    local n
    if bounded cat "$2"; then
        n=$(wc -w <"$TMP/out")
    else
        n='?'
    fi
    printf -v "$1" '%s' "${!1:+${!1}/}$n"
}

for ((ROUND = 1; ROUND <= REPEAT; ROUND++)); do
    baseline_round
    [ -n "$DAEMON_IDX" ] && daemon_round
    [ "${BENCH_COMP:-1}" != 0 ] && comp_round
    [ -n "$REPL_IDX" ] && repl_round
done
[ -n "$REPL_IDX" ] && unmount_one "$REPL_IDX"

# ---- unmount ---------------------------------------------------------------------
if [ -n "$NULL_IDX" ]; then
    # The largest requests the kernel sends (max_write, max_pages).
    if bounded dd if="$NMNT/source" of=/dev/null bs=4M count=1 &&
       bw write "$NMNT/sink" 4M 4M && bounded cat "$NMNT/stats"; then
        NULL_REQ="write $(sed -n 's/^max_write_request //p' "$TMP/out"),"
        NULL_REQ+=" read $(sed -n 's/^max_read_request //p' "$TMP/out") bytes"
    fi
    unmount_one "$NULL_IDX"
fi
UNMOUNT_SECS=''
if [ -n "$DAEMON_IDX" ]; then
    if ! kill -0 "${PIDS[$DAEMON_IDX]}" 2>/dev/null; then
        warn "minikafkafs exited during the run (the end of its log is on stderr)"
        echo "run.sh: minikafkafs exited during the run; the end of its log:" >&2
        tail -n 20 "$TMP/minikafkafs.log" | sed 's/^/    /' >&2
    fi
    t0=$SECONDS UNMOUNT_KILLED=0
    unmount_one "$DAEMON_IDX"
    UNMOUNT_SECS=$((SECONDS - t0))
else
    APPEND_WHY=$DAEMON_WHY; FETCH_WHY=$DAEMON_WHY; SINGLE_WHY=$DAEMON_WHY
    POLL_WHY=$DAEMON_WHY
fi

# ---- the table ---------------------------------------------------------------
echo "baselines (this run):"
printf '  plain file   write %s MB/s, read %s MB/s, %s single 100-byte writes/s\n' \
    "${PLAIN_W:-n/a}" "${PLAIN_R:-n/a}" "${PLAIN_OPS:-n/a}"
printf '  nullfs       /sink %s MB/s, /source %s MB/s, %s 4 KiB writes/s\n' \
    "${NULL_W:-n/a}" "${NULL_R:-n/a}" "${NULL_OPS:-n/a}"
[ -n "$NULL_REQ" ] && echo "  nullfs largest kernel requests: $NULL_REQ"
status=0
for v in PLAIN_W PLAIN_R PLAIN_OPS NULL_W NULL_R NULL_OPS; do
    w=${v}_WHY
    if [ -z "${!v}" ]; then
        echo "  $v failed: ${!w:-}"
        status=1
    fi
done
echo

why APPEND
row append "$APPEND" MB/s plain "$PLAIN_W" 0.5
row append "$APPEND" MB/s nullfs "$NULL_W"
why NULL_STORE
row nullfs-store "$NULL_STORE" MB/s plain "$PLAIN_W"
why APPEND
row append "$APPEND" MB/s nullfs-store "$NULL_STORE" 0.8
[ -n "$APPEND" ] && paired "" APPEND NULL_STORE 0.8
[ -n "$APPEND" ] && raw_line "" APPEND APPEND_1G NULL_STORE PLAIN_W
why FETCH
row fetch "$FETCH" MB/s nullfs "$NULL_R" 0.25
row fetch "$FETCH" MB/s plain "$PLAIN_R"
why POLL
row poll "$POLL" MB/s fetch "$FETCH" 0.8
cat_table
why FETCH
[ -n "$FETCH" ] && paired "fetch/nullfs" FETCH NULL_R
disk_table
why APPEND_1G
row "append 1MiB-seg" "$APPEND" MB/s "1GiB-seg" "$APPEND_1G" 0.8
[ -n "$APPEND_1G" ] && paired "" APPEND APPEND_1G 0.8
for v in R_SINGLE_ALL R_SINGLE_ONE R_APPEND_ONE R_APPEND_ALL; do
    w=${v}_WHY
    [ -n "$REPL_WHY" ] && printf -v "$w" '%s' "$REPL_WHY"
done
why R_SINGLE_ALL
row "single rf3 all" "$R_SINGLE_ALL" writes/s "rf3 acks=1" "$R_SINGLE_ONE" 0.3
why R_APPEND_ONE
row "append rf3 a=1" "$R_APPEND_ONE" MB/s "rf1 acks=1" "$APPEND" 0.6
why R_APPEND_ALL
row "append rf3 all" "$R_APPEND_ALL" MB/s "rf1 acks=1" "$APPEND" 0.5
echo "(rf3 rows: three brokers, mode = auto, min.insync.replicas = 2; appends of $TOPIC_BYTES_N bytes)"
[ -n "$ISR_ALL$ISR_ONE" ] &&
    echo "(ISR members right after each burst, per run, of 3: acks=all ${ISR_ALL:-n/a}, acks=1 ${ISR_ONE:-n/a}; replicas that left the ISR during each burst: acks=all ${SHRINKS_ALL:-n/a}, acks=1 ${SHRINKS_ONE:-n/a})"
why SINGLE
row single "$SINGLE" writes/s "nullfs-4K" "$NULL_OPS" 0.5
row single "$SINGLE" writes/s "plain-100B" "$PLAIN_OPS"
for key in "${TOPIC_ROWS[@]}"; do
    kind=${key%%[0-9]*} p=${key#"$kind"}
    if [ "$kind" = plain ]; then label="topic p=$p"; else label="topic:tsv p=$p"; fi
    why "TOPIC_$key"
    [ -n "$DAEMON_WHY" ] && NA_WHY=$DAEMON_WHY
    v=TOPIC_$key
    # Issue 7's aims: keyless over 4 partitions, keyed over 16.
    aim=''
    [ "$key" = plain4 ] && aim=0.8
    [ "$key" = keyed16 ] && aim=0.6
    row "$label" "${!v}" MB/s partition "$APPEND" $aim
    [ -n "$aim" ] && paired_line "$key" "$aim"
done
echo "(topic rows: $TOPIC_BYTES_N bytes each; :tsv rows write KEY<TAB>VALUE lines with $NKEYS keys)"
[ "${BENCH_COMP:-1}" != 0 ] && comp_table
# The producer path without FUSE, and the page cache's share of the topic
# rows (bench/bproduce.c): the floor puts the partition append's time per
# write plus only the extra page-cache time of writing each write's bytes
# into 4 or 16 files instead of one.
BPRODUCE=$BUILD/bench/bproduce
if [ -x "$BPRODUCE" ]; then
    if bounded "$BPRODUCE" "$TMP/bproduce" "$TOPIC_BYTES_N" "$CHUNK_N" "$REPEAT"; then
        sed 's/^/  /' "$TMP/out"
        pc1=$(awk '$1 == "pagecache-1" { print $2 }' "$TMP/out")
        pc4=$(awk '$1 == "pagecache-4" { print $2 }' "$TMP/out")
        pc16=$(awk '$1 == "pagecache-16" { print $2 }' "$TMP/out")
        if [ -n "$APPEND" ] && [ -n "$pc1" ] && [ -n "$pc4" ] && [ -n "$pc16" ]; then
            # (n/a where a figure is 0 or the page cache alone outweighs
            # the append: awk would stop at a division by zero)
            awk -v c="$CHUNK_N" -v m="$APPEND" -v p1="$pc1" -v p4="$pc4" -v p16="$pc16" '
                function fl(u, pn) { return u - p1 + pn > 0 ? sprintf("%.2f", u / (u - p1 + pn)) : "n/a" }
                BEGIN {
                if (m <= 0) { print "  page-cache floor of the filesystem rows: n/a (no partition append rate)"; exit }
                u = c / m
                printf "  page-cache floor of the filesystem rows: topic p=4 %s, topic:tsv p=16 %s (partition append %.1f us per write)\n",
                    fl(u, p4), fl(u, p16), u }'
        fi
    else
        echo "  bproduce: $ERR"
    fi
    rm -rf --one-file-system "$TMP/bproduce"
fi
# Compaction: MB of closed segments cleaned per second against a plain copy
# (read, write, fsync) of the same segment files in the same run (aim 0.3).
BCOMPACT=$BUILD/bench/bcompact
if [ -x "$BCOMPACT" ]; then
    best=""
    for ((r = 0; r < REPEAT; r++)); do
        bounded "$BCOMPACT" "$TMP/compact" 128M "$NKEYS" || { echo "  bcompact: $ERR"; break; }
        out=$(cat "$TMP/out")
        c=$(field ratio "$out")
        if [ -z "$best" ] || awk -v a="$c" -v b="$(field ratio "$best")" 'BEGIN { exit !(a > b) }'; then
            best=$out
        fi
    done
    if [ -n "$best" ]; then
        printf '%-18s %8s MB/s   copy %8s MB/s   ratio %s (aim 0.3)\n' "compaction" \
            "$(field compact_mbps "$best")" "$(field copy_mbps "$best")" "$(field ratio "$best")"
    fi
    # The cost of a pass across 100 passes (issue 23 point 4): the median
    # of the last quartile over that of the first (aim: flat, about 1).
    passes_row "compact x100" "bcompact passes" "$BCOMPACT" "$TMP/compact" passes 100
fi
# The same through a mount: /ctl compact across 100 passes of keyed
# appends (bench/ctl_compact.sh, its own mount).
if [ -x "$MKFS_BIN" ]; then
    passes_row "ctl compact x100" "ctl_compact.sh" bash "$REPO/bench/ctl_compact.sh" 100
fi
# Scale and no stall (issue 11): bench/scale.sh, its own mounts and rows.
# BENCH_SCALE=0 leaves it out.
if [ "${BENCH_SCALE:-1}" != 0 ] && [ -x "$MKFS_BIN" ]; then
    echo
    if ! STEP_TIMEOUT=$((STEP_TIMEOUT * 3)) bounded bash "$REPO/bench/scale.sh"; then
        echo "scale rows: $ERR"
    fi
    cat "$TMP/out"
fi
for w in "${WARNINGS[@]}"; do
    echo "WARNING: $w"
done
if [ -n "$UNMOUNT_SECS" ]; then
    if [ "$UNMOUNT_KILLED" = 1 ]; then
        echo "daemon unmount: it did not exit within 30s of fusermount3 -u and was killed"
    else
        echo "daemon unmount (flush and fsync): ${UNMOUNT_SECS}s"
    fi
fi
exit $status
