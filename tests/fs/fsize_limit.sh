#!/usr/bin/env bash
# fsize_limit.sh — a file size limit on the daemon (ulimit -f, RLIMIT_FSIZE)
# is a storage error like a full disk, not the daemon's death: a write that
# starts past the limit raises SIGXFSZ, which the daemon ignores, so the
# write fails with EFBIG; the append that hit it fails with EIO, /errors
# says KAFKA_STORAGE_ERROR, the partition goes offline, the daemon goes on
# serving and unmounts cleanly, and a remount recovers what was appended.
# (Before, the signal's default action killed the daemon: the mount was
# gone, ECONNABORTED, at the first write past the limit.)
. "$(dirname "$0")/lib.sh"

command -v prlimit >/dev/null || bail "prlimit (util-linux) not found"

mk_mount
assert_ok "create-topic z" mk_ctl "create-topic z"
P=$MNT/topics/z/0
# 1500 records of 100 bytes: about 185 KB of log a write. Under a limit of
# 300000 bytes the first fits; the second's runway stops short at the
# limit, and so does its own write, whose rest then starts at the limit.
DATAFILE=$MK_TMP/records
"$MK_PYTHON" -c 'print("\n".join("r%06d-%s" % (i, "y" * 92) for i in range(1500)))' >"$DATAFILE"
# The soft limit only: the hard one stays, so that it can be lifted again.
assert_ok "RLIMIT_FSIZE 300000 on the daemon" prlimit --fsize=300000: --pid "$MK_PID"
mark=$(mk_errors_mark)
assert_ok "the first append" mk_write_file "$P/append" "$DATAFILE"
assert_eq "1500" "$(mk_read "$P/leo")" "1500 records"
assert_fails_with EIO mk_write_file "$P/append" "$DATAFILE"
assert_true "the daemon is alive after the limit" mk_alive
assert_true "/errors has the storage error" \
	sh -c "'$MK_PYTHON' -I '$MK_TMP/mkio.py' read '$MNT/errors' | tail -n +$((mark + 1)) | grep -q ' KAFKA_STORAGE_ERROR '"
assert_fails_with EHOSTDOWN mk_write "$P/append" $'after\n'
assert_ok "the mount still serves" mk_read "$MNT/README"
assert_ok "a second topic can be made" mk_ctl "create-topic other"

assert_ok "no limit" prlimit --fsize=unlimited: --pid "$MK_PID"
mk_unmount
# The replica's log recovers at the next mount; its partition stays
# without a leader (docs/filesystem.md: storage errors) until a promotion
# (manual mode) makes its in-sync replica the leader again.
mk_mount
assert_eq "none" "$(mk_read "$P/leader")" "after a remount: still no leader"
assert_ok "promote z/0" mk_write "$MNT/brokers/1/promote" "z/0"
assert_eq "1" "$(mk_read "$P/leader")" "broker 1 leads again"
assert_eq "1500" "$(mk_read "$P/leo")" "the first append's 1500 records, recovered"
assert_eq "r001499-$(printf 'y%.0s' $(seq 92))" \
	"$(mk_read "$P/records@1499" | tail -n 1)" "and the last of them reads back"
mk_unmount
