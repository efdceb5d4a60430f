#!/usr/bin/env bash
# transactions.sh — transactions as files (docs/filesystem.md 5, issue 10): /transactions
# and its files and errnos, the visibility matrix of records and
# records:committed (open, committed, aborted, interleaved with plain
# writes, two transactions on one partition), the LSO, markers hidden,
# offsets committed only with the transaction, poll:committed, fencing of
# old descriptors by init (ESTALE), timeouts by /ctl expire-transactions on
# the manual clock, a remount, and kill -9 (a failpoint) between prepare and
# markers and between markers and complete, finished by the next mount.
. "$(dirname "$0")/lib.sh"

INI='[cluster]
clock = manual
[producer]
linger.ms = 0
transaction.timeout.ms = 5000'
T=$MNT/transactions
P0=$MNT/topics/t/0
P1=$MNT/topics/t/1

mk_mount "$INI"
mk_ctl "create-topic t partitions=2"

lso_hw() { echo "$(mk_read "$1/lso") $(mk_read "$1/hw")"; }
vals() { mk_read "$1" | tr '\n' ' ' | sed 's/ $//'; }

# ---- ids ------------------------------------------------------------------------
assert_eq "" "$(ls "$T")" "no transactional id at first"
assert_eq "" "$(ls "$MNT/topics" | grep __transaction_state)" "no transaction log before the first id"
mark=$(mk_errors_mark)
assert_ok "mkdir /transactions/tx" mk_mkdir "$T/tx"
assert_eq "$mark" "$(mk_errors_mark)" "mkdir leaves no /errors line (the lookup before it is not an error)"
assert_fails_with ENOENT mk_read "$T/nope/state"
assert_match "no transactional id 'nope' \(mkdir transactions/nope creates it\)" \
	"$(mk_read "$MNT/errors" | tail -n 1)" "/errors says how to make a missing id"
assert_eq "__transaction_state t" "$(ls "$MNT/topics" | tr '\n' ' ' | sed 's/ $//')" \
	"the first id creates __transaction_state"
assert_eq "abort commit epoch init offsets partitions producer_id state" \
	"$(ls "$T/tx" | tr '\n' ' ' | sed 's/ $//')" "ls /transactions/tx"
assert_fails_with EEXIST mk_mkdir "$T/tx"
assert_fails_with EINVAL mk_mkdir "$T/a:b"
assert_fails_with ENOENT mk_write "$P0/append:txn=nope" "x"
assert_fails_with EINVAL mk_write "$P0/append:txn=tx:producer=p" "x"
assert_fails_with EINVAL mk_write "$P0/append:txn=tx:acks=1" "x"
assert_fails_with EPERM mk_write "$MNT/topics/__transaction_state/0/append" "x"
assert_eq "Empty" "$(mk_read "$T/tx/state")" "a new id is Empty"
assert_eq "0" "$(mk_read "$T/tx/epoch")" "at epoch 0"
assert_eq "1099511627776" "$(mk_read "$T/tx/producer_id")" "with the first transactional producer id (2^40)"
assert_ok "commit with nothing open does nothing" mk_write "$T/tx/commit" "1"
assert_eq "Empty" "$(mk_read "$T/tx/state")" "  ... still Empty"
assert_fails_with EINVAL mk_write "$T/tx/commit" "now"
assert_match "transaction.timeout.ms = 5000" "$(mk_read "$MNT/config")" "/config shows transaction.timeout.ms"

# ---- the visibility matrix ---------------------------------------------------------
mk_write_e "$P0/append" 'p1\n' >/dev/null
assert_ok "append:txn=tx" mk_write_e "$P0/append:txn=tx" 't1\nt2\n'
assert_eq "Ongoing" "$(mk_read "$T/tx/state")" "the first write begins a transaction"
assert_eq "t/0" "$(mk_read "$T/tx/partitions")" "  ... and registers its partition"
mk_write_e "$P0/append" 'p2\n' >/dev/null
assert_eq "1 4" "$(lso_hw "$P0")" "open: the LSO stays at the transaction's first offset"
assert_eq "p1 t1 t2 p2" "$(vals "$P0/records")" "open: records shows everything (read_uncommitted)"
assert_eq "p1" "$(vals "$P0/records:committed")" "open: records:committed stops at the LSO"
assert_eq "p1" "$(vals "$P0/records@-10:committed")" "open: records@-N:committed counts back from the LSO"
assert_fails_with EBUSY mk_rmdir "$T/tx"
assert_ok "commit" mk_write "$T/tx/commit" "1"
assert_eq "CompleteCommit" "$(mk_read "$T/tx/state")" "committed"
assert_eq "" "$(mk_read "$T/tx/partitions")" "  ... no partition left"
assert_eq "5 5" "$(lso_hw "$P0")" "committed: the marker took offset 4, LSO = HW"
assert_eq "p1 t1 t2 p2" "$(vals "$P0/records:committed")" "committed: records:committed shows it"
assert_eq "p1 t1 t2 p2" "$(vals "$P0/records")" "  ... and the marker is never shown"
assert_eq "" "$(mk_read "$P0/records@4")" "records@MARKER: nothing"
assert_match '^4 4 1 .* true commit ' "$(mk_read "$P0/batches" | tail -n 1)" \
	"batches lists the marker batch at offset 4 (the log as stored)"

# Two transactions on one partition, interleaved with a plain write.
assert_ok "mkdir /transactions/ty" mk_mkdir "$T/ty"
mk_write_e "$P0/append:txn=tx" 'x1\n' >/dev/null      # offset 5
mk_write_e "$P0/append:txn=ty" 'y1\n' >/dev/null      # 6
mk_write_e "$P0/append" 'p3\n' >/dev/null             # 7
mk_write_e "$P0/append:txn=tx" 'x2\n' >/dev/null      # 8
assert_eq "5 9" "$(lso_hw "$P0")" "two open: the LSO is the older one's first offset"
assert_ok "abort tx" mk_write "$T/tx/abort" "1"         # marker 9
assert_eq "CompleteAbort" "$(mk_read "$T/tx/state")" "aborted"
assert_eq "6 10" "$(lso_hw "$P0")" "tx aborted: the LSO moves to ty's first offset"
assert_eq "p1 t1 t2 p2" "$(vals "$P0/records:committed")" "records:committed stops before ty"
assert_ok "commit ty (an empty line)" mk_write_e "$T/ty/commit" "\n"   # marker 10
assert_eq "11 11" "$(lso_hw "$P0")" "none open: LSO = HW"
assert_eq "p1 t1 t2 p2 y1 p3" "$(vals "$P0/records:committed")" \
	"records:committed: tx's aborted records hidden, ty's and the plain ones shown"
assert_eq "p1 t1 t2 p2 x1 y1 p3 x2" "$(vals "$P0/records")" "records shows aborted data (read_uncommitted)"
assert_eq $'6\t' "$(mk_read "$P0/records@6:committed:tsv" | head -n 1 | cut -f1 | sed 's/$/\t/')" \
	"records@6:committed:tsv starts at y1 (offset 6)"
assert_eq "y1 p3" "$(vals "$P0/records@5:committed")" "records@5:committed skips the aborted x1"
assert_eq "p1 t1 t2 p2 x1 y1 p3 x2" "$(vals "$MNT/brokers/1/logs/t/0/records")" \
	"the broker's own log view shows data, never markers"

# A topic append in a transaction; the next write begins the next one.
assert_ok "topic append:txn=tx (keyed)" mk_write_e "$MNT/topics/t/append:txn=tx:tsv" 'k0\tv0\nk1\tv1\nk2\tv2\n'
assert_eq "Ongoing" "$(mk_read "$T/tx/state")" "the next write begins the next transaction"
parts=$(mk_read "$T/tx/partitions" | tr '\n' ' ' | sed 's/ $//')
assert_match '^t/[01]( t/[01])?$' "$parts" "partitions lists where the topic append went"
assert_ok "commit" mk_write "$T/tx/commit" "1"
assert_eq "3" "$( (mk_read "$P0/records:committed:tsv"; mk_read "$P1/records:committed:tsv") | grep -c $'\tk[0-9]\tv')" \
	"all three keyed records committed"

# ---- offsets with the transaction, poll:committed ---------------------------------
G=$MNT/groups/g
mk_mkdir "$G"
mk_write "$G/join" "m1 t" >/dev/null
assert_fails_with ENOENT mk_write "$T/tx/offsets" "nope t/0 1"
assert_fails_with ENOENT mk_write "$T/tx/offsets" "g t/9 1"
assert_fails_with EINVAL mk_write "$T/tx/offsets" "g t/0"
assert_fails_with EINVAL mk_write "$T/tx/offsets" "g t/0 -1"
assert_ok "stage g t/1 1" mk_write "$T/tx/offsets" "g t/1 1"
assert_eq "Ongoing" "$(mk_read "$T/tx/state")" "staging offsets begins a transaction"
assert_eq "g t/1 1" "$(mk_read "$T/tx/offsets")" "offsets reads back what is staged"
assert_ok "stage two lines at once" mk_write_e "$T/tx/offsets" 'g t/0 3\ng t/1 2\n'
assert_eq $'g t/0 3\ng t/1 2' "$(mk_read "$T/tx/offsets")" "a later offset replaces the earlier"
assert_eq "" "$(mk_read "$G/offsets")" "nothing committed to the group yet"
mk_write_e "$P1/append:txn=tx" 'open1\n' >/dev/null
assert_ok "abort" mk_write "$T/tx/abort" "1"
assert_eq "" "$(mk_read "$G/offsets")" "aborted: the staged offsets were not committed"
assert_eq "" "$(mk_read "$T/tx/offsets")" "  ... and are gone"
assert_ok "stage again" mk_write_e "$T/tx/offsets" 'g t/0 3\ng t/1 2\n'
mk_write_e "$P1/append:txn=tx" 'done1\n' >/dev/null
assert_ok "commit" mk_write "$T/tx/commit" "1"
assert_eq $'t 0 3\nt 1 2' "$(mk_read "$G/offsets")" "committed with the transaction"
# The member polls with read_committed: nothing of an open or aborted one.
mk_write "$G/members/m1/seek" "t/1 0" >/dev/null
mk_write_e "$P1/append:txn=ty" 'pending\n' >/dev/null
out=$(mk_read "$G/members/m1/poll:committed" | grep -E '^(open1|done1|pending)$' | tr '\n' ' ')
assert_eq "done1 " "$out" "poll:committed: the committed record only (open1 aborted, pending open)"
mk_write "$T/ty/abort" "1" >/dev/null

# ---- fencing by init -------------------------------------------------------------
out=$("$MK_PYTHON" - "$P0/append:txn=tx" "$T/tx/init" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.write(fd, b"zombie1\n")
i = os.open(sys.argv[2], os.O_WRONLY)
os.write(i, b"1\n")
os.close(i)
try:
    os.write(fd, b"zombie2\n")
    print("written")
except OSError as e:
    print(errno.errorcode[e.errno])
try:
    os.close(fd)
except OSError:
    pass
PY
)
assert_eq "ESTALE" "$out" "a descriptor opened before init is fenced (ESTALE)"
assert_eq "1" "$(mk_read "$T/tx/epoch")" "init bumped the epoch"
assert_eq "CompleteAbort" "$(mk_read "$T/tx/state")" "init aborted the open transaction"
assert_eq "" "$(mk_read "$P0/records:committed" | grep zombie)" "the zombie's record is not committed"
assert_ok "a new descriptor writes" mk_write_e "$P0/append:txn=tx" 'fresh\n'
assert_ok "commit" mk_write "$T/tx/commit" "1"
assert_eq "fresh" "$(mk_read "$P0/records:committed" | tail -n 1)" "the new epoch's record is committed"

# ---- timeout ------------------------------------------------------------------------
mk_write_e "$P1/append:txn=tx" 'slow\n' >/dev/null
mk_write "$MNT/clock" "+4999" >/dev/null
mk_ctl "expire-transactions"
assert_eq "Ongoing" "$(mk_read "$T/tx/state")" "not expired before transaction.timeout.ms"
mk_write "$MNT/clock" "+1" >/dev/null
assert_ok "/ctl expire-transactions" mk_ctl "expire-transactions"
assert_eq "CompleteAbort" "$(mk_read "$T/tx/state")" "expired: aborted"
assert_eq "2" "$(mk_read "$T/tx/epoch")" "  ... with the epoch bumped"
assert_eq "$(mk_read "$P1/hw")" "$(mk_read "$P1/lso")" "  ... and the LSO released"

# ---- remount ------------------------------------------------------------------------
committed0=$(vals "$P0/records:committed")
mk_write_e "$P0/append:txn=ty" 'across\n' >/dev/null
mk_remount
assert_eq "tx ty" "$(ls "$T" | tr '\n' ' ' | sed 's/ $//')" "ids survive a remount"
assert_eq "2" "$(mk_read "$T/tx/epoch")" "  ... with their epochs"
assert_eq "Ongoing" "$(mk_read "$T/ty/state")" "an open transaction stays open across a remount"
assert_eq "$committed0" "$(vals "$P0/records:committed")" "records:committed is the same after a remount"
mk_write "$T/ty/commit" "1" >/dev/null
assert_eq "$committed0 across" "$(vals "$P0/records:committed")" "the transaction opened before the remount commits"
assert_ok "rmdir ty" mk_rmdir "$T/ty"
assert_eq "tx" "$(ls "$T")" "rmdir removed it"
mk_unmount

# ---- kill -9 between the steps of an end ------------------------------------------
# The daemon is armed to die at a point of the commit; the next mount
# finishes the transaction: markers on both partitions, the offsets, Complete.
tx_state_is() { [ "$(mk_read "$T/tx/state")" = "$1" ]; }
crash_commit_at() {
	local point=$1
	MKFS_FAILPOINTS=$point mk_mount
	mk_write_e "$P0/append:txn=tx" "c0-$point\n" >/dev/null
	mk_write_e "$P1/append:txn=tx" "c1-$point\n" >/dev/null
	mk_write "$T/tx/offsets" "g t/1 $(mk_read "$P1/hw")" >/dev/null
	local want=$(mk_read "$P1/hw")
	mk_write "$T/tx/commit" "1" >/dev/null 2>&1
	mk_wait_for 10 mk_proc_gone "$MK_PID" || bail "$point: the daemon did not die"
	wait "$MK_PID" 2>/dev/null
	MK_PID=""
	fusermount3 -u -z "$MNT" 2>/dev/null
	mk_wait_for 10 eval '! mk_in_mounts' || bail "dead mount not cleared"
	mk_mount
	# Recovery runs in the background once the mount is up: await it.
	assert_true "$point: the mount finishes the commit" mk_wait_for 30 tx_state_is CompleteCommit
	assert_eq "c0-$point" "$(mk_read "$P0/records:committed" | tail -n 1)" "$point: t/0 committed"
	assert_eq "c1-$point" "$(mk_read "$P1/records:committed" | tail -n 1)" "$point: t/1 committed"
	assert_eq "$(mk_read "$P0/hw") $(mk_read "$P1/hw")" "$(mk_read "$P0/lso") $(mk_read "$P1/lso")" \
		"$point: LSO = HW on both partitions"
	assert_eq "t 1 $want" "$(mk_read "$G/offsets" | grep '^t 1')" "$point: the offsets were committed"
	mk_unmount
}
crash_commit_at txn.end.after-prepare
crash_commit_at txn.end.after-marker
crash_commit_at txn.end.after-offsets

# A kill before prepare: the transaction stays open after the mount.
mk_mount
mk_write "$G/join" "m1 t" >/dev/null
mk_write_e "$P0/append:txn=tx" 'unended\n' >/dev/null
mk_kill
mk_mount
assert_eq "Ongoing" "$(mk_read "$T/tx/state")" "killed before the end: still Ongoing"
assert_ne "$(mk_read "$P0/hw")" "$(mk_read "$P0/lso")" "  ... and the LSO still held"
mk_write "$T/tx/abort" "1" >/dev/null
assert_eq "" "$(mk_read "$P0/records:committed" | grep unended)" "  ... then aborted, hidden"
mk_unmount

# ---- the background tick in auto mode -------------------------------------------
# System clock, mode = auto: an open transaction older than
# transaction.timeout.ms is aborted without any command (awaited by polling).
mk_mount '[replication]
mode = auto
[producer]
transaction.timeout.ms = 200'
epoch=$(mk_read "$T/tx/epoch")
mk_write_e "$P0/append:txn=tx" 'forgotten\n' >/dev/null
assert_eq "Ongoing" "$(mk_read "$T/tx/state")" "auto mode: a transaction begins"
tick_aborted() { [ "$(mk_read "$T/tx/state")" = CompleteAbort ]; }
assert_true "auto mode: the background tick aborts it after transaction.timeout.ms" \
	mk_wait_for 20 tick_aborted
assert_eq "$((epoch + 1))" "$(mk_read "$T/tx/epoch")" "  ... bumping the epoch"
assert_eq "$(mk_read "$P0/hw")" "$(mk_read "$P0/lso")" "  ... and releasing the LSO"
mk_unmount

# ---- recovery of a replicated transaction ------------------------------------------
# Two brokers, auto mode, RF 2: the markers the mount writes wait for the
# followers, whose fetchers start with the mount; recovery runs once they do.
rm -rf "$DATA" && mkdir -p "$DATA"
RINI='[cluster]
brokers = 1,2
default.replication.factor = 2
[replication]
mode = auto'
MKFS_FAILPOINTS=txn.end.after-prepare mk_mount "$RINI"
mk_ctl "create-topic r partitions=1"
mk_mkdir "$T/tx"
mk_write_e "$MNT/topics/r/0/append:txn=tx" 'replicated\n' >/dev/null
mk_write "$T/tx/commit" "1" >/dev/null 2>&1
mk_wait_for 10 mk_proc_gone "$MK_PID" || bail "the daemon did not die at txn.end.after-prepare"
wait "$MK_PID" 2>/dev/null
MK_PID=""
fusermount3 -u -z "$MNT" 2>/dev/null
mk_wait_for 10 eval '! mk_in_mounts' || bail "dead mount not cleared"
mk_mount
assert_true "RF 2: the mount finishes the prepared commit" mk_wait_for 20 tx_state_is CompleteCommit
assert_eq "replicated" "$(mk_read "$MNT/topics/r/0/records:committed")" "RF 2: the record is committed"
assert_eq "$(mk_read "$MNT/topics/r/0/hw")" "$(mk_read "$MNT/topics/r/0/lso")" "RF 2: LSO = HW"
mk_unmount
