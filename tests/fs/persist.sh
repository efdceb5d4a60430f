#!/usr/bin/env bash
# persist.sh — topics, partitions, topic config overrides and records survive
# an unmount and a remount; a deleted topic stays deleted.
. "$(dirname "$0")/lib.sh"

mk_mount '[cluster]
clock = manual'

mk_mkdir "$MNT/topics/plain" || fail "mkdir plain"
assert_ok "create-topic three partitions=3 with overrides" \
	mk_ctl "create-topic three partitions=3 segment.bytes=300 retention.ms=60000"
assert_ok "topic config write" mk_write "$MNT/topics/plain/config" "message.max.bytes=5000"
mk_write "$MNT/topics/three/config" $'flush.messages=7\ncleanup.policy=compact' ||
	fail "two config lines in one write"
mk_mkdir "$MNT/topics/doomed" || fail "mkdir doomed"
mk_ctl "create-topic gone" || fail "create-topic gone"

for p in 0 1 2; do
	for i in 0 1 2 3 4; do
		# keyed: a compacted topic refuses keyless records
		mk_write "$MNT/topics/three/$p/append:key=k$i" "p$p-r$i" || fail "append p$p-r$i"
	done
done
mk_write "$MNT/clock" "+1000"
mk_write_e "$MNT/topics/plain/0/append:tsv" 'k\tv\th=1\n\\N\t\\N\n' || fail "tsv append"
mk_write "$MNT/topics/doomed/0/append" $'x\n'
mk_write "$MNT/topics/gone/0/append" $'y\n'

# Deletion: one by rmdir, one by /ctl delete-topic.
assert_ok "rmdir /topics/doomed" mk_rmdir "$MNT/topics/doomed"
assert_ok "delete-topic gone" mk_ctl "delete-topic gone"
assert_eq "plain three" "$(ls "$MNT/topics" | sort | tr '\n' ' ' | sed 's/ $//')" "deleted topics are gone at once"
assert_fails_with ENOENT mk_read "$MNT/topics/doomed/0/records"
assert_true "the deleted topic's data is gone from DATA_DIR" \
	test ! -e "$DATA/broker-1/doomed-0" -a ! -e "$DATA/broker-1/gone-0"

# What the cluster looks like, as text, for comparison after each remount.
picture() {
	echo "topics: $(ls "$MNT/topics" | sort | tr '\n' ' ')"
	for t in plain three; do
		echo "partitions $t: $(ls "$MNT/topics/$t" | grep -E '^[0-9]+$' | sort -n | tr '\n' ' ')"
		echo "config $t:"
		mk_read "$MNT/topics/$t/config" | sort
		for p in $(ls "$MNT/topics/$t" | grep -E '^[0-9]+$'); do
			for f in leo hw lso log_start_offset leader leader_epoch replicas isr; do
				echo "$t/$p/$f $(mk_read "$MNT/topics/$t/$p/$f")"
			done
			mk_read "$MNT/topics/$t/$p/records:tsv"
		done
	done
}
picture >"$MK_TMP/before"

# Sanity of the picture itself, so that comparing it means something.
assert_true "picture has three partitions of three" grep -qx "partitions three: 0 1 2 " "$MK_TMP/before"
assert_true "picture has the segment.bytes override" grep -qx "segment.bytes=300" "$MK_TMP/before"
assert_true "picture has the retention.ms override" grep -qx "retention.ms=60000" "$MK_TMP/before"
assert_true "picture has the written message.max.bytes" grep -qx "message.max.bytes=5000" "$MK_TMP/before"
assert_true "picture has cleanup.policy=compact" grep -qx "cleanup.policy=compact" "$MK_TMP/before"
assert_true "picture has flush.messages=7" grep -qx "flush.messages=7" "$MK_TMP/before"
assert_true "picture has p2's last record" grep -qP '^4\t0\tk4\tp2-r4$' "$MK_TMP/before"
assert_true "picture has the tsv record with header" grep -qP '^0\t1000\tk\tv\th=1$' "$MK_TMP/before"

mk_unmount
assert_true "metadata file exists in DATA_DIR" test -s "$DATA/metadata"
mk_mount
picture >"$MK_TMP/after"
assert_files_eq "$MK_TMP/before" "$MK_TMP/after" \
	"topics, partitions, configs, offsets and records identical after remount"
assert_eq "1000" "$(mk_read "$MNT/clock")" "the manual clock does not go back across a remount (it was 1000)"
assert_fails_with ENOENT mk_stat "$MNT/topics/doomed"
assert_fails_with ENOENT mk_stat "$MNT/topics/gone"

# Appends continue at the old log end; the deleted names can be reused, empty.
assert_ok "append after remount" mk_write "$MNT/topics/three/1/append:key=k5" "p1-r5"
assert_eq "5" "$(mk_read "$MNT/topics/three/1/records@5:tsv" | cut -f1)" "the new record gets offset 5"
assert_ok "mkdir doomed again" mk_mkdir "$MNT/topics/doomed"
assert_eq "0" "$(mk_read "$MNT/topics/doomed/0/leo")" "a re-created topic starts empty"
assert_eq "" "$(mk_read "$MNT/topics/doomed/0/records")" "and shows none of the old records"

# A config change after the remount also persists; rmdir after remount sticks.
mk_write "$MNT/topics/three/config" "retention.ms=120000" || fail "change retention.ms"
assert_ok "rmdir plain after remount" mk_rmdir "$MNT/topics/plain"
mk_remount
assert_eq "doomed three" "$(ls "$MNT/topics" | sort | tr '\n' ' ' | sed 's/ $//')" \
	"second remount: plain stays deleted, doomed exists"
assert_true "retention.ms change survived" grep -qx "retention.ms=120000" <(mk_read "$MNT/topics/three/config")
assert_eq $'p1-r0\np1-r1\np1-r2\np1-r3\np1-r4\np1-r5' "$(mk_read "$MNT/topics/three/1/records")" \
	"partition 1 has all six records"
assert_eq "0" "$(mk_read "$MNT/topics/doomed/0/leo")" "the re-created topic is still empty"

# A third mount of an untouched data dir changes nothing.
picture >"$MK_TMP/before3" 2>&1
mk_remount
picture >"$MK_TMP/after3" 2>&1
assert_files_eq "$MK_TMP/before3" "$MK_TMP/after3" "an idle remount changes nothing"
mk_unmount
