#!/bin/sh
# Run one libFuzzer target for a bounded time over its checked-in corpus.
#   run.sh TARGET SECONDS CORPUS_DIR
# New inputs go to a scratch directory (the first corpus directory libFuzzer
# is given is the one it writes to), so the checked-in corpus is only read.
# Crash, leak, timeout and out-of-memory inputs go to the scratch directory
# too (-artifact_prefix; without it libFuzzer writes them into the current
# directory, which may be the source tree); when the run fails they are
# moved to a directory of their own under TMPDIR that is kept and named.
set -u
target=$1 secs=$2 corpus=$3
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mk-fuzz-corpus-XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/new" "$scratch/artifacts" || exit 1
# -error_exitcode=1: libFuzzer's own default, 77, is what meson reads as
# a skip, which hid a crashing target as SKIP.
"$target" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
	-error_exitcode=1 \
	-artifact_prefix="$scratch/artifacts/" "$scratch/new" "$corpus"
rc=$?
[ "$rc" = 77 ] && rc=1     # never a skip
if [ -n "$(ls -A "$scratch/artifacts")" ]; then
	kept=$(mktemp -d "${TMPDIR:-/tmp}/mk-fuzz-artifacts-XXXXXX") &&
		mv "$scratch/artifacts"/* "$kept"/ &&
		echo "run.sh: $(basename "$target"): inputs that failed kept in $kept:" \
			$(ls "$kept") >&2
fi
exit $rc
