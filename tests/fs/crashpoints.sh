#!/usr/bin/env bash
# crashpoints.sh — every named crash point, armed in turn under load
# (issue 12 point 3; docs/filesystem.md "Crash points").
#
# A first run of the workload (durability.py: acks=all batches, small
# segments, broker crashes and restarts, promotions, topic creation and
# deletion) records the points it passes (MKFS_FAILPOINT_TRACE). Then, for
# each point, a fresh data directory, a daemon started with
# MKFS_FAILPOINTS=POINT@K (K: the first hit, and the middle one of the hits
# the first run saw, so that there is data around it) and the same
# workload until the daemon
# dies there; a remount without points must show every acknowledged record
# exactly once, contiguous offsets, increasing epoch caches, a leader epoch
# no log exceeds, and metadata that agrees with the directories.
. "$(dirname "$0")/lib.sh"

INI=$MK_DURABILITY_INI
drv() { mk_drv "$@"; }

# start_daemon: like mk_mount, but a daemon that dies while mounting (a
# point hit during recovery) is not an error: returns 1 then.
start_daemon() {
	printf '%s\n' "$INI" >"$DATA/minikafka.ini"
	"$MKFS_BIN" -f "$DATA" "$MNT" >>"$MK_LOG" 2>&1 &
	MK_PID=$!
	local i
	for ((i = 0; i < 500; i++)); do
		mk_mounted && return 0
		kill -0 "$MK_PID" 2>/dev/null || break
		sleep 0.02
	done
	wait "$MK_PID" 2>/dev/null
	MK_PID=""
	fusermount3 -u -z "$MNT" 2>/dev/null
	return 1
}

# stop_daemon: unmount (a point hit at the final save kills it then), wait;
# STOP_RC gets the exit status.
stop_daemon() {
	STOP_RC=dead
	[ -n "$MK_PID" ] || return 0
	if kill -0 "$MK_PID" 2>/dev/null; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT" 2>/dev/null
	fi
	mk_wait_for 30 mk_proc_gone "$MK_PID" || kill -9 "$MK_PID"
	wait "$MK_PID" 2>/dev/null
	STOP_RC=$?
	MK_PID=""
	fusermount3 -u -z "$MNT" 2>/dev/null
	mk_wait_for 10 eval '! mk_in_mounts' || bail "dead mount not cleared"
}

# verify TAG: remount without points, bring everything back, check.
verify() {
	local tag=$1
	mk_mount
	if mk_durability_check "$MK_TMP/acks"; then
		pass "$tag: every acknowledged record once, offsets contiguous, epochs monotonic, metadata = directories"
	else
		fail "$tag"
		printf '%s\n' "$MK_CHECK_OUT" | head -n 5 | sed 's/^/#      /'
	fi
	mk_unmount
}

# ---- 1: the points the workload passes ------------------------------------------
TRACE=$MK_TMP/trace
: >"$TRACE"
: >"$MK_TMP/acks"
MKFS_FAILPOINT_TRACE=$TRACE start_daemon || bail "first mount"
drv work "$MNT" "$MK_TMP/acks" 0 1
assert_eq 0 "$?" "the workload runs to its end without a crash point"
stop_daemon
assert_eq 0 "$STOP_RC" "and the daemon unmounts with status 0"
note "$(wc -l <"$MK_TMP/acks") records acknowledged in the first run"
verify "no crash"
sort "$TRACE" | uniq -c | awk '{ print $2, $1 }' >"$MK_TMP/points"
npoints=$(wc -l <"$MK_TMP/points")
note "$npoints crash points passed: $(cut -d' ' -f1 "$MK_TMP/points" | tr '\n' ' ')"
# Every path of docs/filesystem.md "Crash points" is on the workload's way.
for want in meta.save.after-fsync meta.save.after-rename broker.crash.before-save \
	broker.crash.after-save replica.crash.before-truncate broker.restart.after-save \
	promote.before-save promote.after-save topic.create.before-save \
	topic.create.before-insert topic.delete.after-mark topic.delete.after-partition \
	log.roll.after-seal log.roll.after-create segment.create.after-open \
	log.ckpt.after-fsync log.ckpt.after-rename log.flush.before-checkpoint \
	log.epochs.after-fsync logdir.recovery-point.after-write \
	logdir.recovery-point.after-rename logdir.high-watermark.after-write; do
	grep -q "^$want " "$MK_TMP/points" || fail "the workload never passes $want"
done

# ---- 2: each point armed in turn -------------------------------------------------
# MKFS_CRASHPOINTS=a,b limits the run to those points (for debugging).
hit=0 missed=0
while read -r point count; do
	if [ -n "${MKFS_CRASHPOINTS:-}" ] && [[ ",$MKFS_CRASHPOINTS," != *",$point,"* ]]; then
		continue
	fi
	# The first hit (little data yet) and the middle one (when different).
	hits=1
	[ "$count" -le 2 ] || hits="1 $(((count + 1) / 2))"
	for k in $hits; do
		[ -z "$MK_PID" ] || mk_unmount
		rm -rf "${DATA:?}"/* "$MK_TMP/epochs"
		: >"$MK_TMP/acks"
		if MKFS_FAILPOINTS="$point@$k" start_daemon; then
			drv work "$MNT" "$MK_TMP/acks" 0 1
			stop_daemon
			rc=$STOP_RC
		else
			rc=dead
		fi
		if [ "$rc" = 137 ] || [ "$rc" = dead ]; then
			hit=$((hit + 1))
		else
			missed=$((missed + 1))
			note "$point@$k was not reached this time (exit $rc)"
		fi
		verify "$point@$k"
	done
done <"$MK_TMP/points"
note "crash points: $hit runs killed at their point, $missed not reached"
assert_true "most armed points were reached ($hit of $((hit + missed)))" test "$hit" -ge $(((hit + missed) * 3 / 4))
