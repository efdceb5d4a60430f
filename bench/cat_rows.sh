# bench/cat_rows.sh — the `cat` rows of bench/run.sh (sourced by it; see
# bench/README.md, "cat rows"). Uses run.sh's TMP, MMNT, BUILD, ROUND,
# step_timeout, warn, worth, why and row.
#
# One reader, cat(1), reads a whole partition's records file (records,
# records:tsv, records:json) to /dev/null, and then a plain file holding
# exactly the bytes it read, on the same disk, in the same round:
#   warm  both were written and then read once before the timed read, so
#         both come from the page cache;
#   cold  both are dropped from the page cache just before their timed read
#         (bench/bevict: fdatasync and POSIX_FADV_DONTNEED on the plain file,
#         on the records file of the mount (paged records have pages of
#         their own) and on every file of the partition's log
#         directories), so both come from the disk. Only these files are
#         dropped; the rest of the machine's cache is left alone.
# The time runs from just before cat starts to just after it exits, so
# its start-up (about a millisecond) counts on both sides alike.
#
# And, first in each round, cat of the partition as a stream against cat
# of nullfs's /source of the same size (issue 25 point 7, aim 0.8):
#   stream  records@0 (the same bytes as records), a name nobody read, so
#           it is no paged view yet (docs/filesystem.md, paged records):
#           every byte cat gets is a batch the daemon read from its log,
#           checked and formatted in this read; cat reads 1 MiB at a time
#           (the stream files' st_blksize);
#   nullfs-cat  cat of nullfs /source (lines made in memory, nothing else
#           done), in cat's 128 KiB reads (nullfs reports no st_blksize).
# The warm row, a paged view served from the kernel's page cache, is set
# against nullfs-cat too.
# shellcheck shell=bash disable=SC2034,SC2004

CAT_FORMATS=(plain tsv json)
CAT_S='' CAT_NS=''
BEVICT=$BUILD/bench/bevict
for key in "${CAT_FORMATS[@]}"; do
    for kind in W WB C CB; do
        printf -v "CAT_${kind}_$key" '%s' ""
    done
done

# cat_secs FILE : cat FILE >/dev/null under the step timeout; the wall time
# in CAT_SECS, or ERR and failure.
cat_secs() {
    local t t0 t1 rc
    if ! t=$(step_timeout); then
        ERR="out of time (BENCH_DEADLINE)"
        return 1
    fi
    t0=$EPOCHREALTIME
    timeout -k 5 "$t" cat "$1" >/dev/null 2>"$TMP/err"
    rc=$?
    t1=$EPOCHREALTIME
    case $rc in
        0) ;;
        124 | 137) ERR="timed out after ${t}s"; return 1 ;;
        *) ERR=$(head -n 1 "$TMP/err"); ERR=${ERR//"$MMNT"/}
           ERR=${ERR:-"exit status $rc"}; return 1 ;;
    esac
    CAT_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
}

# cat_keep VAR BYTES : VAR becomes the larger of itself and BYTES/CAT_SECS.
cat_keep() {
    local v
    v=$(awk -v n="$2" -v s="$CAT_SECS" 'BEGIN { if (s > 0) printf "%.1f", n / s / 1e6; else print 0 }')
    CAT_LAST=$v
    if [ -z "${!1}" ] || awk -v a="$v" -v b="${!1}" 'BEGIN { exit !(a > b) }'; then
        printf -v "$1" '%s' "$v"
    fi
}

# cat_measure VAR FILE BYTES [EVICT...] : drop EVICT from the cache (if
# given), time cat FILE, keep the best figure in VAR and this one's in
# ROUND_MBPS[VAR,ROUND].
cat_measure() {
    local var=$1 file=$2 bytes=$3 out
    shift 3
    if [ $# -gt 0 ]; then
        if ! out=$("$BEVICT" "$@" 2>&1); then
            printf -v "${var}_WHY" '%s' "bevict: $out"
            return 1
        fi
        [[ $out == *" resident_pages=0" ]] ||
            warn "$var: pages left in the cache after bevict ($out)"
    fi
    if cat_secs "$file"; then
        cat_keep "$var" "$bytes"
        ROUND_MBPS[$var,$ROUND]=$CAT_LAST
        return 0
    fi
    printf -v "${var}_WHY" '%s' "$ERR"
    [ -n "${!var}" ] && warn "$var: run $ROUND failed: $ERR"
    return 1
}

# cat_round PARTITION_DIR TOPIC APPENDED : the cat rows for one partition
# (PARTITION_DIR in the mount, its topic's name, the bytes appended to it).
cat_round() {
    local part=$1 topic=$2 appended=$3 key name base size t logs=()
    # The stream first, then nullfs's read of as many bytes.
    worth CAT_S && cat_measure CAT_S "$part/records@0" "$appended"
    if [ -n "$NULL_IDX" ] && worth CAT_NS; then
        [ "$appended" = "$BYTES_N" ] ||
            warn "cat stream: appended $appended bytes, nullfs /source holds $BYTES_N"
        cat_measure CAT_NS "$NMNT/source" "$BYTES_N"
    fi
    for key in "${CAT_FORMATS[@]}"; do
        worth "CAT_W_$key" || continue
        name=records
        [ "$key" = plain ] || name=records:$key
        base=$TMP/cat-$key.txt
        # The baseline: the very bytes this cat reads, written to a file.
        if ! t=$(step_timeout) ||
           ! timeout -k 5 "$t" cat "$part/$name" >"$base" 2>"$TMP/err"; then
            printf -v "CAT_W_${key}_WHY" '%s' "cat $name: $(head -n 1 "$TMP/err")"
            rm -f "$base"
            continue
        fi
        size=$(stat -c %s "$base")
        if [ "$key" = plain ] && [ "$size" != "$appended" ]; then
            warn "cat: read $size bytes from /topics/$topic/0/records, appended $appended"
        fi
        # warm: the partition was written and read (the fetch row, or the
        # copy above); the baseline was written, now read once too. One
        # more untimed read of the view: the first read of a view to its
        # end learns its length, the next (paged) fills the page cache
        # (docs/filesystem.md, paged records), so that the timed read
        # comes from the page cache as the baseline's does.
        cat "$base" >/dev/null
        cat "$part/$name" >/dev/null 2>&1
        cat_measure "CAT_W_$key" "$part/$name" "$size"
        cat_measure "CAT_WB_$key" "$base" "$size"
        # cold: each file leaves the cache right before its read.
        logs=("$TMP"/data/broker-*/"$topic"-0)
        if [ -x "$BEVICT" ] && [ -d "${logs[0]}" ]; then
            # The records file itself too: once its length is known it
            # is paged, and its own pages must leave the cache as well.
            cat_measure "CAT_C_$key" "$part/$name" "$size" "$part/$name" "$base" "${logs[@]}"
            cat_measure "CAT_CB_$key" "$base" "$size" "$part/$name" "$base" "${logs[@]}"
        else
            printf -v "CAT_C_${key}_WHY" '%s' "no bevict or no log directory $TMP/data/broker-*/$topic-0"
        fi
        rm -f "$base"
    done
}

cat_table() {
    local key label
    why CAT_S
    [ -n "$DAEMON_WHY" ] && NA_WHY=$DAEMON_WHY
    row "cat stream" "$CAT_S" MB/s "nullfs-cat" "$CAT_NS" 0.8
    [ -n "$CAT_S" ] && paired "" CAT_S CAT_NS 0.8
    [ -n "$CAT_S" ] && raw_line "" CAT_S CAT_NS CAT_W_plain FETCH NULL_R
    why CAT_W_plain
    [ -n "$DAEMON_WHY" ] && NA_WHY=$DAEMON_WHY
    row "cat warm" "$CAT_W_plain" MB/s "nullfs-cat" "$CAT_NS" 0.8
    [ -n "$CAT_W_plain" ] && paired "" CAT_W_plain CAT_NS 0.8
    for key in "${CAT_FORMATS[@]}"; do
        label="cat"
        [ "$key" = plain ] || label=cat:$key
        why "CAT_W_$key"
        [ -n "$DAEMON_WHY" ] && NA_WHY=$DAEMON_WHY
        v=CAT_W_$key b=CAT_WB_$key
        if [ "$key" = plain ]; then
            row "$label warm" "${!v}" MB/s "plain-cat" "${!b}" 0.6
        else
            row "$label warm" "${!v}" MB/s "plain-cat" "${!b}"
        fi
    done
    for key in "${CAT_FORMATS[@]}"; do
        label="cat"
        [ "$key" = plain ] || label=cat:$key
        why "CAT_C_$key"
        [ -n "$DAEMON_WHY" ] && NA_WHY=$DAEMON_WHY
        v=CAT_C_$key b=CAT_CB_$key
        if [ "$key" = plain ]; then
            row "$label cold" "${!v}" MB/s "plain-cat" "${!b}" 0.6
        else
            row "$label cold" "${!v}" MB/s "plain-cat" "${!b}"
        fi
    done
    echo "(cat rows: cat(1) to /dev/null; plain-cat is cat of a file of the same bytes on the same disk;" \
         "warm: both from the page cache; cold: both dropped from it just before;" \
         "stream: records@0, read by no one before, decoded by the daemon in 1 MiB reads;" \
         "nullfs-cat: cat of nullfs /source, as many bytes, in 128 KiB reads)"
}
