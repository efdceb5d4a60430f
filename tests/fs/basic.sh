#!/usr/bin/env bash
# basic.sh — produce and fetch through files: plain round trip, one write =
# one batch, every POS form, :max, :json, the value files, and the tree.
. "$(dirname "$0")/lib.sh"

mk_mount '[cluster]
clock = manual'

P=$MNT/topics/t/0

# ---- topics and the empty partition ------------------------------------
assert_ok "mkdir /topics/t" mk_mkdir "$MNT/topics/t"
assert_true "t is a directory" test -d "$MNT/topics/t"
assert_eq "0" "$(ls "$MNT/topics/t" | grep -E '^[0-9]+$' | tr '\n' ' ' | sed 's/ $//')" \
	"a topic made by mkdir has num.partitions=1 partition"
assert_eq "0" "$(mk_read "$P/leo")" "empty partition: leo 0"
assert_eq "0" "$(mk_read "$P/hw")" "empty partition: hw 0"
assert_eq "" "$(mk_read "$P/records")" "empty partition: records is empty"

# ---- echo then cat --------------------------------------------------------
echo hello >"$P/append"
assert_eq "hello" "$(cat "$P/records")" "echo > append, then cat records"
assert_eq "1" "$(cat "$P/leo")" "leo 1 after one record"
echo world >>"$P/append"
assert_eq $'hello\nworld' "$(cat "$P/records")" "echo >> append adds a record"

# ---- one write of three lines is one batch of three records ---------------
seg=$P/segments/00000000000000000000.log
frames_before=$(mk_frame_count "$seg")
assert_eq "2" "$frames_before" "two single-line writes made two frames"
assert_ok "one write(2) of three lines" mk_write_e "$P/append" 'a\nb\nc\n'
assert_eq "1" "$(($(mk_frame_count "$seg") - frames_before))" \
	"three lines in one write(2) are one frame (one batch)"
assert_eq "5" "$(cat "$P/leo")" "leo 5 after 2 + 3 records"
assert_eq "$(printf '2\t0\t\\N\ta\n3\t0\t\\N\tb\n4\t0\t\\N\tc')" \
	"$(mk_read "$P/records@2:tsv")" "the batch's records have offsets 2, 3, 4"
magic=$(od -An -tu1 -j16 -N1 "$seg" | tr -d ' ')
assert_eq "2" "$magic" "segment .log starts with a Kafka RecordBatch v2 (magic 2 at byte 16)"

# An unterminated last line is a record when the file is closed.
assert_ok "write without a trailing newline" mk_write "$P/append" "tail"
assert_eq "tail" "$(mk_read "$P/records@5")" "unterminated last line becomes a record at close"

# ---- timestamps from the manual clock; records@ts= ------------------------
mk_ctl "create-topic ts" || bail "create-topic ts"
Q=$MNT/topics/ts/0
assert_eq "0" "$(mk_read "$MNT/clock")" "manual clock starts at 0"
mk_write "$Q/append" $'r0\n'
mk_write "$MNT/clock" "+100"
assert_eq "100" "$(mk_read "$MNT/clock")" "+100 advances the manual clock"
mk_write "$Q/append" $'r1\n'
mk_write "$MNT/clock" "+100"
mk_write "$Q/append" $'r2a\nr2b\n'
mk_write "$MNT/clock" "+100"
assert_eq "$(printf '0\t0\t\\N\tr0\n1\t100\t\\N\tr1\n2\t200\t\\N\tr2a\n3\t200\t\\N\tr2b')" \
	"$(mk_read "$Q/records:tsv")" "records carry the clock's time as timestamp"
assert_eq $'r0\nr1\nr2a\nr2b' "$(mk_read "$Q/records@ts=0")" "records@ts=0: all"
assert_eq $'r1\nr2a\nr2b' "$(mk_read "$Q/records@ts=1")" "records@ts=1: from the first at or after 1"
assert_eq $'r1\nr2a\nr2b' "$(mk_read "$Q/records@ts=100")" "records@ts=100: from r1"
assert_eq $'r2a\nr2b' "$(mk_read "$Q/records@ts=150")" "records@ts=150: from r2a"
assert_eq $'r2a\nr2b' "$(mk_read "$Q/records@ts=200")" "records@ts=200: from r2a"
assert_eq "" "$(mk_read "$Q/records@ts=201")" "records@ts=201: after the last timestamp, empty"

# ---- every POS form ---------------------------------------------------------
mk_ctl "create-topic pos" || bail "create-topic pos"
R=$MNT/topics/pos/0
mk_write "$R/append" $'v0\nv1\nv2\nv3\nv4\n'
assert_eq $'v0\nv1\nv2\nv3\nv4' "$(mk_read "$R/records")" "records = everything"
assert_eq $'v0\nv1\nv2\nv3\nv4' "$(mk_read "$R/records@earliest")" "records@earliest"
assert_eq "" "$(mk_read "$R/records@latest")" "records@latest is empty"
assert_eq $'v3\nv4' "$(mk_read "$R/records@3")" "records@3"
assert_eq "v4" "$(mk_read "$R/records@4")" "records@4"
assert_eq "" "$(mk_read "$R/records@5")" "records@LEO is empty (not an error)"
assert_eq $'v3\nv4' "$(mk_read "$R/records@-2")" "records@-2: the last two"
assert_eq "" "$(mk_read "$R/records@-0")" "records@-0: nothing"
assert_eq $'v0\nv1\nv2\nv3\nv4' "$(mk_read "$R/records@-100")" "records@-100 clamps at the log start"
assert_true "records@3 exists by lookup" test -e "$R/records@3"

# ---- :max=N ---------------------------------------------------------------------
assert_eq $'v0\nv1' "$(mk_read "$R/records:max=2")" "records:max=2"
assert_eq $'v1\nv2\nv3' "$(mk_read "$R/records@1:max=3")" "records@1:max=3"
assert_eq $'v3\nv4' "$(mk_read "$R/records@3:max=10")" "max above the rest: the rest"
assert_eq "$(printf '2\t300\t\\N\tv2')" "$(mk_read "$R/records@2:tsv:max=1")" "records@2:tsv:max=1"
assert_eq "$(printf '4\t300\t\\N\tv4')" "$(mk_read "$R/records@-1:max=1:tsv")" "flags in any order"

# ---- :json ------------------------------------------------------------------------
mk_write_e "$MNT/topics/pos/0/append:tsv" 'k1\tval\th1=x\th2=\\N\n\\N\t\\xff\\xfe\n' ||
	fail "tsv append for the json check"
json=$(mk_read "$R/records@5:json")
assert_eq '{"offset":5,"timestamp":300,"key":"k1","value":"val","headers":{"h1":"x","h2":null}}
{"offset":6,"timestamp":300,"key":null,"value_b64":"//4=","headers":{}}' "$json" \
	"records:json: key, headers (null header value), value_b64 for non-UTF-8"
assert_ok "every :json line parses as JSON" "$MK_PYTHON" -c '
import json, sys
for l in sys.argv[1].split("\n"):
    o = json.loads(l)
    assert {"offset", "timestamp", "key", "headers"} <= set(o), o
' "$json"
first=$(mk_read "$R/records:json:max=1")
assert_eq '{"offset":0,"timestamp":300,"key":null,"value":"v0","headers":{}}' "$first" \
	"records:json, one plain record, exact text"

# ---- value files ----------------------------------------------------------------
assert_eq "7" "$(mk_read "$R/leo")" "leo"
assert_eq "7" "$(mk_read "$R/hw")" "hw (one replica: follows leo)"
assert_eq "7" "$(mk_read "$R/lso")" "lso (no transactions: = hw)"
assert_eq "0" "$(mk_read "$R/log_start_offset")" "log_start_offset"
assert_eq "1" "$(mk_read "$R/leader")" "leader is broker 1"
assert_eq "0" "$(mk_read "$R/leader_epoch")" "leader_epoch 0"
assert_eq "1" "$(mk_read "$R/replicas")" "replicas"
assert_eq "1" "$(mk_read "$R/isr")" "isr"
assert_eq "0" "$(mk_read "$R/isr_shrinks")" "isr_shrinks of a new partition"
assert_eq "0" "$(mk_read "$R/isr_expands")" "isr_expands of a new partition"
raw=$(mk_read "$R/leo"; echo x)
assert_eq $'7\nx' "$raw" "a value file is the value and one newline"
state=$(mk_read "$R/state")
assert_match $'(^|\n)leo 7(\n|$)' "$state" "state shows leo"
assert_match $'(^|\n)hw 7(\n|$)' "$state" "state shows hw"
assert_match $'(^|\n)leader 1(\n|$)' "$state" "state shows the leader"
assert_match $'broker 1 +leader +\\[#+\\]' "$state" "state has the picture line of broker 1's log"

# ---- the tree (docs/filesystem.md 2): what ls shows --------------------------------------------
lsl() { ls -A "$1" | sort | tr '\n' ' ' | sed 's/ $//'; }
assert_eq "README brokers clock config ctl errors groups producers topics transactions" \
	"$(lsl "$MNT")" "ls /"
assert_eq "pos t ts" "$(lsl "$MNT/topics")" "ls /topics"
assert_eq "0 append config" "$(lsl "$MNT/topics/t")" "ls /topics/t"
assert_eq "append batches delete-records epochs hw isr isr_expands isr_shrinks leader leader_epoch leo log_start_offset lso records replicas segments state" \
	"$(lsl "$P")" "ls /topics/t/0 (parameterised names not listed)"
assert_eq "00000000000000000000.index 00000000000000000000.log 00000000000000000000.timeindex" \
	"$(lsl "$P/segments")" "ls segments/"
assert_eq "1 fetch" "$(lsl "$MNT/brokers")" "ls /brokers"
assert_eq "crash fetch listener logs promote replicas restart state" "$(lsl "$MNT/brokers/1")" "ls /brokers/1"
assert_eq "online" "$(mk_read "$MNT/brokers/1/state")" "broker 1 is online"
assert_true "/ctl is write-only" test "$(stat -c %A "$MNT/ctl")" = "--w-------"
assert_true "/topics/t/0 is a directory" test -d "$P"
assert_true "/topics/t/0/leo is a regular file" test -f "$P/leo"
assert_match "MiniKafka" "$(mk_read "$MNT/README")" "/README says what this tree is"
config=$(mk_read "$MNT/config")
assert_match $'(^|\n)clock *= *manual' "$config" "/config shows the effective ini"

mk_unmount
