#!/usr/bin/env bash
# damaged_state.sh — saved offsets are checked against what the log holds
# (docs/filesystem.md, "Damage and how it is refused"; issue 23): a log
# start (the broker's log-start-offset-checkpoint) past the log's end, or
# past the replica's saved high watermark (replication-offset-checkpoint),
# takes that replica offline with an /errors line naming the file, the
# entry and the value, and an in-sync replica that has the records leads;
# no replica adopts the bad start; putting the file right brings the
# replica back with every record. A broker checkpoint file that is not
# Kafka's format takes that broker's replicas offline, naming the line. A
# damaged producer snapshot is not trusted, said in /errors, and rebuilt
# from the log.
#
# Manual clock and explicit fetch rounds; no timing.
. "$(dirname "$0")/lib.sh"

val() { echo "$(<"$MNT/topics/$1/$2/$3")"; }
fetch() { echo >"$MNT/brokers/fetch"; }
# Broker B's entry for t-0 in one of its checkpoint files.
entry_in() { awk '$1 == "t" && $2 == "0" { print $3 }' "$DATA/broker-$1/$2"; }
start_in() { entry_in "$1" log-start-offset-checkpoint; }
hw_in() { entry_in "$1" replication-offset-checkpoint; }
# Set broker B's entry for t-0 in FILE to VALUE.
set_entry() { sed -i "s/^t 0 [0-9]*\$/t 0 $3/" "$DATA/broker-$1/$2"; }

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
ckpt=$DATA/broker-1/log-start-offset-checkpoint
cp "$ckpt" "$MK_TMP/checkpoint.good"
set_entry 1 log-start-offset-checkpoint 9999
assert_eq "9999" "$(start_in 1)" "broker 1's log-start-offset-checkpoint edited to 9999 for t 0"
mk_mount
assert_eq "2" "$(val t 0 leader)" "an in-sync replica that has the records leads"
assert_eq "0 150 150" "$(val t 0 log_start_offset) $(val t 0 hw) $(val t 0 leo)" "the leader's log start, HW and end are the log's"
assert_eq "150" "$(mk_read "$MNT/topics/t/0/records" | wc -l)" "all 150 committed records are served"
assert_files_eq "$MK_TMP/lines" <(mk_read "$MNT/topics/t/0/records") "the records are the ones written"
assert_match "broker 1 +failed" "$(val t 0 state)" "broker 1's replica is offline"
errs=$(mk_read "$MNT/errors")
assert_match "broker 1 t-0: cannot open log: .*broker-1/log-start-offset-checkpoint: t 0: log_start_offset 9999 is past the log's end 150" \
	"$errs" "/errors names the file, the entry and the value"
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
set_entry 2 log-start-offset-checkpoint 100
set_entry 2 replication-offset-checkpoint 50
assert_eq "100 50" "$(start_in 2) $(hw_in 2)" "broker 2's files edited"
mk_mount
assert_true "broker 2 no longer leads" test "$(val t 0 leader)" != 2
assert_eq "0 150" "$(val t 0 log_start_offset) $(val t 0 hw)" "the new leader's log start and HW"
assert_eq "150" "$(mk_read "$MNT/topics/t/0/records" | wc -l)" "all 150 records are served"
assert_match "broker 2 t-0: cannot open log: .*broker-2/log-start-offset-checkpoint: t 0: log_start_offset 100 is past the high watermark 50 in .*broker-2/replication-offset-checkpoint" \
	"$(mk_read "$MNT/errors")" "/errors names both files and values"
mk_unmount
assert_eq "100 50" "$(start_in 2) $(hw_in 2)" "broker 2's files are left as found"
set_entry 2 log-start-offset-checkpoint 0
set_entry 2 replication-offset-checkpoint 150

# ---- 2b. a broker file that is not Kafka's format --------------------------
# Every replica of that broker goes offline (Kafka takes the log directory
# offline), the file is left as found; removing the bad line brings it back.
hwf=$DATA/broker-3/replication-offset-checkpoint
cp "$hwf" "$MK_TMP/hw.good"
printf '0\n2\nt 0 150\n' >"$hwf"
mk_mount
assert_match "broker 3 +failed" "$(val t 0 state)" "broker 3's replica is offline"
assert_match "broker 3 t-0: cannot open log: .*broker-3/replication-offset-checkpoint: line 3: only 1 of the 2 entries the count says" \
	"$(mk_read "$MNT/errors")" "/errors names the file and the line"
mk_unmount
assert_eq "$(printf '0\n2\nt 0 150')" "$(cat "$hwf")" "the damaged file is left as found"
cp "$MK_TMP/hw.good" "$hwf"

# ---- 3. DeleteRecords still reaches the followers -------------------------
mk_mount
leader=$(val t 0 leader)
mk_write "$MNT/topics/t/0/delete-records" "40" || bail "delete-records"
fetch || bail "fetch"
mk_unmount
assert_eq "40 40 40" "$(start_in 1) $(start_in 2) $(start_in 3)" "every replica's start moved to 40"
for b in 1 2 3; do
	hw=$(hw_in "$b")
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
