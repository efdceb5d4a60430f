#!/usr/bin/env bash
# metadata_missing.sh — no data is removed because metadata does not know it
# (issue 23, point 3; docs/filesystem.md 1 and 8). A 3-broker cluster at
# replication factor 3 with records and a committed group offset loses its
# metadata file: the mount is refused with one line and exit status 1, and
# not a byte of the data directory changes; -o rebuild_metadata brings back
# every topic (internal ones too), partition, replica list, leader and record
# and the group's offset, removing nothing, with /errors lines saying what
# was rebuilt. A partition directory with no batch that no topic owns (an
# interrupted creation) is still removed with its /errors line; an unknown
# one with data is refused, never removed.
. "$(dirname "$0")/lib.sh"

cmd() { printf '%s\n' "${2:-}" >"$1"; }
val() { echo "$(<"$MNT/topics/$1/$2/$3")"; }

INI='[cluster]
brokers = 1,2,3
default.replication.factor = 3
num.partitions = 3
clock = manual
[group]
offsets.topic.num.partitions = 2
offsets.topic.replication.factor = 3'

# Every file and directory of DATA with its type, size and checksum.
snapshot() {
	(cd "$DATA" && find . -printf '%y %p %s\n' | sort &&
		find . -type f -exec md5sum {} + | sort -k 2)
}

# What a start refused: one line on stderr, exit 1, no mount. Sets OUT.
# Bounded: a daemon that mounts instead is stopped (SIGTERM) after 10 s.
refused_start() {
	OUT=$(timeout 10 "$MKFS_BIN" -f ${1:-} "$DATA" "$MNT" 2>&1)
	local rc=$?
	mk_in_mounts && fusermount3 -u -z "$MNT" 2>/dev/null
	assert_eq 1 "$rc" "$2: the daemon exits 1"
	assert_eq 1 "$(printf '%s\n' "$OUT" | wc -l)" "$2: with one line"
	assert_true "$2: nothing is mounted" eval '! mountpoint -q "$MNT"'
}

# fetched CMD...: an mk_* helper whose change waits for acks=all on the
# offsets topic, finished by fetch rounds (manual mode).
fetched() {
	"$@" >"$MK_TMP/w.out" 2>&1 &
	local pid=$!
	mk_wait_for 20 eval 'cmd "$MNT/brokers/fetch"; mk_proc_gone '"$pid" ||
		fail "$* did not finish"
	wait "$pid" || { cat "$MK_TMP/w.out"; bail "$* failed"; }
}

# ---- a cluster with data ----------------------------------------------------
mk_mount "$INI"
cmd "$MNT/ctl" "create-topic orders" || bail "create-topic orders"
cmd "$MNT/ctl" "create-topic quiet partitions=2" || bail "create-topic quiet"
for p in 0 1 2; do
	for b in 1 2; do
		cmd "$MNT/topics/orders/$p/append:acks=1" "$(printf "o$p-$b-%s\n" {a..e})" ||
			bail "append to orders/$p"
	done
done
cmd "$MNT/brokers/fetch"
cmd "$MNT/brokers/fetch"
fetched mk_mkdir "$MNT/groups/billing"
fetched mk_write "$MNT/groups/billing/join" "c1 orders"
fetched mk_write "$MNT/groups/billing/members/c1/commit" "orders/1 7"
for p in 0 1 2; do
	assert_eq 10 "$(val orders $p hw)" "orders/$p: every record committed"
	mk_read "$MNT/topics/orders/$p/records@0" >"$MK_TMP/records.$p"
	echo "$(val orders $p replicas) leader $(val orders $p leader)" >>"$MK_TMP/layout"
done
OFFSETS=$(mk_read "$MNT/groups/billing/offsets")
assert_match '^orders 1 7' "$OFFSETS" "the group's offset is committed"
TOPICS=$(ls "$MNT/topics" | tr '\n' ' ')
mk_unmount

# ---- the metadata file removed: refused, nothing changed ---------------------
rm "$DATA/metadata"
ndata=$(find "$DATA"/broker-* -name '*.log' -size +0 -printf '%h\n' | sort -u | wc -l)
snapshot >"$MK_TMP/before"
refused_start "" "a missing metadata file beside data"
assert_match "^minikafkafs: $DATA/metadata is missing, but $ndata partition directories under broker-1\.\.broker-3 hold data; refusing to start \(nothing was changed\): restore the file, or mount with -o rebuild_metadata" \
	"$OUT" "the line names the data dir, what was found and how to proceed"
snapshot >"$MK_TMP/after"
assert_files_eq "$MK_TMP/before" "$MK_TMP/after" "not a byte of the data directory changed"
assert_true "no metadata file was written" test ! -e "$DATA/metadata"

# ---- -o rebuild_metadata ------------------------------------------------------
MK_MOUNT_OPTS="-o rebuild_metadata" mk_mount
assert_eq "$TOPICS" "$(ls "$MNT/topics" | tr '\n' ' ')" "every topic is back, __consumer_offsets too"
: >"$MK_TMP/layout2"
for p in 0 1 2; do
	mk_read "$MNT/topics/orders/$p/records@0" >"$MK_TMP/records2.$p"
	assert_files_eq "$MK_TMP/records.$p" "$MK_TMP/records2.$p" "orders/$p: records@0 is every record written"
	echo "$(val orders $p replicas) leader $(val orders $p leader)" >>"$MK_TMP/layout2"
done
assert_files_eq "$MK_TMP/layout" "$MK_TMP/layout2" "replica lists and leaders are what they were"
assert_eq "0 1" "$(ls "$MNT/topics/quiet" | grep -E '^[0-9]+$' | sort -n | tr '\n' ' ' | sed 's/ $//')" \
	"a topic without records comes back with its partitions"
assert_eq "0 1" "$(ls "$MNT/topics/__consumer_offsets" | grep -E '^[0-9]+$' | sort -n | tr '\n' ' ' | sed 's/ $//')" \
	"__consumer_offsets with its own partition count"
assert_fails_with EPERM mk_write "$MNT/topics/__consumer_offsets/0/append" "x"
assert_eq "$OFFSETS" "$(mk_read "$MNT/groups/billing/offsets")" "the group's offsets read back"
errs=$(mk_read "$MNT/errors")
assert_match "topic orders rebuilt from its directories: 3 partitions, replication factor 3" "$errs" "/errors: orders rebuilt"
assert_match "topic __consumer_offsets rebuilt from its directories: 2 partitions, replication factor 3.*cleanup.policy=compact" \
	"$errs" "/errors: __consumer_offsets rebuilt as an internal topic"
assert_match "metadata: 3 topics rebuilt from the directories of $DATA, nothing removed" "$errs" "/errors: the rebuild's summary"
assert_match "cleanup.policy=compact" "$(mk_read "$MNT/topics/__consumer_offsets/config")" "__consumer_offsets is compacted"
assert_true "the metadata file is written" test -s "$DATA/metadata"
cmd "$MNT/topics/orders/0/append:acks=1" "after" || fail "orders/0 appends after the rebuild"
cmd "$MNT/brokers/fetch"
cmd "$MNT/brokers/fetch"
mk_unmount
MK_MOUNT_OPTS="" mk_mount
assert_eq "after" "$(mk_read "$MNT/topics/orders/0/records@10")" "a plain mount reads the rebuilt file"
mk_unmount

# ---- directories metadata does not know --------------------------------------
# No batch (a creation interrupted before its save): removed, with a line.
mkdir "$DATA/broker-2/ghost-0"
: >"$DATA/broker-2/ghost-0/00000000000000000000.log"
# With data (a copy of orders-0), and no topic owns it: refused, kept.
cp -r "$DATA/broker-1/orders-0" "$DATA/broker-3/stray-0"
snapshot >"$MK_TMP/before"
refused_start "" "an unknown directory with data"
assert_match "no topic in $DATA/metadata owns \(the first: broker-3/stray-0\); refusing to start \(nothing was changed\): mount with -o rebuild_metadata" \
	"$OUT" "the line names the directory and the way out"
snapshot >"$MK_TMP/after"
assert_files_eq "$MK_TMP/before" "$MK_TMP/after" "nothing changed (the empty stray too)"
# -o rebuild_metadata with a metadata file: the topic with data is added;
# the stray with no batch still goes.
MK_MOUNT_OPTS="-o rebuild_metadata" mk_mount
assert_eq "$(cat "$MK_TMP/records.0"; echo after)" "$(mk_read "$MNT/topics/stray/0/records@0")" \
	"the unknown topic with data is added with its records"
assert_eq "3" "$(val stray 0 replicas)" "on the one broker that holds it"
assert_true "the stray with no batch is removed" test ! -e "$DATA/broker-2/ghost-0"
errs=$(mk_read "$MNT/errors")
assert_match "removed $DATA/broker-2/ghost-0: no topic in metadata owns it and it holds no batch" \
	"$errs" "/errors says what was removed and why"
assert_match "topic stray rebuilt from its directories" "$errs" "/errors says stray was rebuilt"
# A real deletion still removes its files.
mk_rmdir "$MNT/topics/stray" || fail "rmdir topics/stray"
assert_true "a deleted topic's directory goes" test ! -e "$DATA/broker-3/stray-0"
mk_unmount
MK_MOUNT_OPTS="" mk_mount
assert_eq "orders quiet" "$(ls "$MNT/topics" | grep -v __ | tr '\n' ' ' | sed 's/ $//')" \
	"a plain mount after: the deletion held"
mk_unmount
