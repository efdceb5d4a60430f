#!/usr/bin/env bash
# keyed-ordering.sh — records with the same key land on one partition, in
# the order they were written.
#
# A topic `orders` with three partitions. Three customers' events are
# produced interleaved through the topic-level append file: the partitioner
# sends each key to murmur2(key) mod 3 (the Java client's default
# partitioner), so one customer's events all go to
# one partition, and within a partition the log keeps the write order.
# Each write's receipt (the descriptor is opened O_RDWR) tells where the
# record went: TOPIC PARTITION BASE_OFFSET COUNT.
#
# Run it: bash examples/keyed-ordering.sh   (after `ninja -C build`)
# It checks its own output and exits non-zero on a mismatch.
. "${MKFS_SRC:-$(dirname "$0")/..}/tests/fs/lib.sh"

say() { printf '\n## %s\n' "$*"; }
run() { echo "\$ $1"; eval "$1"; }

# linger.ms = 0: the end of every write sends its batch (one per partition).
mk_mount '[cluster]
clock = manual
[producer]
linger.ms = 0'
cd "$MNT"

say "a topic with three partitions"
run 'echo "create-topic orders partitions=3" > ctl'

say "interleaved events of three customers, one TSV record (KEY<TAB>VALUE) per write"
events=(alice:created erin:created alice:paid oscar:created erin:paid
	alice:shipped oscar:paid erin:shipped oscar:shipped alice:delivered)
exec 3<>topics/orders/append:tsv
printf '%-8s %-10s -> %s\n' KEY VALUE "RECEIPT (topic partition offset count)"
declare -A where parts order
for ev in "${events[@]}"; do
	key=${ev%%:*} value=${ev#*:}
	printf '%s\t%s\n' "$key" "$value" >&3     # one write(2): one batch
	read -r receipt <&3
	printf '%-8s %-10s -> %s\n' "$key" "$value" "$receipt"
	read -r _ p off count <<<"$receipt"
	parts[$key]+="${parts[$key]:+ }$p"
	order[$key]+="${order[$key]:+ }$off:$value"
done
exec 3>&-

say "every event of a key went to one partition"
for key in alice erin oscar; do
	echo "$key: partitions ${parts[$key]}"
	where[$key]=${parts[$key]%% *}
	assert_eq "1" "$(tr ' ' '\n' <<<"${parts[$key]}" | sort -u | wc -l)" \
		"all of $key's events on partition ${where[$key]}"
done

say "why those partitions: murmur2(key) mod 3, as a Java or kafka-python producer computes it"
for key in alice erin oscar; do
	want=$(mk_part_of "$key" 3)
	echo "murmur2($key) mod 3 = $want; the receipts said ${where[$key]}"
	assert_eq "$want" "${where[$key]}" "$key's events went to murmur2($key) mod 3 = $want"
done

assert_eq "0 1 2" "$(printf '%s\n' "${where[@]}" | sort -n | tr '\n' ' ' | sed 's/ $//')" \
	"the three keys happen to use all three partitions"

say "each key's offsets, from the receipts, increase in the order written"
for key in alice erin oscar; do
	echo "$key: ${order[$key]}"
	offs=$(tr ' ' '\n' <<<"${order[$key]}" | cut -d: -f1)
	assert_eq "$(sort -n <<<"$offs")" "$offs" "$key: offsets increase with the write order"
done

say "read each partition back: a key's values in the order written"
for p in 0 1 2; do
	run "cat topics/orders/$p/records:tsv | cut -f1,3,4"
done
for key in alice erin oscar; do
	p=${where[$key]}
	got=$(cut -f3,4 "topics/orders/$p/records:tsv" | awk -F'\t' -v k="$key" '$1 == k {printf "%s ", $2}')
	want=""
	for ev in "${events[@]}"; do [ "${ev%%:*}" = "$key" ] && want+="${ev#*:} "; done
	assert_eq "$want" "$got" "$key on partition $p: $want"
done

say "the :key= form: three values for trent in one write, one batch, one receipt"
exec 3<>topics/orders/append:key=trent
env printf 'created\npaid\nshipped\n' >&3     # coreutils printf: one write(2)
read -r receipt <&3
exec 3>&-
echo "receipt: $receipt"
dp=$(mk_part_of trent 3)
read -r _ p off count <<<"$receipt"
assert_eq "$dp 3" "$p $count" "trent's three records: one batch on murmur2(trent) mod 3 = $dp"
run "cat topics/orders/$p/records@$off:tsv | cut -f1,3,4"
assert_eq $'trent\tcreated\ntrent\tpaid\ntrent\tshipped' \
	"$(cut -f3,4 "topics/orders/$p/records@$off:tsv")" "trent's values in the order written"

say "the same key lands on the same partition after a restart"
cd /
mk_remount
cd "$MNT"
exec 3<>topics/orders/append:tsv
printf 'alice\treturned\n' >&3
read -r receipt <&3
exec 3>&-
echo "receipt: $receipt"
assert_eq "${where[alice]}" "$(cut -d' ' -f2 <<<"$receipt")" "alice is still on partition ${where[alice]}"

cd /
mk_unmount
