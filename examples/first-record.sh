#!/usr/bin/env bash
# first-record.sh — chapter 1's lab, "the first record", on the filesystem.
#
# A topic `orders` with two partitions. We produce one record, key alice,
# value created, through the topic-level append file: the partitioner picks
# the partition (murmur2("alice") mod 2 = 1, the Java client's default
# partitioner), the leader assigns the offset.
# The O_RDWR receipt tells us where it went — like Producer.send's
# RecordMetadata — and we fetch it from exactly there instead of guessing.
#
# Run it: bash examples/first-record.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
# show CMD...: print the command (paths relative to the mount), then run it.
show() { echo "\$ $*"; "$@"; }
# run 'SHELL TEXT': print it, then run it as written.
run() { echo "\$ $1"; eval "$1"; }

# One broker; linger.ms = 0 sends every write at once (batch_size=1 in the book).
mk_mount '[producer]
linger.ms = 0'
cd "$MNT"

say "create the topic: two partitions, one replica"
run 'echo "create-topic orders partitions=2 replication.factor=1" > ctl'
show ls topics/orders

say "produce key=alice value=created through the partitioner; read the receipt"
# O_RDWR (<>): writing produces, reading the same descriptor gives a receipt.
run 'exec 3<>topics/orders/append:key=alice; echo created >&3; read -r receipt <&3; exec 3>&-'
echo "receipt: $receipt        (TOPIC PARTITION BASE_OFFSET COUNT)"
read -r topic partition offset count <<<"$receipt"
echo "partition=$partition offset=$offset"
assert_eq "orders 1 0 1" "$receipt" "the receipt: topic orders, partition 1, offset 0, one record"

say "why partition 1: murmur2(key) mod partitions, as the Java client (and kafka-python) hash keys"
echo '$ python3 -c "from kafka.partitioner.default import murmur2; print((murmur2(b\"alice\") & 0x7fffffff) % 2)"'
want_p=$(mk_part_of alice 2)
echo "$want_p"
assert_eq "$want_p" "$partition" "the record went to murmur2(\"alice\") mod 2"

say "fetch from the address the receipt gave: (orders, $partition, $offset)"
show cat "topics/orders/$partition/records@$offset:tsv"
got=$(cat "topics/orders/$partition/records@$offset:tsv")
assert_match $'^0\t[0-9]+\talice\tcreated$' "$got" "offset 0 of partition 1 is (alice, created)"
show cat "topics/orders/$partition/records@$offset:json"
assert_match '"offset":0,.*"key":"alice","value":"created"' \
	"$(cat "topics/orders/$partition/records@$offset:json")" "the same record as JSON"

say "LEO and high watermark: one replica, so the HW follows the LEO at once"
show cat topics/orders/1/leo topics/orders/1/hw
assert_eq "1 1" "$(cat topics/orders/1/leo) $(cat topics/orders/1/hw)" "partition 1: leo 1, hw 1"
show cat topics/orders/0/leo
assert_eq "0" "$(cat topics/orders/0/leo)" "partition 0 is still empty"

say "offset 0 is not an address by itself: partition 0 has an offset 0 too"
run 'echo someone-else > topics/orders/0/append'
show cat topics/orders/0/records@0:tsv
assert_match $'^0\t[0-9]+\t\\\\N\tsomeone-else$' "$(cat topics/orders/0/records@0:tsv)" \
	"partition 0 offset 0 is another record: the address is (topic, partition, offset)"

say "exercise 2: same key, three values, one write -> one partition, send order kept"
# (coreutils printf writes its output in one write(2); bash's builtin would
# write line by line, which makes three batches)
run 'exec 3<>topics/orders/append:key=alice; env printf "0\n1\n2\n" >&3; read -r receipt <&3; exec 3>&-'
echo "receipt: $receipt"
assert_eq "orders 1 1 3" "$receipt" "three records, one batch, partition 1 from offset 1"
show cat topics/orders/1/records@1
assert_eq $'0\n1\n2' "$(cat topics/orders/1/records@1)" "values 0, 1, 2 in send order"

cd /
mk_unmount
