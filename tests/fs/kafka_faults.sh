#!/usr/bin/env bash
# kafka_faults.sh — a real client through a leader failure (issue 26,
# point 6): kcat (librdkafka 2.0) produces with acks=all and idempotence
# into a partition with three replicas and min.insync.replicas 2; after
# the first half is acknowledged the leader's broker crashes
# (/brokers/B/crash) and an in-sync replica is promoted; kcat refreshes
# its metadata, retries and goes on. Every record is there once, in
# order: nothing acknowledged lost, nothing duplicated.
#
# Auto replication (the followers fetch by themselves); the waits are for
# states the files show, not for time.
. "$(dirname "$0")/lib.sh"
command -v kcat >/dev/null || bail "kcat is not installed (scripts/install-deps.sh)"

mk_mount '[cluster]
brokers = 1,2,3
default.replication.factor = 3
min.insync.replicas = 2
[replication]
mode = auto
[network]
listeners = 127.0.0.1:0'
mk_ctl "create-topic f" || bail "create-topic f"
P=$MNT/topics/f/0
all=$(for b in 1 2 3; do mk_read "$MNT/brokers/$b/listener"; done | paste -sd,)

# A writer that feeds kcat 3,000 lines over about six seconds, so that
# kcat is still producing when the leader goes (kcat reads its input in
# blocks: a line reaches it with the block that holds it).
mkfifo "$MK_TMP/in"
"$MK_PYTHON" -c '
import sys, time
for i in range(1, 3001):
    sys.stdout.write("%d\n" % i); sys.stdout.flush(); time.sleep(0.002)
' >"$MK_TMP/in" &
timeout 120 kcat -P -b "$all" -t f -p 0 -X enable.idempotence=true -X acks=all \
	-X linger.ms=5 <"$MK_TMP/in" 2>"$MK_TMP/kcat.err" &
kpid=$!
hw_at() { local h; h=$(mk_read "$P/hw") && [ "${h:-0}" -ge "$1" ]; }
assert_true "kcat's first records are acknowledged (HW 500)" mk_wait_for 60 hw_at 500

lead=$(mk_read "$P/leader")
isr=$(mk_read "$P/isr")
next=$(for b in $isr; do [ "$b" != "$lead" ] && echo "$b"; done | head -n 1)
mk_write "$MNT/brokers/$lead/crash" 1 || bail "crash $lead"
assert_eq "none" "$(mk_read "$P/leader")" "the crashed leader's partition has no leader (no controller yet)"
mk_write "$MNT/brokers/$next/promote" f/0 || fail "promote $next (in sync: $isr)"
wait "$kpid"
assert_eq "0" "$?" "kcat refreshed its metadata, retried and delivered everything (exit 0)"
note "$(grep -c . "$MK_TMP/kcat.err") lines from kcat: $(head -n 2 "$MK_TMP/kcat.err" | tr '\n' ' ' | cut -c1-200)"
assert_true "  ... the rest acknowledged (HW 3000)" mk_wait_for 60 hw_at 3000
got=$(mk_read "$P/records")
assert_eq "$(seq 1 3000)" "$got" "every record once, in order: nothing acknowledged lost, nothing duplicated"
assert_eq "wire-1" "$(ls "$MNT/producers")" "  ... one idempotent producer"
mk_unmount
