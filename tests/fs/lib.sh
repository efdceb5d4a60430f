# tests/fs/lib.sh — sourced by every filesystem test and example.
#
# Gives each script a private temporary directory with a data dir ($DATA)
# and a mountpoint ($MNT), functions to mount, unmount and crash the daemon,
# and assertion helpers that count passes and failures. An EXIT trap always
# unmounts, kills a daemon still running, removes the temporary directory
# and turns any failure into a non-zero exit status.
#
# Environment: MKFS_BIN (the daemon) and MKFS_SRC (the repository root).
# When unset they are derived from this file's location (build/ is assumed).
#
# Nothing here waits with a fixed sleep for something to happen: every wait
# is a bounded polling loop on a condition (mk_wait_for).
#
# A script passes when no assertion failed, at least one passed, and the
# script itself ended with status 0 (so end it with mk_unmount or an
# assertion, not with a command that may fail).

set -u
set -o pipefail

MK_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${MKFS_SRC:=$(cd "$MK_LIB_DIR/../.." && pwd)}"
: "${MKFS_BIN:=$MKFS_SRC/build/minikafkafs}"
export MKFS_SRC MKFS_BIN

if [ ! -x "$MKFS_BIN" ]; then
	echo "lib.sh: daemon not found or not executable: $MKFS_BIN" >&2
	exit 2
fi
for tool in python3 fusermount3 mountpoint; do
	if ! command -v "$tool" >/dev/null; then
		echo "lib.sh: $tool is required" >&2
		exit 2
	fi
done

# The real interpreter, not a version-manager shim (a shim costs ~0.3 s a call).
MK_PYTHON=$(python3 -c 'import sys; print(sys.executable)')
export MK_PYTHON

MK_TMP=$(mktemp -d "${TMPDIR:-/tmp}/mkfs-test.XXXXXX")
DATA=$MK_TMP/data
MNT=$MK_TMP/mnt
MK_LOG=$MK_TMP/daemon.log     # the daemon's stdout and stderr, all mounts
mkdir -p "$DATA" "$MNT"
: >"$MK_LOG"

MK_PID=""          # the running daemon, "" when none
MK_PASS=0
MK_FAIL=0
MK_SKIP=0
MK_NAME=$(basename "$0" .sh)

# ---- reporting --------------------------------------------------------

pass() { MK_PASS=$((MK_PASS + 1)); echo "ok   - $*"; }
fail() { MK_FAIL=$((MK_FAIL + 1)); echo "FAIL - $*"; }
skip() { MK_SKIP=$((MK_SKIP + 1)); echo "SKIP - $*"; }
note() { echo "#    $*"; }

# Stop at once (a precondition for the rest of the script failed).
bail() {
	fail "$*"
	exit 1
}

# ---- python I/O helper ------------------------------------------------
#
# Shell redirections lose the errno of a failing open/write/close, so file
# operations whose failure matters go through this helper: on failure it
# prints the errno name (ENOENT, EINVAL, ...) as its last line of stdout and
# exits 1.

cat >"$MK_TMP/mkio.py" <<'PY'
import codecs, errno, os, sys

def fail(e):
    sys.stdout.flush()
    os.write(1, (errno.errorcode.get(e.errno, "E%s" % e.errno) + "\n").encode())
    sys.exit(1)

def data_arg(s, escaped):
    b = os.fsencode(s)
    return codecs.escape_decode(b)[0] if escaped else b

def write_once(path, data, flags=os.O_WRONLY):
    try:
        fd = os.open(path, flags)
    except OSError as e:
        fail(e)
    try:
        n = os.write(fd, data)
        if n != len(data):
            print("short write %d of %d" % (n, len(data)))
            sys.exit(1)
    except OSError as e:
        try:
            os.close(fd)
        except OSError:
            pass
        fail(e)
    try:
        os.close(fd)
    except OSError as e:
        fail(e)

def read_all(path, limit=None):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        fail(e)
    out = []
    try:
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            os.write(1, b)
    except OSError as e:
        fail(e)
    finally:
        os.close(fd)

op, args = sys.argv[1], sys.argv[2:]
try:
    if op == "write":          # write PATH DATA [-e]: one write(2)
        write_once(args[0], data_arg(args[1], "-e" in args[2:]))
    elif op == "writefile":    # writefile PATH FILE: the file in one write(2)
        with open(args[1], "rb") as f:
            write_once(args[0], f.read())
    elif op == "read":         # read PATH: everything to EOF, to stdout
        read_all(args[0])
    elif op == "open":         # open PATH r|w: open and close only
        fd = os.open(args[0], os.O_RDONLY if args[1] == "r" else os.O_WRONLY)
        os.close(fd)
    elif op == "mkdir":
        os.mkdir(args[0])
    elif op == "rmdir":
        os.rmdir(args[0])
    elif op == "stat":
        os.stat(args[0])
    elif op == "follow":       # follow PATH MARKER: note the fd, then read to EOF
        # bash starts background jobs with SIGINT ignored; take it back, so
        # that SIGINT interrupts a blocked read(2) (EINTR, exit status 130)
        # instead of doing nothing.
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        fd = os.open(args[0], os.O_RDONLY)
        with open(args[1], "w") as m:
            m.write("%d\n" % fd)
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            os.write(1, b)
    elif op == "produce-loop": # produce-loop PATH LOG: write "i\n" one write at a
        # time, i = 0, 1, ...; after each write returns, log i. Stops at the
        # first error (the daemon died), printing the errno name.
        fd = os.open(args[0], os.O_WRONLY)
        log = os.open(args[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        i = 0
        while True:
            os.write(fd, b"%d\n" % i)
            os.write(log, b"%d\n" % i)
            i += 1
    else:
        print("mkio: unknown op " + op)
        sys.exit(2)
except OSError as e:
    fail(e)
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
PY

mk_py() { "$MK_PYTHON" -I "$MK_TMP/mkio.py" "$@"; }

# mk_part_of KEY N: the partition a topic append gives KEY among N with the
# default partitioner: the Java client's, toPositive(murmur2(key)) mod N
# (Kafka's Utils.murmur2, written out here; topic_append.sh checks it
# against kafka-python's where that is installed).
cat >"$MK_TMP/murmur2.py" <<'PY'
import sys
def murmur2(data):
    m, h = 0x5bd1e995, (0x9747b28c ^ len(data)) & 0xffffffff
    n4 = len(data) // 4 * 4
    for i in range(0, n4, 4):
        k = int.from_bytes(data[i:i + 4], "little") * m & 0xffffffff
        k = (k ^ (k >> 24)) * m & 0xffffffff
        h = (h * m & 0xffffffff) ^ k
    rest = data[n4:]
    if rest:
        for j in range(len(rest) - 1, -1, -1):
            h ^= rest[j] << (8 * j)
        h = h * m & 0xffffffff
    h = (h ^ (h >> 13)) * m & 0xffffffff
    return h ^ (h >> 15)
def part_of(key, n):
    return (murmur2(key) & 0x7fffffff) % n
if __name__ == "__main__":
    print(part_of(sys.argv[1].encode(), int(sys.argv[2])))
PY
mk_part_of() { "$MK_PYTHON" -I "$MK_TMP/murmur2.py" "$1" "$2"; }
# mk_write PATH DATA      one write(2) of DATA (bytes as given)
# mk_write_e PATH DATA    same, with \n \t \xHH \\ escapes decoded first
# mk_write_file PATH FILE one write(2) of the file's contents
# mk_read PATH            the whole file to stdout
mk_write() { mk_py write "$1" "$2"; }
mk_write_e() { mk_py write "$1" "$2" -e; }
mk_write_file() { mk_py writefile "$1" "$2"; }
mk_read() { mk_py read "$1"; }
mk_mkdir() { mk_py mkdir "$1"; }
mk_rmdir() { mk_py rmdir "$1"; }
mk_stat() { mk_py stat "$1"; }
mk_ctl() { mk_write "$MNT/ctl" "$1"; }

# ---- waiting ------------------------------------------------------------

# mk_wait_for SECONDS CMD...: poll CMD until it succeeds; 1 on timeout.
# mk_dump_stuck PID: a daemon that should have exited did not; print every
# thread's stack into the test log (when gdb is there) to say where it waits.
mk_dump_stuck() {
	command -v gdb >/dev/null || return 0
	gdb -p "$1" -batch -ex "thread apply all bt 16" 2>/dev/null |
		grep -E '^(Thread|#)' | sed 's/^/#    stuck: /'
}

mk_wait_for() {
	local secs=$1
	shift
	local i tries=$((secs * 50))
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep 0.02
	done
	"$@"
}

# True when process PID is blocked in a read(2) on file descriptor FD
# (/proc/PID/syscall: syscall number 0 = read on x86-64, then the fd).
mk_blocked_in_read() {
	local pid=$1 fd=$2 sc
	sc=$(cat "/proc/$pid/syscall" 2>/dev/null) || return 1
	set -- $sc
	[ "${1:-}" = 0 ] && [ $(( ${2:-0} )) = "$fd" ]
}

mk_proc_gone() { ! kill -0 "$1" 2>/dev/null; }

# ---- the daemon -------------------------------------------------------

mk_alive() { [ -n "$MK_PID" ] && kill -0 "$MK_PID" 2>/dev/null; }
mk_mounted() { mountpoint -q "$MNT" && [ -e "$MNT/README" ]; }

# mk_mount [INI-TEXT]: write $DATA/minikafka.ini when given, start the daemon
# in the foreground (in the background of this shell), wait until mounted.
mk_mount() {
	if [ $# -gt 0 ]; then
		printf '%s\n' "$1" >"$DATA/minikafka.ini"
	fi
	[ -z "$MK_PID" ] || bail "mk_mount: a daemon is already running ($MK_PID)"
	echo "--- mount" >>"$MK_LOG"
	# MK_MOUNT_OPTS: extra daemon options (e.g. "-o allow_other").
	"$MKFS_BIN" -f ${MK_MOUNT_OPTS:-} "$DATA" "$MNT" >>"$MK_LOG" 2>&1 &
	MK_PID=$!
	local i
	for ((i = 0; i < ${MK_MOUNT_WAIT:-10} * 50; i++)); do
		mk_mounted && return 0
		if ! kill -0 "$MK_PID" 2>/dev/null; then
			wait "$MK_PID"
			local rc=$?
			MK_PID=""
			tail -n 20 "$MK_LOG" | sed 's/^/#    daemon: /'
			bail "daemon exited with status $rc before mounting"
		fi
		sleep 0.02
	done
	tail -n 20 "$MK_LOG" | sed 's/^/#    daemon: /'
	bail "mount did not appear within ${MK_MOUNT_WAIT:-10} s"
}

# Sanitizer reports in the daemon's log are failures. Each part of the log
# is checked once (MK_LOG_SEEN: bytes already checked).
MK_LOG_SEEN=0
mk_check_log() {
	local size
	size=$(stat -c %s "$MK_LOG")
	if tail -c +$((MK_LOG_SEEN + 1)) "$MK_LOG" |
		grep -qE 'AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error:'; then
		tail -c +$((MK_LOG_SEEN + 1)) "$MK_LOG" |
			grep -E -A 12 'AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error:' |
			head -n 60 | sed 's/^/#    daemon: /'
		fail "sanitizer report in the daemon's output"
	fi
	MK_LOG_SEEN=$size
}

# mk_unmount: graceful unmount; waits for the daemon to exit (bounded) and
# checks it exited with status 0.
mk_unmount() {
	[ -n "$MK_PID" ] || bail "mk_unmount: no daemon running"
	local i out
	for ((i = 0; i < 250; i++)); do
		out=$(fusermount3 -u "$MNT" 2>&1) && break
		sleep 0.02       # "Device or resource busy": a reader still closing
	done
	[ $i -lt 250 ] || { note "$out"; bail "fusermount3 -u failed"; }
	for ((i = 0; i < 1500; i++)); do
		kill -0 "$MK_PID" 2>/dev/null || break
		sleep 0.02
	done
	if kill -0 "$MK_PID" 2>/dev/null; then
		mk_dump_stuck "$MK_PID"
		kill -9 "$MK_PID"
		wait "$MK_PID" 2>/dev/null
		MK_PID=""
		bail "daemon did not exit within 30 s of the unmount"
	fi
	wait "$MK_PID"
	local rc=$?
	MK_PID=""
	if [ "$rc" != 0 ]; then
		tail -n 20 "$MK_LOG" | sed 's/^/#    daemon: /'
		fail "daemon exited with status $rc after unmount"
	fi
	mk_check_log
	return 0
}

# mk_kill: SIGKILL the daemon (a real crash), then clear the dead mount.
mk_kill() {
	[ -n "$MK_PID" ] || bail "mk_kill: no daemon running"
	kill -9 "$MK_PID"
	wait "$MK_PID" 2>/dev/null
	MK_PID=""
	fusermount3 -u -z "$MNT" 2>/dev/null
	mk_wait_for 10 eval '! mk_in_mounts' || bail "dead mount not cleared"
	mk_check_log
}

mk_remount() {
	mk_unmount
	mk_mount
}

mk_in_mounts() { grep -q " $MNT " /proc/mounts; }

mk_cleanup() {
	local rc=$?
	trap - EXIT
	# Background helpers the script started (readers, writers) first, so
	# that they hold nothing open on the mount.
	local j
	for j in $(jobs -p); do
		[ "$j" = "$MK_PID" ] || kill -9 "$j" 2>/dev/null
	done
	if [ -n "$MK_PID" ]; then
		fusermount3 -u "$MNT" 2>/dev/null
		local i
		for ((i = 0; i < 250; i++)); do
			kill -0 "$MK_PID" 2>/dev/null || break
			sleep 0.02
		done
		kill -9 "$MK_PID" 2>/dev/null
		wait "$MK_PID" 2>/dev/null
		MK_PID=""
	fi
	if mk_in_mounts; then
		fusermount3 -u -z "$MNT" 2>/dev/null
	fi
	mk_check_log
	if [ "${MK_KEEP:-}" ]; then
		echo "# kept $MK_TMP"
	else
		rm -rf "$MK_TMP"
	fi
	echo "# $MK_NAME: $MK_PASS passed, $MK_FAIL failed, $MK_SKIP skipped"
	if [ "$MK_FAIL" -gt 0 ]; then
		exit 1
	fi
	if [ "$rc" != 0 ]; then
		echo "# $MK_NAME: script exited with status $rc"
		exit "$rc"
	fi
	if [ "$MK_PASS" -eq 0 ]; then
		echo "# $MK_NAME: no assertion ran"
		exit 1
	fi
	exit 0
}
trap mk_cleanup EXIT
# A test runner's timeout sends SIGTERM: exit, so that the EXIT trap cleans up.
trap 'echo "# $MK_NAME: terminated by a signal"; exit 143' TERM INT HUP

# ---- assertions ---------------------------------------------------------

# assert_eq EXPECTED ACTUAL MSG
assert_eq() {
	if [ "$1" == "$2" ]; then
		pass "$3"
	else
		fail "$3"
		note "expected: $(printf '%q' "$1")"
		note "actual:   $(printf '%q' "$2")"
	fi
}

# assert_ne UNEXPECTED ACTUAL MSG
assert_ne() {
	if [ "$1" != "$2" ]; then pass "$3"; else fail "$3 (got $(printf '%q' "$2"))"; fi
}

# assert_match REGEX ACTUAL MSG (bash extended regex, whole-string anchors are yours)
assert_match() {
	if [[ $2 =~ $1 ]]; then
		pass "$3"
	else
		fail "$3"
		note "pattern: $1"
		note "actual:  $(printf '%q' "$2")"
	fi
}

# assert_true MSG CMD...: CMD must succeed.
assert_true() {
	local msg=$1
	shift
	if "$@"; then pass "$msg"; else fail "$msg"; fi
}

# assert_ok MSG CMD...: CMD must succeed; its output is shown on failure.
assert_ok() {
	local msg=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$msg"
	else
		fail "$msg"
		note "output: $(printf '%q' "$out")"
	fi
}

# A command as a short one-line label: the mount prefix dropped, control
# characters shown as spaces, at most 100 characters.
mk_label() {
	local s="$*"
	s=${s//"$MNT"/}
	s=$(printf '%s' "$s" | tr '\n\t' '  ' | cut -c1-100)
	printf '%s' "$s"
}

# assert_fails_with ERRNO-NAME CMD...: CMD (an mk_* helper) must fail and
# name ERRNO-NAME as the last line of its output.
assert_fails_with() {
	local want=$1 out rc last
	shift
	out=$("$@" 2>&1)
	rc=$?
	last=${out##*$'\n'}
	local what
	what=$(mk_label "$@")
	if [ "$rc" != 0 ] && [ "$last" = "$want" ]; then
		pass "$what fails with $want"
	else
		fail "$what should fail with $want (status $rc, last line '$last')"
	fi
}

# assert_files_eq EXPECTED-FILE ACTUAL-FILE MSG: byte-exact comparison.
assert_files_eq() {
	if cmp -s "$1" "$2"; then
		pass "$3"
	else
		fail "$3"
		note "expected ($(wc -c <"$1") bytes):"
		od -c "$1" | head -n 10 | sed 's/^/#      /'
		note "actual ($(wc -c <"$2") bytes):"
		od -c "$2" | head -n 10 | sed 's/^/#      /'
	fi
}

# ---- cluster helpers ------------------------------------------------------

# Read a one-value file (trailing newline stripped).
mk_value() { mk_read "$1"; }

# The number of lines of /errors now; pass to assert_error_since.
mk_errors_mark() { mk_read "$MNT/errors" | wc -l; }

# assert_error_since MARK CODE MSG [PATH-SUBSTRING]: /errors grew since MARK
# and its newest line has CODE (and names PATH-SUBSTRING when given).
# Lines are: TIME_MS PATH CODE MESSAGE.
assert_error_since() {
	local mark=$1 code=$2 msg=$3 path=${4:-} now last
	now=$(mk_read "$MNT/errors" | wc -l)
	last=$(mk_read "$MNT/errors" | tail -n 1)
	local f_path f_code
	f_path=$(printf '%s' "$last" | cut -d' ' -f2)
	f_code=$(printf '%s' "$last" | cut -d' ' -f3)
	if [ "$now" -gt "$mark" ] && [ "$f_code" = "$code" ] &&
		{ [ -z "$path" ] || [[ $f_path == *"$path"* ]]; }; then
		pass "$msg: /errors has $code"
	else
		fail "$msg: /errors should end with a $code line${path:+ naming $path} (lines $mark -> $now)"
		note "last line: $last"
	fi
}

# A partition's state as text: leo, hw, and every record in TSV.
mk_snapshot() {
	local dir="$MNT/topics/$1/$2"
	echo "leo $(mk_read "$dir/leo")"
	echo "hw $(mk_read "$dir/hw")"
	mk_read "$dir/records:tsv"
}

# The active (last) segment .log of topic T partition P on broker B (default 1).
mk_active_log() {
	local d="$DATA/broker-${3:-1}/$1-$2"
	ls "$d"/*.log 2>/dev/null | sort | tail -n 1
}

# The size of the valid prefix of a segment file: whole Kafka RecordBatch
# v2 batches (i64 baseOffset | i32 batchLength | i32 epoch | i8 magic 2 |
# u32 CRC-32C of the rest | ...) from byte 0. The CRC-32C is computed here
# in Python (the standard library has none).
MK_BATCH_WALK='
import struct, sys
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
def batches(d, check):
    pos = 0
    while pos + 61 <= len(d) and d[pos + 16] == 2:
        n = struct.unpack(">i", d[pos + 8:pos + 12])[0]
        crc = struct.unpack(">I", d[pos + 17:pos + 21])[0]
        if n < 49 or pos + 12 + n > len(d):
            break
        if check and crc32c(d[pos + 21:pos + 12 + n]) != crc:
            break
        yield pos, 12 + n
        pos += 12 + n
'
mk_valid_size() {
	"$MK_PYTHON" -c "$MK_BATCH_WALK"'
d = open(sys.argv[1], "rb").read()
end = 0
for pos, n in batches(d, True):
    end = pos + n
print(end)' "$1"
}

# The number of whole batches in a segment file.
mk_frame_count() {
	"$MK_PYTHON" -c "$MK_BATCH_WALK"'
d = open(sys.argv[1], "rb").read()
print(sum(1 for _ in batches(d, False)))' "$1"
}

# file size in bytes
mk_size() { stat -c %s "$1"; }

# ---- the durability workload (crashpoints.sh, random_kill.sh) -----------------
# Two brokers replicating in auto mode on 1 KiB segments, for
# tests/fs/durability.py's workload.
MK_DURABILITY_INI='[cluster]
brokers = 1,2
default.replication.factor = 2
min.insync.replicas = 1
[replication]
mode = auto
fetch.interval.ms = 2
replica.lag.time.max.ms = 60000
[log]
segment.bytes = 1024'

mk_drv() { "$MK_PYTHON" -I "$MKFS_SRC/tests/fs/durability.py" "$@"; }

# mk_durability_check ACKS: on a fresh mount after a crash or kill, bring
# every broker back (normalize) and check that every record acknowledged
# in ACKS is there exactly once, offsets contiguous, epoch caches
# increasing ($MK_TMP/epochs keeps the last ones seen), metadata = the
# directories. Status of the check; what failed in MK_CHECK_OUT.
mk_durability_check() {
	mk_drv normalize "$MNT" >/dev/null
	MK_CHECK_OUT=$(mk_drv check "$MNT" "$DATA" "$1" "$MK_TMP/epochs")
}
