#!/usr/bin/env bash
# mount.sh — the daemon as mount(8) runs it (docs/filesystem.md 1).
#
#   - `minikafkafs DATA MNT -o rw,dev,suid,nofail,_netdev,...`: the operand
#     order and options mount.fuse3 passes (options after the operands),
#     fstab-only options ignored; /proc/mounts shows DATA as the source and
#     the type fuse.minikafkafs
#   - a real `mount -t fuse.minikafkafs DATA MNT` and an /etc/fstab line,
#     as root in a private mount namespace: mount(8) runs its helper with
#     the default PATH, so a directory holding the built binary is bound
#     over /usr/local/sbin there (the system is left untouched)
. "$(dirname "$0")/lib.sh"

# ---- the argument order of mount.fuse3, run directly -----------------------------
"$MKFS_BIN" "$DATA" "$MNT" -o rw,dev,suid,nofail,_netdev,noauto,defaults,user >>"$MK_LOG" 2>&1
rc=$?
assert_eq 0 "$rc" "minikafkafs DATA MNT -o rw,dev,suid,nofail,_netdev,noauto,defaults,user starts"
if [ "$rc" = 0 ]; then
	mk_wait_for 10 mk_mounted || fail "the mount appeared"
	assert_match "^$DATA $MNT fuse.minikafkafs rw" "$(grep " $MNT " /proc/mounts)" \
		"/proc/mounts: DATA MNT fuse.minikafkafs"
	mk_mkdir "$MNT/topics/t" || fail "mkdir topics/t"
	mk_write "$MNT/topics/t/0/append" $'hello\n' || fail "append"
	assert_eq "hello" "$(mk_read "$MNT/topics/t/0/records")" "it serves"
	fusermount3 -u "$MNT" || fail "fusermount3 -u"
fi
# The daemonized process is not our child: wait for it to close the data
# directory (its command line names this test's unique directory).
# An exiting process drops its command line before it closes its files, so
# the data directory's lock is the last word: it must be free too.
daemon_gone() {
	! grep -lsF -- "$1" /proc/[0-9]*/cmdline >/dev/null 2>&1 &&
		flock -n "$1" true
}
mk_wait_for 20 daemon_gone "$DATA" || fail "the daemon exited after the unmount"

# ---- mount -t fuse.minikafkafs and fstab, as root -----------------------------------
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
	skip "mount -t fuse.minikafkafs needs root and unshare -m"
	exit 0
fi
mkdir -p "$MK_TMP/bin" "$MK_TMP/data2"
ln -s "$MKFS_BIN" "$MK_TMP/bin/minikafkafs"
echo "$MK_TMP/data2 $MNT fuse.minikafkafs defaults,nofail,_netdev,noauto 0 0" >"$MK_TMP/fstab"
out=$(unshare -m --propagation private bash -c '
	set -u
	bin=$1 data=$2 mnt=$3 fstab=$4
	mount --bind "$bin" /usr/local/sbin || exit 2
	trap "umount \"$mnt\" 2>/dev/null" EXIT
	mount -t fuse.minikafkafs -o rw,nofail,_netdev "$data" "$mnt" || { echo "mount -t failed"; exit 1; }
	echo "mounts: $(grep " $mnt " /proc/mounts | cut -d" " -f1-3)"
	echo "records: $(cat "$mnt/topics/t/0/records")"
	umount "$mnt" || { echo "umount failed"; exit 1; }
	mount -T "$fstab" "$mnt" || { echo "fstab mount failed"; exit 1; }
	echo "fstab: $(grep " $mnt " /proc/mounts | cut -d" " -f1-3)"
	ls "$mnt/topics" >/dev/null && echo "fstab ls: ok"
	umount "$mnt" || { echo "umount failed"; exit 1; }
' mountsh "$MK_TMP/bin" "$DATA" "$MNT" "$MK_TMP/fstab" 2>&1)
rc=$?
note "$(printf '%s' "$out" | tr '\n' '|')"
assert_eq 0 "$rc" "mount -t fuse.minikafkafs and the fstab line mount and unmount"
assert_match "mounts: $DATA $MNT fuse.minikafkafs" "$out" "mount -t fuse.minikafkafs DATA MNT"
assert_match "records: hello" "$out" "the data directory mounted by mount(8) has the record"
assert_match "fstab: $MK_TMP/data2 $MNT fuse.minikafkafs" "$out" "the /etc/fstab line mounts"
assert_match "fstab ls: ok" "$out" "the fstab mount serves"
mk_wait_for 20 daemon_gone "$DATA" || fail "the mount -t daemon exited"
mk_wait_for 20 daemon_gone "$MK_TMP/data2" || fail "the fstab daemon exited"
