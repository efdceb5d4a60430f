# bench/comp_rows.sh — the compressed-topic rows of bench/run.sh (sourced
# by it; see bench/README.md, "The rows"; issue 25 point 7). Uses run.sh's
# TMP, MMNT, BW, ROUND, CHUNK_N, TOPIC_BYTES_N, DAEMON_IDX, DAEMON_WHY,
# ROUND_MBPS, bounded, measure, field, worth, why, row, paired, warn, and
# cat_measure from bench/cat_rows.sh.
#
# Per round and codec (gzip, zstd):
#   daemon  a topic made with `create-topic cCODECr compression.type=CODEC`;
#           BENCH_COMP_BYTES (default BENCH_TOPIC_BYTES) of 100-byte
#           records in 128 KiB writes into its partition 0 (every write one
#           batch, compressed by the daemon with the codec's default level:
#           gzip 6, zstd 3, core/storage/compress.c); the bytes of its logs
#           (the mount's segments/*.log), so input / logs is the daemon's
#           compression ratio; every batch must name the codec in `batches`
#           (a batch the codec would not make smaller is kept uncompressed);
#           then `cat records > /dev/null`, the first read of the view, so a
#           stream: every batch is read, decompressed and formatted.
#   tools   the same bytes in a plain file (bwrite write -c, the same calls),
#           and for level 1 and the daemon's level: `gzip -L -c FILE >
#           /dev/null` (zstd: `zstd -L -T1 -q -c`, one thread as the
#           daemon's writer), its output's size (input / size), `gzip -dc`
#           of that output to /dev/null, and the size of one write's bytes
#           (CHUNK) compressed alone: what one batch can get. bwrite writes
#           the same 1310 records in every call, so a codec whose window
#           holds a whole write (zstd: 1 MiB and more) finds each write of
#           the file a copy of the one before, which no batch can: the
#           one-write ratio is the codec's ratio for a batch.
# Rates are MB of input (records) per second on every side.
# shellcheck shell=bash disable=SC2034,SC2004

COMP_CODECS=(gzip zstd)
declare -A COMP_LEVEL=([gzip]=6 [zstd]=3)   # the daemon's defaults
COMP_BYTES_N=$TOPIC_BYTES_N
if [ -n "${BENCH_COMP_BYTES:-}" ]; then
    COMP_BYTES_N=$(records_bytes "$BENCH_COMP_BYTES") || exit 1
fi
for codec in "${COMP_CODECS[@]}"; do
    for kind in A C; do
        printf -v "COMP_${kind}_$codec" '%s' ""
    done
    for lvl in 1 "${COMP_LEVEL[$codec]}"; do
        printf -v "COMP_T_$codec$lvl" '%s' ""
        printf -v "COMP_D_$codec$lvl" '%s' ""
    done
done

# tool_secs OUT CMD... : CMD > OUT under the step timeout; the wall time in
# TOOL_SECS, or ERR and failure.
tool_secs() {
    local out=$1 t t0 t1 rc
    shift
    if ! t=$(step_timeout); then
        ERR="out of time (BENCH_DEADLINE)"
        return 1
    fi
    t0=$EPOCHREALTIME
    timeout -k 5 "$t" "$@" >"$out" 2>"$TMP/err"
    rc=$?
    t1=$EPOCHREALTIME
    case $rc in
        0) ;;
        124 | 137) ERR="timed out after ${t}s"; return 1 ;;
        *) ERR=$(head -n 1 "$TMP/err"); ERR=${ERR:-"exit status $rc"}; return 1 ;;
    esac
    TOOL_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
}

# keep_rate VAR BYTES : VAR becomes the larger of itself and BYTES /
# TOOL_SECS in MB/s; this round's figure in ROUND_MBPS[VAR,ROUND].
keep_rate() {
    local v
    v=$(awk -v n="$2" -v s="$TOOL_SECS" 'BEGIN { if (s > 0) printf "%.1f", n / s / 1e6; else print 0 }')
    ROUND_MBPS[$1,$ROUND]=$v
    if [ -z "${!1}" ] || awk -v a="$v" -v b="${!1}" 'BEGIN { exit !(a > b) }'; then
        printf -v "$1" '%s' "$v"
    fi
}

# comp_daemon CODEC : the daemon's rows for CODEC in this round.
comp_daemon() {
    local codec=$1 r=$ROUND name=c$1$ROUND T=$MMNT/topics appended n
    if [ -z "$DAEMON_IDX" ]; then
        printf -v "COMP_A_${codec}_WHY" '%s' "$DAEMON_WHY"
        return 0
    fi
    worth "COMP_A_$codec" || return 0
    # shellcheck disable=SC2016  # $1.. expand in the inner sh
    if ! bounded sh -c 'echo "create-topic $1 compression.type=$2" > "$3"' \
            sh "$name" "$codec" "$MMNT/ctl"; then
        printf -v "COMP_A_${codec}_WHY" '%s' "create-topic $name compression.type=$codec: $ERR"
        return 0
    fi
    measure "COMP_A_$codec" mbps write "$T/$name/0/append" "$COMP_BYTES_N" "$CHUNK_N" || return 0
    ROUND_MBPS[COMP_A_$codec,$r]=$(field mbps "$RES")
    appended=$(field bytes "$RES")
    # shellcheck disable=SC2016
    if bounded sh -c 'stat -c %s "$1"/segments/*.log' sh "$T/$name/0"; then
        n=$(awk '{ s += $1 } END { print s + 0 }' "$TMP/out")
        ROUND_MBPS[COMP_LOG_$codec,$r]=$n
        ROUND_MBPS[COMP_R_$codec,$r]=$(ratio "$appended" "$n" 3)
    else
        warn "$name: cannot stat its segments: $ERR"
    fi
    if bounded cat "$T/$name/0/batches"; then
        n=$(awk -v c="$codec" '$NF != c' "$TMP/out" | wc -l)
        [ "$n" = 0 ] || warn "$name: $n batches not in $codec"
    else
        warn "$name: cannot read its batches: $ERR"
    fi
    # The first read of the view: a stream, every batch decompressed.
    cat_measure "COMP_C_$codec" "$T/$name/0/records" "$appended" || return 0
    # shellcheck disable=SC2016
    if bounded sh -c 'wc -c < "$1"' sh "$T/$name/0/records"; then
        n=$(tr -d ' ' <"$TMP/out")
        [ "$n" = "$appended" ] || warn "$name: records reads $n bytes, appended $appended"
    fi
}

# comp_tool CODEC LEVEL IN ONE : the tool's rows (rates, sizes).
comp_tool() {
    local codec=$1 lvl=$2 in=$3 one=$4 key=$1$2 out=$TMP/comp-out n
    local -a enc dec
    if ! command -v "$codec" >/dev/null; then
        printf -v "COMP_T_${key}_WHY" '%s' "$codec not installed (apt-get install -y $codec)"
        return 0
    fi
    worth "COMP_T_$key" || return 0
    case $codec in
        gzip) enc=(gzip "-$lvl" -c) dec=(gzip -dc) ;;
        zstd) enc=(zstd "-$lvl" -T1 -q -c) dec=(zstd -dcq) ;;
    esac
    if ! tool_secs /dev/null "${enc[@]}" "$in"; then
        printf -v "COMP_T_${key}_WHY" '%s' "$ERR"
        return 0
    fi
    keep_rate "COMP_T_$key" "$COMP_BYTES_N"
    # Its output (untimed), for the size and the decompression.
    tool_secs "$out" "${enc[@]}" "$in" || return 0
    n=$(stat -c %s "$out")
    ROUND_MBPS[COMP_R_$key,$ROUND]=$(ratio "$COMP_BYTES_N" "$n" 3)
    if tool_secs /dev/null "${dec[@]}" "$out"; then
        keep_rate "COMP_D_$key" "$COMP_BYTES_N"
    else
        printf -v "COMP_D_${key}_WHY" '%s' "$ERR"
    fi
    if tool_secs "$out" "${enc[@]}" "$one"; then
        n=$(stat -c %s "$out")
        ROUND_MBPS[COMP_R1_$key,$ROUND]=$(ratio "$CHUNK_N" "$n" 3)
    fi
    rm -f "$out"
}

# comp_round : one round of the compressed-topic rows.
comp_round() {
    local in=$TMP/comp-in.dat one=$TMP/comp-one.dat codec lvl
    ROUND_MBPS[ONE,$ROUND]=1
    # The input of the tools: the very bytes the appends write.
    sync
    if ! bounded "$BW" write -c "$in" "$COMP_BYTES_N" "$CHUNK_N"; then
        COMP_WHY="bwrite of the tools' input: $ERR"
        rm -f "$in"
        return 0
    fi
    head -c "$CHUNK_N" "$in" >"$one"
    cat "$in" >/dev/null   # in the page cache, as the daemon's input is
    for codec in "${COMP_CODECS[@]}"; do
        comp_daemon "$codec"
        for lvl in 1 "${COMP_LEVEL[$codec]}"; do
            comp_tool "$codec" "$lvl" "$in" "$one"
        done
    done
    rm -f "$in" "$one"
}

comp_table() {
    local codec lvl key v b
    [ -n "${COMP_WHY:-}" ] && echo "compressed topics: $COMP_WHY"
    for codec in "${COMP_CODECS[@]}"; do
        why "COMP_A_$codec"
        [ -n "$DAEMON_WHY" ] && NA_WHY=$DAEMON_WHY
        v=COMP_A_$codec
        row "append $codec" "${!v}" MB/s "append" "$APPEND"
        [ -n "${!v}" ] && paired "" "COMP_A_$codec" APPEND
        for lvl in 1 "${COMP_LEVEL[$codec]}"; do
            key=$codec$lvl b=COMP_T_$key
            why "COMP_A_$codec"
            row "append $codec" "${!v}" MB/s "$codec -$lvl" "${!b}"
            [ -n "${!v}" ] && paired "" "COMP_A_$codec" "COMP_T_$key"
        done
        why "COMP_C_$codec"
        [ -n "$DAEMON_WHY" ] && NA_WHY=$DAEMON_WHY
        v=COMP_C_$codec
        row "cat $codec" "${!v}" MB/s "cat stream" "$CAT_S"
        [ -n "${!v}" ] && paired "" "COMP_C_$codec" CAT_S
        for lvl in 1 "${COMP_LEVEL[$codec]}"; do
            key=$codec$lvl b=COMP_D_$key
            why "COMP_C_$codec"
            row "cat $codec" "${!v}" MB/s "$codec -d(-$lvl)" "${!b}"
            [ -n "${!v}" ] && paired "" "COMP_C_$codec" "COMP_D_$key"
        done
        raw_line "" "COMP_A_$codec" "COMP_T_${codec}1" "COMP_T_$codec${COMP_LEVEL[$codec]}" \
            "COMP_C_$codec" "COMP_D_${codec}1" "COMP_D_$codec${COMP_LEVEL[$codec]}"
        # Compression ratios (input / output), each paired by round.
        paired "size $codec" "COMP_R_$codec" ONE "" ge 3
        for lvl in 1 "${COMP_LEVEL[$codec]}"; do
            paired "  $codec -$lvl file" "COMP_R_$codec$lvl" ONE "" ge 3
            paired "  $codec -$lvl write" "COMP_R1_$codec$lvl" ONE "" ge 3
        done
    done
    echo "(compressed topics: $COMP_BYTES_N bytes each in writes of $CHUNK_N; the daemon's levels:" \
         "gzip ${COMP_LEVEL[gzip]}, zstd ${COMP_LEVEL[zstd]}; size: input / output bytes," \
         "the daemon's logs, the tool's output of the file, and of one write alone;" \
         "cat: the first read of records, a stream; gzip -d, zstd -d: the tool's decompression of its output of the file)"
}
