#!/usr/bin/env bash
# views.sh — seeing inside every replica (issue 13; docs/filesystem.md 2, 5, 7).
#
#   1. /brokers/B/logs/T/P: a follower's own records, leo, hw view,
#      log_start_offset, leader_epoch, epochs, batches and segments; reading
#      it changes nothing; a divergent tail appears on the old leader after
#      a promotion and disappears at its truncation
#   2. batches[@POS]: one line per batch, matching the segment's bytes;
#      :json, :tsv, :max=N; :committed refused
#   3. N.index:txt decodes the offset index (offset, position), N.timeindex:txt
#      the time index (max timestamp so far, the batch that first reached it)
#   4. shell habits: head -n 1, tail -n 5, tail -f, ls -l sizes
#   5. clear words: the replication-factor hint, no /errors line for the
#      lookup before a mkdir, the old leader drawn "diverged" in state
. "$(dirname "$0")/lib.sh"

cmd() { printf '%s\n' "${2:-}" >"$1"; }
rd() { mk_read "$1"; }

mk_mount "[cluster]
brokers = 1,2,3
default.replication.factor = 3
clock = manual
[log]
segment.bytes = 600
index.interval.bytes = 150"

T=$MNT/topics/t/0
B2=$MNT/brokers/2/logs/t/0
B1=$MNT/brokers/1/logs/t/0
mk_mkdir "$MNT/topics/t" || bail "mkdir topics/t"

# ---- 5. no lookup error for the mkdir ---------------------------------------
assert_eq "" "$(rd "$MNT/errors" | grep ' /topics/t ' || true)" \
	"mkdir topics/t left no /errors line for its lookup"
ls "$MNT/topics/typo" >/dev/null 2>&1
assert_match " /topics/typo UNKNOWN_TOPIC_OR_PARTITION no topic 'typo' \(ls topics lists them; mkdir topics/typo creates it\)" \
	"$(rd "$MNT/errors")" "ls topics/typo is still an /errors line, saying what to do"
ls "$MNT/topics/t/7" >/dev/null 2>&1
assert_match "/topics/t/7 UNKNOWN_TOPIC_OR_PARTITION topic t has partitions 0 to 0, not '7'" \
	"$(rd "$MNT/errors" | tail -n 1)" "an unknown partition names the ones there are"
ls "$MNT/brokers/9" >/dev/null 2>&1
assert_match "no broker '9' \(brokers: 1 2 3; \[cluster\] brokers lists them\)" \
	"$(rd "$MNT/errors" | tail -n 1)" "an unknown broker names the brokers"

# ---- 1. a follower's own log ------------------------------------------------
assert_eq "0 t " "$(ls "$MNT/brokers/2/logs/t" | tr '\n' ' ')$(ls "$MNT/brokers/2/logs" | tr '\n' ' ')" \
	"ls brokers/2/logs and brokers/2/logs/t"
assert_eq "batches epochs hw leader_epoch leo log_start_offset records segments" \
	"$(ls "$B2" | tr '\n' ' ' | sed 's/ $//')" "ls brokers/2/logs/t/0"
for r in a b c; do
	mk_write "$T/append:acks=1" "$r"$'\n' || fail "append $r"
done
assert_eq "3" "$(rd "$T/leo")" "leader leo 3"
assert_eq "0 0 0" "$(rd "$B2/leo") $(rd "$B2/hw") $(rd "$B2/log_start_offset")" \
	"broker 2 has fetched nothing: leo 0, hw 0"
assert_eq "" "$(rd "$B2/records")" "broker 2's records are empty"
assert_eq "" "$(rd "$B2/epochs")" "broker 2's epoch cache is empty"
assert_eq "none" "$(rd "$B2/leader_epoch")" "broker 2 knows no epoch yet"
rd "$B2/batches" >/dev/null; rd "$B2/records@0:tsv" >/dev/null
assert_eq "0" "$(rd "$B2/leo")" "reading a follower does not make it fetch"
cmd "$MNT/brokers/fetch" || fail "fetch round 1"
assert_eq "3 0" "$(rd "$B2/leo") $(rd "$B2/hw")" \
	"after one fetch broker 2 has the records but still hw 0 (it learns the HW a fetch late)"
cmd "$MNT/brokers/fetch" || fail "fetch round 2"
assert_eq "3 3" "$(rd "$B2/leo") $(rd "$B2/hw")" "after a second fetch its hw is 3"
assert_eq "a b c" "$(rd "$B2/records" | tr '\n' ' ' | sed 's/ $//')" "broker 2's records"
assert_eq "b" "$(rd "$B2/records@1:max=1")" "records@1:max=1 on broker 2"
assert_match '^2	[0-9]+	\\N	c$' "$(rd "$B2/records@-1:tsv")" "records@-1:tsv on broker 2"
assert_match '"value":"a"' "$(rd "$B2/records:json:max=1")" "records:json on broker 2"
assert_eq "0 0" "$(rd "$B2/epochs")" "broker 2's epoch cache: epoch 0 from offset 0"
# :follow on a follower's log wakes at its fetch, not at the leader's append.
"$MK_PYTHON" -I "$MK_TMP/mkio.py" follow "$MNT/brokers/3/logs/t/0/records@latest:follow" \
	"$MK_TMP/f3.fd" >"$MK_TMP/f3.out" 2>/dev/null &
F3=$!
mk_wait_for 10 test -s "$MK_TMP/f3.fd" || fail "the follower of broker 3's log opened"
mk_wait_for 10 mk_blocked_in_read "$F3" "$(cat "$MK_TMP/f3.fd")" || fail "it blocks at broker 3's end"
mk_write "$T/append:acks=1" $'d0\n' || fail "append d0"
mk_wait_for 10 mk_blocked_in_read "$F3" "$(cat "$MK_TMP/f3.fd")" || fail "still blocked"
assert_eq "" "$(cat "$MK_TMP/f3.out")" "broker 3's log has not got d0 before it fetches"
cmd "$MNT/brokers/3/fetch" || fail "broker 3 fetches"
if mk_wait_for 10 grep -qx d0 "$MK_TMP/f3.out"; then
	pass "records@latest:follow on broker 3 returns d0 after its fetch"
else
	fail "records@latest:follow on broker 3 returns d0 after its fetch"
fi
kill "$F3" 2>/dev/null; wait "$F3" 2>/dev/null
cmd "$MNT/brokers/fetch" && cmd "$MNT/brokers/fetch" || fail "fetch: d0 everywhere"
assert_eq "0" "$(rd "$B2/leader_epoch")" "broker 2's newest epoch"
assert_eq "$(rd "$T/batches")" "$(rd "$B2/batches")" \
	"broker 2's batches are the leader's, byte for byte in the same places"
assert_eq "$(ls "$T/segments" | tr '\n' ' ')" "$(ls "$B2/segments" | tr '\n' ' ')" \
	"broker 2 has the leader's segment files"
seg=$(ls "$B2/segments" | grep '\.log$' | head -n 1)
assert_files_eq "$T/segments/$seg" "$B2/segments/$seg" "broker 2's first segment equals the leader's"
assert_files_eq "$DATA/broker-2/t-0/$seg" "$B2/segments/$seg" \
	"brokers/2/logs/t/0/segments is broker 2's own directory"

# ---- 2. batches ---------------------------------------------------------------
line=$(rd "$T/batches@1" | head -n 1)
read -r base last count bytes file pos epoch pid pepoch bseq txn control maxts crc codec <<<"$line"
assert_eq "1 1 1 00000000000000000000.log 0 -1 -1 -1 false false" \
	"$base $last $count $file $epoch $pid $pepoch $bseq $txn $control" "batches@1 starts with the batch holding offset 1"
frame=$MK_TMP/frame
dd if="$T/segments/$file" of="$frame" bs=1 skip="$pos" count="$bytes" status=none
assert_eq "2" "$(od -An -tu1 -j16 -N1 "$frame" | tr -d ' ')" "the batch at FILE POSITION has magic 2 at byte 16"
assert_eq "$crc" "$(od -An -tx1 -j17 -N4 "$frame" | tr -d ' \n')" "CRC is the batch's CRC-32C field"
assert_eq "$bytes" "$(( $(od -An -tu1 -j8 -N4 "$frame" | awk '{print ($1*16777216)+($2*65536)+($3*256)+$4}') + 12 ))" \
	"BYTES is batchLength plus the 12 bytes before it"
assert_eq "4" "$(rd "$T/batches" | wc -l)" "one line per batch (a b c d0)"
assert_eq "1" "$(rd "$T/batches:max=1" | wc -l)" "batches:max=1"
assert_eq "" "$(rd "$T/batches@latest")" "batches@latest is empty"
json=$(rd "$T/batches@2:json:max=1")
assert_eq "2 2 1 false $crc" "$("$MK_PYTHON" -c '
import json, sys
b = json.loads(sys.argv[1])
print(b["base_offset"], b["last_offset"], b["count"], str(b["control"]).lower(), sys.argv[2])' "$json" "$crc")" \
	"batches@2:json parses"
assert_match '^0	0	1	' "$(rd "$T/batches:tsv" | head -n 1)" "batches:tsv separates by TABs"
assert_fails_with EINVAL mk_read "$T/batches:committed"
assert_fails_with ERANGE mk_read "$T/batches@99"

# ---- 3. decoded indexes ----------------------------------------------------------
for r in d e f g h i j k; do
	mk_write "$T/append:acks=1" "record-$r"$'\n' || fail "append $r"
done
nsegs=$(ls "$T/segments" | grep -c '\.log$')
assert_true "the log rolled ($nsegs segments)" test "$nsegs" -ge 2
ok=1
for ix in $(ls "$T/segments" | grep '\.index$'); do
	base=$((10#${ix%.index}))
	txt=$(rd "$T/segments/$ix:txt")
	n=$(printf '%s\n' "$txt" | grep -c .)
	[ "$(( $(mk_size "$DATA/broker-1/t-0/$ix") / 8 ))" = "$n" ] || { ok=0; note "$ix: $n entries"; }
	[ "$(printf '%s\n' "$txt" | head -n 1)" = "$base 0" ] || { ok=0; note "$ix first: $txt"; }
	# Every entry names a batch start: BASE_OFFSET and POSITION of a batch line.
	while read -r off p; do
		rd "$T/batches" | awk -v o="$off" -v p="$p" -v f="${ix%.index}.log" \
			'$1 == o && $5 == f && $6 == p { found = 1 } END { exit !found }' ||
			{ ok=0; note "$ix: $off $p is not a batch start"; }
	done <<<"$txt"
done
assert_eq 1 "$ok" "every N.index:txt entry is OFFSET POSITION of a batch start, one per 8 raw bytes"
ok=1
for tx in $(ls "$T/segments" | grep '\.timeindex$'); do
	base=$((10#${tx%.timeindex}))
	txt=$(rd "$T/segments/$tx:txt")
	n=$(printf '%s\n' "$txt" | grep -c .)
	[ "$(( $(mk_size "$DATA/broker-1/t-0/$tx") / 12 ))" = "$n" ] || { ok=0; note "$tx: $n entries"; }
	[ "$(printf '%s\n' "$txt" | head -n 1 | cut -d' ' -f2)" = "$base" ] || { ok=0; note "$tx first: $txt"; }
	# Every entry is the segment's largest MAX_TIMESTAMP up to a batch,
	# and that batch is the first to reach it.
	while read -r ts off; do
		rd "$T/batches" | awk -v o="$off" -v ts="$ts" -v f="${tx%.timeindex}.log" \
			'$5 == f && $1 < o && (b == "" || $13 > b) { b = $13 }
			 $5 == f && $1 == o { found = 1; m = $13 }
			 END { exit !(found && m == ts && (b == "" || b < ts)) }' ||
			{ ok=0; note "$tx: $ts $off is not where the max timestamp was first reached"; }
	done <<<"$txt"
done
assert_eq 1 "$ok" "every N.timeindex:txt entry is TIMESTAMP OFFSET, the max so far first reached there, one per 12 raw bytes"
first_ix=$(ls "$T/segments" | grep '\.index$' | head -n 1)
assert_fails_with ENOENT mk_read "$T/segments/${first_ix%.index}.log:txt"
assert_fails_with ENOENT mk_read "$T/segments/${first_ix%.index}.txnindex:txt"
assert_eq "$(mk_size "$DATA/broker-1/t-0/$first_ix")" \
	"$(stat -c %s "$T/segments/$first_ix")" "the raw .index stays raw"
first_tx=${first_ix%.index}.timeindex
assert_files_eq "$DATA/broker-1/t-0/$first_tx" "$T/segments/$first_tx" "the raw .timeindex stays raw"
cmd "$MNT/brokers/fetch" || fail "fetch round 3"
cmd "$MNT/brokers/fetch" || fail "fetch round 4"
assert_eq "$(rd "$T/segments/$first_ix:txt")" "$(rd "$B2/segments/$first_ix:txt")" \
	"broker 2's index decodes as the leader's"
assert_eq "$(rd "$T/segments/$first_tx:txt")" "$(rd "$B2/segments/$first_tx:txt")" \
	"broker 2's time index decodes as the leader's"

# ---- 4. shell habits ---------------------------------------------------------------
out=$(head -n 1 "$T/records" 2>"$MK_TMP/err"); rc=$?
assert_eq "0 a " "$rc $out $(cat "$MK_TMP/err")" "head -n 1 records: no Illegal seek"
out=$(tail -n 2 "$T/records" 2>"$MK_TMP/err"); rc=$?
assert_eq "0 record-j record-k " "$rc $(echo $out) $(cat "$MK_TMP/err")" "tail -n 2 records"
out=$(tail -n 1 "$B2/batches" 2>"$MK_TMP/err"); rc=$?
assert_eq "0 $(rd "$T/batches" | tail -n 1)" "$rc $out" "tail -n 1 of a follower's batches"
assert_eq "3" "$(stat -c %s "$T/hw")" "ls -l shows a one-value file's size (hw '11\\n')"
assert_eq "$(rd "$MNT/README" | wc -c)" "$(stat -c %s "$MNT/README")" "README's size"
assert_eq "0" "$(stat -c %s "$T/records@3")" "records@3 has size 0 while nobody reads it (never read to its end)"
assert_eq "$(rd "$T/records" | wc -c)" "$(stat -c %s "$T/records")" \
	"records, read to its end while the partition did not change, has the length of its text (paged records)"
tail -f "$T/records" >"$MK_TMP/tailf" 2>"$MK_TMP/tailf.err" &
TAILF=$!
mk_wait_for 10 grep -qx record-k "$MK_TMP/tailf" || fail "tail -f printed the existing tail"
mk_write "$T/append:acks=1" $'followed\n' || fail "append followed"
cmd "$MNT/brokers/fetch" && cmd "$MNT/brokers/fetch" || fail "fetch: followed becomes visible"
if mk_wait_for 10 grep -qx followed "$MK_TMP/tailf"; then
	pass "tail -f records prints a new record"
else
	fail "tail -f records prints a new record"
fi
kill "$TAILF" 2>/dev/null; wait "$TAILF" 2>/dev/null
assert_eq "" "$(cat "$MK_TMP/tailf.err")" "tail -f said nothing on stderr (no 'file truncated')"

# ---- 1 + 5. a divergent tail, seen and then truncated ------------------------------
cmd "$MNT/brokers/fetch" || fail "fetch round 5"
cmd "$MNT/brokers/fetch" || fail "fetch round 6"
leo=$(rd "$T/leo")
mk_write "$T/append:acks=1" $'only-on-1\n' || fail "append only-on-1"
assert_eq "$((leo + 1)) $leo" "$(rd "$B1/leo") $(rd "$B2/leo")" "only-on-1 is on broker 1 alone"
cmd "$MNT/brokers/2/promote" "t/0" || fail "promote 2"
assert_eq "2 1" "$(rd "$T/leader") $(rd "$T/leader_epoch")" "broker 2 leads in epoch 1"
assert_eq "only-on-1" "$(rd "$B1/records" | tail -n 1)" \
	"broker 1's own records still end with its divergent record"
assert_eq "$((leo + 1))" "$(rd "$B1/leo")" "broker 1's leo still counts it"
assert_eq "0 0" "$(rd "$B1/epochs")" "broker 1 knows only epoch 0"
state=$(rd "$T/state")
assert_match "broker 1 +diverged .*x.* leo $((leo + 1)) \(agrees with the leader below $leo\)" "$state" \
	"state draws broker 1 as diverged, its tail in x"
assert_eq "" "$(printf '%s\n' "$state" | grep 'broker 1 .*in-sync' || true)" "state does not call broker 1 in-sync"
assert_eq "$((leo + 1))" "$(rd "$B1/leo")" "reading state did not truncate broker 1"
mk_write "$T/append:acks=1" $'new-leader\n' || fail "append new-leader"
assert_eq "0 0
1 $leo" "$(rd "$B2/epochs")" "broker 2's cache: epoch 1 starts where its first batch went"
cmd "$MNT/brokers/1/fetch" || fail "broker 1 fetches"
assert_eq "new-leader" "$(rd "$B1/records" | tail -n 1)" \
	"after its fetch broker 1's divergent record is gone, replaced by the new leader's"
assert_eq "" "$(rd "$B1/records" | grep only-on-1 || true)" "only-on-1 disappeared from broker 1"
assert_eq "0 0
1 $leo" "$(rd "$B1/epochs")" "broker 1's cache now has epoch 1 from $leo"
assert_match "^$leo $leo 1 [0-9]+ [0-9]+\.log [0-9]+ 1 " "$(rd "$B1/batches@$leo")" \
	"broker 1's batch at $leo carries leader epoch 1"
assert_eq "" "$(rd "$T/state" | grep 'broker 1 .*diverged' || true)" "broker 1 no longer diverged"

# ---- 1. an offline broker's replica -------------------------------------------------
cmd "$MNT/brokers/3/crash" || fail "crash 3"
assert_fails_with EHOSTDOWN mk_read "$MNT/brokers/3/logs/t/0/leo"
assert_fails_with EHOSTDOWN mk_read "$MNT/brokers/3/logs/t/0/records"
cmd "$MNT/brokers/3/restart" || fail "restart 3"

# ---- 5. clear words --------------------------------------------------------------
mark=$(mk_errors_mark)
assert_fails_with EINVAL mk_ctl "create-topic wide replication.factor=5"
assert_error_since "$mark" INVALID_REQUEST "replication.factor 5"
assert_match "replication.factor 5 needs 5 brokers; this cluster has 3 \(list 5 broker ids in \[cluster\]: brokers = 1,2,3,4,5\)" \
	"$(rd "$MNT/errors" | tail -n 1)" "the error says what to write"
mk_unmount

# A cluster whose brokers line is a count, not a list.
printf '[cluster]\nbrokers = 3\ndefault.replication.factor = 3\n' >"$DATA/minikafka.ini"
out=$("$MKFS_BIN" -f "$DATA" "$MNT" 2>&1); rc=$?
assert_eq "1" "$rc" "start-up refuses brokers = 3 with replication factor 3"
assert_eq "minikafkafs: default.replication.factor 3 needs 3 brokers; this cluster has 1 (brokers = 3 in [cluster] is a list of broker ids: write brokers = 1,2,3)" \
	"$out" "and says brokers is a list of ids"
