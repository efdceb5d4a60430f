#!/usr/bin/env bash
# bench/kafka.sh — the Kafka protocol against librdkafka's own mock cluster
# (issue 26 point 8; bench/README.md, "The Kafka protocol"). One client,
# bench/bkafka (librdkafka's producer and consumer, 100-byte records,
# partition 0), in rounds that alternate the two sides:
#   produce  acks=1 into a mount's broker (RF 1) / into a mock cluster
#            (rd_kafka_mock_cluster_new: in memory, no disk), aim >= 1.0
#   consume  the same records back from offset 0, aim >= 1.0
#   acks=all RF 3 on a three-broker mount in auto mode / acks=1 RF 1,
#            aim >= 0.5
# The mock cluster keeps only its last few MB of a partition (older ones
# go: offset 0 would be out of range), so a run is BENCH_KAFKA_RECORDS
# (default 40000, 4 MB) records; each figure is the median of
# BENCH_KAFKA_ROUNDS (default 7) rounds, with the range beside it.
#
#   MKFS_BIN=build/minikafkafs BUILD_DIR=build bash bench/kafka.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
BIN=$(realpath "${MKFS_BIN:-$BUILD/minikafkafs}")
BK=$BUILD/bench/bkafka
N=${BENCH_KAFKA_RECORDS:-40000}
ROUNDS=${BENCH_KAFKA_ROUNDS:-7}
[ -x "$BK" ] || { echo "no $BK (librdkafka-dev: scripts/install-deps.sh)"; exit 1; }
TMP=$(mktemp -d "${BENCH_TMPDIR:-$BUILD}/kafka-bench.XXXXXX")
cleanup() {
	for m in "$TMP"/m1 "$TMP"/m3; do
		mountpoint -q "$m" && fusermount3 -u "$m"
	done
	sleep 0.5
	rm -rf "$TMP"
}
trap cleanup EXIT

# mount NAME INI: a daemon on TMP/NAME with its data in TMP/NAME.data.
mount_one() {
	mkdir -p "$TMP/$1" "$TMP/$1.data"
	printf '%s\n' "$2" >"$TMP/$1.data/minikafka.ini"
	"$BIN" "$TMP/$1.data" "$TMP/$1" || exit 1
	for _ in $(seq 100); do [ -e "$TMP/$1/README" ] && break; sleep 0.05; done
}
mount_one m1 '[network]
listeners = 127.0.0.1:0'
mount_one m3 '[cluster]
brokers = 1,2,3
default.replication.factor = 3
[replication]
mode = auto
[network]
listeners = 127.0.0.1:0'
B1=$(cat "$TMP/m1/brokers/1/listener")
B3=$(for b in 1 2 3; do cat "$TMP/m3/brokers/$b/listener"; done | paste -sd,)

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
declare -a P_MOUNT P_MOCK C_MOUNT C_MOCK ALL3
for ((r = 1; r <= ROUNDS; r++)); do
	echo "create-topic t$r" >"$TMP/m1/ctl"
	echo "create-topic a$r" >"$TMP/m3/ctl"
	out=$("$BK" both mock "t$r" "$N" 1 2>/dev/null)
	P_MOCK+=("$(grep produce <<<"$out" | field mbps)")
	C_MOCK+=("$(grep consume <<<"$out" | field mbps)")
	P_MOUNT+=("$("$BK" produce "$B1" "t$r" "$N" 1 2>/dev/null | field mbps)")
	C_MOUNT+=("$("$BK" consume "$B1" "t$r" "$N" 2>/dev/null | field mbps)")
	ALL3+=("$("$BK" produce "$B3" "a$r" "$N" all 2>/dev/null | field mbps)")
	echo "round $r: produce mount ${P_MOUNT[-1]} mock ${P_MOCK[-1]}, consume mount ${C_MOUNT[-1]} mock ${C_MOCK[-1]}, acks=all rf3 ${ALL3[-1]} MB/s"
done

# ratio NAME A[] B[] AIM: per-round A/B, median and range.
ratio() {
	local name=$1 aim=$4
	local -n a=$2 b=$3
	local rs=() i
	for i in "${!a[@]}"; do
		rs+=("$(awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN { if (y > 0) printf "%.2f", x / y; else print "nan" }')")
	done
	local sorted med lo hi
	sorted=$(printf '%s\n' "${rs[@]}" | sort -g)
	med=$(sed -n "$(( (${#rs[@]} + 1) / 2 ))p" <<<"$sorted")
	lo=$(head -n 1 <<<"$sorted")
	hi=$(tail -n 1 <<<"$sorted")
	printf '%-36s median %s (range %s-%s), aim >= %s%s\n' "$name" "$med" "$lo" "$hi" "$aim" \
		"$(awk -v m="$med" -v a="$aim" 'BEGIN { if (m < a) print ": missed" }')"
}
echo
ratio "produce acks=1: mount / mock" P_MOUNT P_MOCK 1.0
ratio "consume: mount / mock" C_MOUNT C_MOCK 1.0
ratio "acks=all RF 3 / acks=1 RF 1 (mount)" ALL3 P_MOUNT 0.5
