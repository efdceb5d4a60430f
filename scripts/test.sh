#!/usr/bin/env bash
# Run every test: install packages, build three ways and run the suites.
#   build/        the normal build: unit, filesystem and example tests
#   build-asan/   the same suites under AddressSanitizer + UBSan
#   build-tsan/   ThreadSanitizer: the unit tests and the concurrent mount
#                 tests (parked requests, follow, replication, producers,
#                 limits, groups)
#   build-fuzz/   clang + libFuzzer targets, each for a bounded time
# and the unit tests once more under valgrind. Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
failures=()

# Run one meson test invocation and add its counts.
suite() {
	local label=$1 dir=$2
	shift 2
	local log
	log=$(mktemp)
	meson test -C "$dir" --print-errorlogs "$@" 2>&1 | tee "$log" | grep -E '^ *[0-9]+/[0-9]+ ' || true
	local ok fail
	ok=$(awk '/^Ok:/ {print $2}' "$log")
	fail=$(awk '/^(Fail|Unexpected Pass|Timeout):/ {s += $2} END {print s + 0}' "$log")
	if [ -z "$ok" ]; then   # meson itself failed
		ok=0
		fail=$((fail + 1))
		tail -20 "$log"
	fi
	passed=$((passed + ok))
	failed=$((failed + fail))
	((fail)) && failures+=("$label")
	rm -f "$log"
}

build() {
	local dir=$1
	shift
	if [ -d "$dir" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi && ninja -C "$dir" >/dev/null
}

if build build; then
	suite normal build
	suite valgrind build --suite unit --wrap='valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite -q'
else
	echo "build failed"; failed=$((failed + 1)); failures+=(build)
fi
if build build-asan -Db_sanitize=address,undefined -Db_lundef=false; then
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		suite asan build-asan --no-suite fuzz
else
	echo "sanitizer build failed"; failed=$((failed + 1)); failures+=(build-asan)
fi
if build build-tsan -Db_sanitize=thread -Db_lundef=false; then
	export TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1
	suite tsan-unit build-tsan --suite unit
	suite tsan-fs build-tsan fs-serving fs-follow fs-replication fs-topic_append fs-producer fs-limits fs-groups
	unset TSAN_OPTIONS
else
	echo "thread sanitizer build failed"; failed=$((failed + 1)); failures+=(build-tsan)
fi
if CC=clang build build-fuzz -Dfuzz=true; then
	suite fuzz build-fuzz --suite fuzz
else
	echo "fuzz build failed"; failed=$((failed + 1)); failures+=(build-fuzz)
fi

((${#failures[@]})) && echo "failing: ${failures[*]}"
echo "$passed passed, $failed failed"
((failed == 0))
