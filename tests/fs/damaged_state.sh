#!/usr/bin/env bash
# damaged_state.sh — saved offsets are checked against what the log holds
# (docs/filesystem.md, "Damage and how it is refused"; issue 23): a
# checkpoint whose log start is past the log's end, or past the replica's
# saved high watermark, takes that replica offline with an /errors line
# naming the file and the value, and an in-sync replica that has the
# records leads; no replica adopts the bad start; putting the file right
# brings the replica back with every record. A damaged producer snapshot
# is not trusted, said in /errors, and rebuilt from the log.
#
# Manual clock and explicit fetch rounds; no timing.
. "$(dirname "$0")/lib.sh"

val() { echo "$(<"$MNT/topics/$1/$2/$3")"; }
fetch() { echo >"$MNT/brokers/fetch"; }
start_in() { awk '$1 == "log_start_offset" { print $2 }' "$DATA/broker-$1/t-0/checkpoint"; }

mk_mount '[cluster]
brokers = 1,2,3
default.replication.factor = 3
clock = manual'
mk_mkdir "$MNT/topics/t" || bail "mkdir t"
seq 1 150 >"$MK_TMP/lines"
mk_write_file "$MNT/topics/t/0/append:acks=1" "$MK_TMP/lines" || bail "append"
fetch && fetch || bail "fetch"
assert_eq "1 150 150" "$(val t 0 leader) $(val t 0 hw) $(val t 0 leo)" "broker 1 leads, 150 committed records"
mk_unmount

# ---- 1. a log start past the log's end ------------------------------------
ckpt=$DATA/broker-1/t-0/checkpoint
cp "$ckpt" "$MK_TMP/checkpoint.good"
sed -i 's/^log_start_offset 0$/log_start_offset 9999/' "$ckpt"
assert_eq "9999" "$(start_in 1)" "broker 1's checkpoint edited to log start 9999"
mk_mount
assert_eq "2" "$(val t 0 leader)" "an in-sync replica that has the records leads"
assert_eq "0 150 150" "$(val t 0 log_start_offset) $(val t 0 hw) $(val t 0 leo)" "the leader's log start, HW and end are the log's"
assert_eq "150" "$(mk_read "$MNT/topics/t/0/records" | wc -l)" "all 150 committed records are served"
assert_files_eq "$MK_TMP/lines" <(mk_read "$MNT/topics/t/0/records") "the records are the ones written"
assert_match "broker 1 +failed" "$(val t 0 state)" "broker 1's replica is offline"
errs=$(mk_read "$MNT/errors")
assert_match "broker 1 t-0: cannot open log: .*broker-1/t-0/checkpoint: log_start_offset 9999 is past the log's end 150" \
	"$errs" "/errors names the file and the value"
assert_match "leadership moves from broker 1 .* to broker 2" "$errs" "/errors says who leads now"
fetch || bail "fetch"
mk_unmount
assert_eq "9999 0 0" "$(start_in 1) $(start_in 2) $(start_in 3)" "nothing adopted the bad start; the file is left as found"

# Putting broker 1's file right brings it back with every record.
cp "$MK_TMP/checkpoint.good" "$ckpt"
mk_mount
fetch || bail "fetch"
assert_eq "150" "$(mk_read "$MNT/brokers/1/logs/t/0/records" | wc -l)" "broker 1 holds the 150 records again"
assert_match "broker 1 +in-sync" "$(val t 0 state)" "broker 1 is back in sync"
mk_unmount

# ---- 2. a log start past the saved high watermark -------------------------
# (DeleteRecords and retention never move the start past the HW, and the
# HW is saved first.) Broker 2 leads; its start edited to 100, its saved
# HW to 50.
sed -i 's/^log_start_offset 0$/log_start_offset 100/' "$DATA/broker-2/t-0/checkpoint"
echo 50 >"$DATA/broker-2/t-0/high-watermark"
mk_mount
assert_true "broker 2 no longer leads" test "$(val t 0 leader)" != 2
assert_eq "0 150" "$(val t 0 log_start_offset) $(val t 0 hw)" "the new leader's log start and HW"
assert_eq "150" "$(mk_read "$MNT/topics/t/0/records" | wc -l)" "all 150 records are served"
assert_match "broker 2 t-0: cannot open log: .*broker-2/t-0/checkpoint: log_start_offset 100 is past the high watermark 50 in .*broker-2/t-0/high-watermark" \
	"$(mk_read "$MNT/errors")" "/errors names both files and values"
mk_unmount
sed -i 's/^log_start_offset 100$/log_start_offset 0/' "$DATA/broker-2/t-0/checkpoint"
echo 150 >"$DATA/broker-2/t-0/high-watermark"

# ---- 3. DeleteRecords still reaches the followers -------------------------
mk_mount
leader=$(val t 0 leader)
mk_write "$MNT/topics/t/0/delete-records" "40" || bail "delete-records"
fetch || bail "fetch"
mk_unmount
assert_eq "40 40 40" "$(start_in 1) $(start_in 2) $(start_in 3)" "every replica's start moved to 40"
for b in 1 2 3; do
	hw=$(<"$DATA/broker-$b/t-0/high-watermark")
	assert_true "broker $b's saved HW ($hw) is at least its start" test "$hw" -ge 40
done

# ---- 4. a damaged producer snapshot --------------------------------------
snap=$DATA/broker-$leader/t-0/producer-snapshot
printf 'producer-snapshot 1\ncovered_to 150\nproducer 7 0 0:0:150:0\n' >"$snap"
mk_mount
assert_match "broker $leader t-0: .*producer-snapshot is damaged .*rebuilt from the log" \
	"$(mk_read "$MNT/errors")" "a snapshot naming an offset past its covered_to is not trusted"
assert_eq "40 150" "$(val t 0 log_start_offset) $(val t 0 hw)" "the partition is whole"
mk_unmount
