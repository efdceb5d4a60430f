#!/bin/sh
# Run one libFuzzer target for a bounded time over its checked-in corpus.
#   run.sh TARGET SECONDS CORPUS_DIR
# New inputs go to a scratch directory (the first corpus directory libFuzzer
# is given is the one it writes to), so the checked-in corpus is only read.
set -u
target=$1 secs=$2 corpus=$3
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mk-fuzz-corpus-XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
"$target" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
	"$scratch" "$corpus"
