#!/usr/bin/env bash
# limits.sh — bad input and permissions (docs/filesystem.md, "Limits and
# refusals"): /clock bounds, a line over message.max.bytes refused by the
# write that carries it, name limits, duplicate or malformed keys in control
# commands, the operations the tree refuses (unlink, rename, chmod, ...),
# and -o allow_other: other users are held to the files' modes.
. "$(dirname "$0")/lib.sh"

mk_mount '[cluster]
clock = manual'
mk_ctl "create-topic t" || bail "create-topic t"
P=$MNT/topics/t/0

# ---- /clock bounds ------------------------------------------------------------------
assert_fails_with EINVAL mk_write "$MNT/clock" "9223372036854775807"
assert_fails_with EINVAL mk_write "$MNT/clock" "253402300800000"
assert_fails_with EINVAL mk_write "$MNT/clock" "+9223372036854775807"
assert_eq "0" "$(mk_read "$MNT/clock")" "refused clock moves change nothing"
assert_ok "the largest clock (year 9999) is accepted" mk_write "$MNT/clock" "253402300799999"
assert_fails_with EINVAL mk_write "$MNT/clock" "+1"
assert_eq "253402300799999" "$(mk_read "$MNT/clock")" "and nothing moves it past"

# ---- a line over message.max.bytes -------------------------------------------------
cat >"$MK_TMP/long.py" <<'PY'
# One write(2) of an unterminated line of N bytes; prints the count written
# or the errno name.
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    print(os.write(fd, b"x" * int(sys.argv[2])))
except OSError as e:
    print(errno.errorcode[e.errno])
try:
    os.close(fd)
    print("closed")
except OSError as e:
    print("close " + errno.errorcode[e.errno])
PY
long() { "$MK_PYTHON" -I "$MK_TMP/long.py" "$@"; }
assert_eq $'EMSGSIZE\nclosed' "$(long "$P/append" 1572864)" \
	"a 1.5 MiB line in one write: EMSGSIZE from that write (not a short write), nothing left for close"
assert_eq $'EMSGSIZE\nclosed' "$(long "$P/append" 1048576)" \
	"a 1 MiB line that cannot fit a batch: EMSGSIZE from its write"
assert_eq "0" "$(mk_read "$P/leo")" "nothing appended"
assert_eq $'1000\nclosed' "$(long "$P/append" 1000)" "a short unterminated line is still carried to close"
assert_eq "1" "$(mk_read "$P/leo")" "and appended there"

# ---- name limits -----------------------------------------------------------------------
n256=$(printf 'a%.0s' {1..256})
assert_fails_with EINVAL mk_stat "$MNT/topics/$n256"
assert_fails_with EINVAL mk_stat "$MNT/$n256"
assert_fails_with EINVAL mk_mkdir "$MNT/topics/$n256"
assert_fails_with EINVAL mk_read "$P/records:format=$n256"
assert_fails_with ENOENT mk_stat "$MNT/topics/$(printf 'a%.0s' {1..255})"

# ---- control commands: duplicate and malformed keys -----------------------------------
assert_fails_with EINVAL mk_ctl "create-topic d partitions=1 partitions=2"
assert_fails_with EINVAL mk_ctl "create-topic d retention.ms=1 retention.ms=2"
assert_fails_with EINVAL mk_ctl "create-topic d no.such.key=1"
assert_fails_with ENOENT mk_stat "$MNT/topics/d"
assert_fails_with EINVAL mk_write "$MNT/topics/t/config" "retention.ms=1 retention.ms=2"
assert_fails_with EINVAL mk_write "$MNT/brokers/1/promote" "t/00"
assert_fails_with EINVAL mk_write "$MNT/brokers/1/promote" "t/+0"
assert_fails_with EINVAL mk_write "$MNT/brokers/1/crash" "sideways"
assert_ok "promote t/0 still works" mk_write "$MNT/brokers/1/promote" "t/0"
assert_match "INVALID_REQUEST .*given twice" "$(mk_read "$MNT/errors")" "/errors names the duplicate key"
# The same in the group files: a key or partition given twice, a
# partition not written as the tree names it.
mk_mkdir "$MNT/groups/g" || bail "mkdir /groups/g"
mk_write "$MNT/groups/g/join" "m1 t" || bail "join m1 t"
G=$MNT/groups/g
assert_fails_with EINVAL mk_write "$G/config" "session.timeout.ms=1000 session.timeout.ms=2000"
assert_fails_with EINVAL mk_write "$G/config" "no.such.key=1"
assert_fails_with EINVAL mk_write "$G/members/m1/seek" "t/00 0"
assert_fails_with EINVAL mk_write "$G/members/m1/commit" $'t/0 0\nt/0 0'
assert_fails_with EINVAL mk_write "$G/members/m1/commit" $'generation=1\ngeneration=1'
assert_eq "" "$(mk_read "$G/offsets")" "the refused commits committed nothing"
assert_ok "a well-formed commit still works" mk_write "$G/members/m1/commit" "t/0 0"

# ---- what the tree refuses ---------------------------------------------------------------
cat >"$MK_TMP/refuse.py" <<'PY'
# Try one operation; print the errno name, or "ok".
import errno, os, sys
op, a = sys.argv[1], sys.argv[2:]
try:
    if op == "unlink": os.unlink(a[0])
    elif op == "rename": os.rename(a[0], a[1])
    elif op == "chmod": os.chmod(a[0], 0o777)
    elif op == "chown": os.chown(a[0], 1, 1)
    elif op == "truncate": os.truncate(a[0], int(a[1]))
    elif op == "symlink": os.symlink("/etc/passwd", a[0])
    elif op == "link": os.link(a[0], a[1])
    elif op == "mknod": os.mknod(a[0])
    elif op == "creat": os.close(os.open(a[0], os.O_WRONLY | os.O_CREAT, 0o644))
    elif op == "otrunc": os.close(os.open(a[0], os.O_WRONLY | os.O_TRUNC))
    elif op == "utime": os.utime(a[0])
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
refuse() { "$MK_PYTHON" -I "$MK_TMP/refuse.py" "$@"; }
assert_eq EPERM "$(refuse unlink "$P/leo")" "unlink: EPERM"
assert_eq EPERM "$(refuse rename "$MNT/topics/t" "$MNT/topics/u")" "rename: EPERM"
assert_eq EPERM "$(refuse chmod "$MNT/ctl")" "chmod: EPERM"
assert_eq EPERM "$(refuse chown "$P/append")" "chown: EPERM"
assert_eq EPERM "$(refuse truncate "$P/append" 5)" "truncate to a size: EPERM"
assert_eq EPERM "$(refuse symlink "$MNT/topics/t/s")" "symlink: EPERM"
assert_eq EPERM "$(refuse link "$P/leo" "$MNT/topics/t/l")" "link: EPERM"
assert_eq EPERM "$(refuse mknod "$MNT/topics/t/n")" "mknod: EPERM"
assert_eq EPERM "$(refuse creat "$MNT/topics/t/new")" "creating a file: EPERM"
assert_eq ok "$(refuse otrunc "$P/append")" "O_TRUNC on an append file (what > does) is accepted"
assert_eq ok "$(refuse utime "$P/append")" "touch is accepted"
assert_eq "1" "$(mk_read "$P/leo")" "none of them changed the log"
mk_unmount

# ---- -o allow_other: other users obey the modes --------------------------------------------
chmod 755 "$MK_TMP"
MK_MOUNT_OPTS="-o allow_other" mk_mount
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
as_nobody() { $NOBODY "$MK_PYTHON" -I "$MK_TMP/mkio.py" "$@"; }
assert_eq "1" "$(as_nobody read "$P/leo")" "another user reads value files"
assert_eq "EACCES" "$(as_nobody write "$MNT/ctl" "create-topic x" | tail -1)" "another user cannot write /ctl"
assert_eq "EACCES" "$(as_nobody write "$MNT/brokers/1/crash" "" | tail -1)" "nor crash a broker"
assert_eq "EACCES" "$(as_nobody write "$MNT/clock" "+1" | tail -1)" "nor move the clock"
assert_eq "EACCES" "$(as_nobody write "$MNT/topics/t/config" "retention.ms=1" | tail -1)" "nor configure a topic"
assert_eq "EACCES" "$(as_nobody mkdir "$MNT/topics/x" | tail -1)" "nor create a topic with mkdir"
assert_eq "EACCES" "$(as_nobody rmdir "$MNT/topics/t" | tail -1)" "nor delete one with rmdir"
assert_ok "but appends (mode 0666) are open to all" as_nobody write "$P/append" $'from-nobody\n'
assert_eq "2" "$(mk_read "$P/leo")" "the append landed; the refusals changed nothing"
assert_eq "online" "$(mk_read "$MNT/brokers/1/state")" "broker 1 is still online"
assert_ok "the owner still controls the cluster" mk_ctl "create-topic mine"
mk_unmount
