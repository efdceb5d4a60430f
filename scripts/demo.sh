#!/usr/bin/env bash
# Install, build, mount a cluster on the built-in defaults and show it
# working. The mount stays up afterwards so you can keep exploring it.
#
#   sudo ./scripts/demo.sh [MOUNTPOINT]     (default /tmp/minikafka/mnt)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null

mnt=${1:-/tmp/minikafka/mnt}
data=$(dirname "$mnt")/data
mkdir -p "$mnt" "$data"
if mountpoint -q "$mnt"; then fusermount3 -u "$mnt"; fi
./build/minikafkafs "$data" "$mnt"
for _ in $(seq 100); do [ -e "$mnt/README" ] && break; sleep 0.05; done

run() { echo "\$ $*"; eval "$@"; }
cd "$mnt"
run 'ls'
run 'mkdir -p topics/orders'
run 'echo created > topics/orders/0/append'
run "printf 'paid\nshipped\n' > topics/orders/0/append"
run 'cat topics/orders/0/records'
run 'cat topics/orders/0/records@-1:tsv'
run 'cat topics/orders/0/hw'
run 'cat topics/orders/0/state'
run 'ls topics/orders/0/segments'
# The same cluster over Kafka's protocol (broker 1 on [network] listeners'
# default, 127.0.0.1:9092; /errors says why when that port is taken).
run 'cat brokers/1/listener'
if command -v kcat >/dev/null && [ "$(cat brokers/1/listener)" != none ]; then
	run "kcat -b \$(cat brokers/1/listener) -L"
	run "echo 'from kcat' | kcat -b \$(cat brokers/1/listener) -P -t orders -p 0"
	run "kcat -b \$(cat brokers/1/listener) -C -t orders -p 0 -e -q"
fi
echo
echo "Mounted at $mnt (data in $data). Explore it; unmount with: fusermount3 -u $mnt"
