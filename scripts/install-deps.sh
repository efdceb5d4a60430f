#!/usr/bin/env bash
# Install everything MiniKafka FS needs to build, run and test, from
# Debian 12's packages. Idempotent; needs root.
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc clang libclang-rt-14-dev
      libfuse3-dev fuse3 libiniparser-dev libcmocka-dev zlib1g-dev libisal-dev
      liblz4-dev libzstd-dev libsnappy-dev
      python3 python3-kafka python3-lz4 python3-snappy python3-zstandard valgrind
      kcat librdkafka-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi
