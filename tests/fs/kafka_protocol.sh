#!/usr/bin/env bash
# kafka_protocol.sh — the Kafka protocol's listeners (issue 26, point 1)
# and its first APIs, judged by real clients: kcat (librdkafka) lists the
# cluster's brokers and topics through Metadata; kafka-python reads the
# topics; hand-made requests (tests/compat/kafka_raw.py, struct only)
# check ApiVersions v0-2, the v0 answer to v3, UNSUPPORTED_VERSION for
# what is not served, and that bad bytes close the connection with an
# /errors line. A crash closes a broker's listener at once, a restart
# opens it on the same port; a taken port leaves a broker without one and
# the mount up.
#
# Listeners on free ports (port 0), so that nothing else on the machine
# matters. Manual clock; no timing.
. "$(dirname "$0")/lib.sh"

KPY=/usr/bin/python3
last_error() { mk_read "$MNT/errors" | tail -n 1; }
RAW="$MKFS_SRC/tests/compat/kafka_raw.py"
command -v kcat >/dev/null || bail "kcat is not installed (scripts/install-deps.sh)"
"$KPY" -c 'import kafka' 2>/dev/null || bail "kafka-python (python3-kafka) is not installed"

mk_mount '[cluster]
brokers = 1,2,3
default.replication.factor = 3
clock = manual
[network]
listeners = 127.0.0.1:0'
mk_ctl "create-topic orders partitions=2" || bail "create-topic orders"
for b in 1 2 3; do
	l=$(mk_read "$MNT/brokers/$b/listener")
	assert_match '^127\.0\.0\.1:[0-9]+$' "$l" "/brokers/$b/listener shows HOST:PORT"
	eval "L$b=\$l"
done
P1=${L1#*:} P2=${L2#*:}
assert_ne "$L1" "$L2" "brokers 1 and 2 listen on ports of their own"
assert_match "listeners = 127.0.0.1:0" "$(mk_read "$MNT/config")" "/config shows [network] listeners"

# ---- kcat (librdkafka 2.0): Metadata --------------------------------------------
meta=$(timeout 20 kcat -L -b "$L1" -m 10 2>&1)
note "$(head -n 6 <<<"$meta")"
assert_match "3 brokers:" "$meta" "kcat -L: three brokers"
assert_match "broker 2 at 127\.0\.0\.1:$P2" "$meta" "  ... broker 2 at its listener"
assert_match "topic \"orders\" with 2 partitions" "$meta" "  ... topic orders with two partitions"
assert_match "partition 0, leader [123], replicas: [123],[123],[123], isrs: [123],[123],[123]" "$meta" \
	"  ... partition 0: its leader, three replicas, three in sync"

# ---- kafka-python: the topics ---------------------------------------------------------
topics=$(timeout 30 "$KPY" -c '
import sys
from kafka import KafkaConsumer
c = KafkaConsumer(bootstrap_servers=sys.argv[1], request_timeout_ms=10000,
                  api_version_auto_timeout_ms=10000)
print(" ".join(sorted(t for t in c.topics() if not t.startswith("__"))),
      sorted(c.partitions_for_topic("orders")))
c.close()
' "$L1" 2>&1)
assert_eq "orders [0, 1]" "$topics" "kafka-python: the topics and orders' partitions"

# ---- ApiVersions, and what is not served ------------------------------------------
for v in 0 1 2; do
	assert_match "^error=0 apis=[0-9]+ apiversions=0-2 metadata=0-8$" \
		"$("$KPY" "$RAW" apiversions 127.0.0.1 "$P1" $v)" "ApiVersions v$v: ranges, ApiVersions 0-2, Metadata 0-8"
done
assert_match "^error=35 apis=[0-9]+ apiversions=0-2 " "$("$KPY" "$RAW" apiversions 127.0.0.1 "$P1" 3)" \
	"ApiVersions v3: a v0 body, UNSUPPORTED_VERSION and the ranges (KIP-511)"
assert_eq "correlation=99 error=35" "$("$KPY" "$RAW" unknown 127.0.0.1 "$P1" 1000 0)" \
	"an unknown API key: its correlation id and UNSUPPORTED_VERSION, not a silent close"
assert_match "client 127\.0\.0\.1:[0-9]+, an unknown API v0 \(key 1000\) to broker 1: UNSUPPORTED_VERSION" \
	"$(last_error)" "  ... and an /errors line names the client and the API"
assert_eq "correlation=99 error=35" "$("$KPY" "$RAW" unknown 127.0.0.1 "$P1" 0 0)" \
	"Produce v0 (the old message sets: refused): UNSUPPORTED_VERSION"
for kind in huge tls short; do
	assert_eq "closed" "$("$KPY" "$RAW" garbage 127.0.0.1 "$P1" $kind)" "$kind bytes: the connection is closed"
done
assert_match "client 127\.0\.0\.1:[0-9]+ \(broker 1's listener\): sent a request size of 3 bytes" \
	"$(last_error)" "  ... with an /errors line naming the client"
"$KPY" "$RAW" garbage 127.0.0.1 "$P1" tls >/dev/null
assert_match "TLS handshake to a PLAINTEXT listener" "$(last_error)" "  ... a TLS client is told why"
assert_match "apis=" "$("$KPY" "$RAW" apiversions 127.0.0.1 "$P1" 0)" "  ... and the listener still serves"

# ---- Produce: kcat's batches, acks=1 and acks=all --------------------------------
# Manual replication: an acks=all Produce waits (deferred, no thread held)
# until fetch rounds bring the ISR up to its batch, as an acks=all append.
O=$MNT/topics/orders/0
lead=$(mk_read "$O/leader")
eval "LL=\$L$lead"
printf 'a\nb\nc\n' | timeout 20 kcat -P -b "$LL" -t orders -p 0 -X acks=1 2>"$MK_TMP/kcat.err"
assert_eq "0" "$?" "kcat -P acks=1: three records produced"
assert_eq "3 0" "$(mk_read "$O/leo") $(mk_read "$O/hw")" "  ... on the leader's log, not yet committed (manual replication)"
mk_write "$MNT/brokers/fetch" $'\n' || fail "fetch round"
assert_eq "3" "$(mk_read "$O/hw")" "  ... committed by a fetch round"
printf 'k1:v1\n' | timeout 60 kcat -P -b "$LL" -t orders -p 0 -K: -X acks=all 2>>"$MK_TMP/kcat.err" &
kpid=$!
assert_true "kcat -P acks=all: its batch is appended" mk_wait_for 20 eval '[ "$(mk_read "$O/leo")" = 4 ]'
assert_true "  ... and its produce waits for the ISR" kill -0 "$kpid"
mk_write "$MNT/brokers/fetch" $'\n' || fail "fetch round"
wait "$kpid"
assert_eq "0" "$?" "  ... answered once the followers have it (kcat exits 0)"
assert_eq $'3\tk1\tv1' "$(mk_read "$O/records:tsv" | tail -n 1 | cut -f1,3,4)" "  ... the files read the wire's record: key and value"
batch=$(mk_read "$O/batches" | tail -n 1)
assert_match "^3 3 1 " "$batch" "  ... kcat's batch, stored as it came (base 3, one record)"

# ---- Fetch and ListOffsets: kcat -C, kcat -Q --------------------------------------
got=$(timeout 20 kcat -C -b "$LL" -t orders -p 0 -o beginning -e -f '%o %k %s\n' 2>>"$MK_TMP/kcat.err")
assert_eq "$(printf '%s\n' '0  a' '1  b' '2  c' '3 k1 v1')" "$got" "kcat -C: every committed record, offsets, keys, values"
assert_match "orders \[0\] offset 4" "$(timeout 20 kcat -Q -b "$LL" -t orders:0:-1 2>&1)" "ListOffsets LATEST: the high watermark"
assert_match "orders \[0\] offset 0" "$(timeout 20 kcat -Q -b "$LL" -t orders:0:-2 2>&1)" "ListOffsets EARLIEST: the log start"
assert_match "orders \[0\] offset 0" "$(timeout 20 kcat -Q -b "$LL" -t orders:0:1 2>&1)" "ListOffsets by time: the first record at or after it"
assert_match "orders \[0\] offset -1" "$(timeout 20 kcat -Q -b "$LL" -t orders:0:99999999999999 2>&1)" \
	"  ... -1 when no record is that late"

ep=$(mk_read "$O/leader_epoch")
assert_eq "error=0 epoch=$ep end=4" "$("$KPY" "$RAW" epochend 127.0.0.1 "${LL#*:}" orders "$ep")" \
	"OffsetForLeaderEpoch: the latest epoch ends at the log end"
assert_eq "error=0 epoch=$ep end=4" "$("$KPY" "$RAW" epochend 127.0.0.1 "${LL#*:}" orders 99)" \
	"  ... an epoch past the latest: the largest one at most it"
assert_eq "error=75 epoch=-1 end=-1" "$("$KPY" "$RAW" epochend 127.0.0.1 "${LL#*:}" orders "$ep" 99)" \
	"  ... a current_leader_epoch newer than the leader's: UNKNOWN_LEADER_EPOCH"

# ---- admin: CreateTopics, DeleteTopics (kafka-python), DeleteRecords -------------
out=$(timeout 60 "$KPY" -c '
import sys
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
a = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=10000)
def tryit(f):
    try:
        f(); return "ok"
    except Exception as e:
        return type(e).__name__
print(tryit(lambda: a.create_topics([NewTopic("made", 3, 2, topic_configs={"cleanup.policy": "compact"})])))
print(tryit(lambda: a.create_topics([NewTopic("made", 1, 1)])))
print(tryit(lambda: a.create_topics([NewTopic("big", 1, 9)])))
print(tryit(lambda: a.create_topics([NewTopic("cfg", 1, 1, topic_configs={"segment.bytes": "1"})])))
print(tryit(lambda: a.delete_topics(["__consumer_offsets"])))
' "$L1" 2>&1)
assert_eq "ok
TopicAlreadyExistsError
InvalidReplicationFactorError
InvalidConfigurationError
TopicAuthorizationFailedError" "$out" "kafka-python's admin: create, exists, a replication factor too large, a bad config, an internal topic's deletion"
assert_eq "0 1 2" "$(ls "$MNT/topics/made" | grep '^[0-9]' | sort -n | tr '\n' ' ' | sed 's/ $//')" \
	"  ... made: three partitions"
assert_match "cleanup.policy=compact" "$(mk_read "$MNT/topics/made/config")" "  ... with its config"
assert_eq "ok" "$(timeout 60 "$KPY" -c '
import sys
from kafka import KafkaAdminClient
a = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=10000)
a.delete_topics(["made"]); print("ok")
' "$L1" 2>&1)" "DeleteTopics"
assert_true "  ... made is gone" test ! -e "$MNT/topics/made"
mk_ctl "create-topic cfgd retention.ms=1000" || bail "create-topic cfgd"
out=$(timeout 60 "$KPY" -c '
import sys
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType as T
a = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=10000)
for res in a.describe_configs([ConfigResource(T.TOPIC, "cfgd")]):
    for r in res.resources:
        print(" ".join("%s=%s:%s" % (e[0], e[1], e[3]) for e in r[4]
                       if e[0] in ("retention.ms", "segment.bytes")))
for v in ("2048", "1"):
    r = a.alter_configs([ConfigResource(T.TOPIC, "cfgd", configs={"segment.bytes": v})])
    print(r.resources[0][0])
' "$L1" 2>&1)
assert_eq "segment.bytes=1048576:5 retention.ms=1000:1
0
40" "$out" "DescribeConfigs (an override's source DYNAMIC_TOPIC_CONFIG, a default's DEFAULT_CONFIG), AlterConfigs set, and a bad value INVALID_CONFIG"
assert_match "segment.bytes=2048" "$(mk_read "$MNT/topics/cfgd/config")" "  ... the files see the new value"
assert_eq "error=0 low=2" "$("$KPY" "$RAW" deleterecords 127.0.0.1 "${LL#*:}" orders 2)" \
	"DeleteRecords before offset 2: the new low watermark"
assert_eq "2" "$(mk_read "$O/log_start_offset")" "  ... the files see it"
assert_eq "error=1 low=-1" "$("$KPY" "$RAW" deleterecords 127.0.0.1 "${LL#*:}" orders 99)" \
	"  ... past the high watermark: OFFSET_OUT_OF_RANGE"

# ---- kafka-python: every codec, and a long poll ------------------------------------
for codec in gzip snappy lz4 zstd; do
	mk_ctl "create-topic z$codec replication.factor=1" || bail "create-topic z$codec"
done
out=$(timeout 60 "$KPY" -c '
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
for codec in ("gzip", "snappy", "lz4", "zstd"):
    p = KafkaProducer(bootstrap_servers=sys.argv[1], acks="all", compression_type=codec,
                      linger_ms=50, batch_size=1 << 20)
    for i in range(200):
        p.send("z" + codec, key=b"k%d" % (i % 7), value=(b"record %05d " % i) * 8, partition=0)
    p.flush(); p.close()
    c = KafkaConsumer(bootstrap_servers=sys.argv[1], auto_offset_reset="earliest",
                      consumer_timeout_ms=5000)
    c.assign([TopicPartition("z" + codec, 0)])
    ms = [m for m in c]
    c.close()
    ok = len(ms) == 200 and all(m.value == (b"record %05d " % m.offset) * 8 for m in ms)
    print(codec, len(ms), "ok" if ok else "BAD")
' "$L1" 2>&1)
note "$out"
for codec in gzip snappy lz4 zstd; do
	assert_match "$codec 200 ok" "$out" "kafka-python, $codec: 200 records produced and fetched back"
	assert_match " $codec\$" "$(mk_read "$MNT/topics/z$codec/0/batches" | head -n 1)" \
		"  ... the batch stored as it came, $codec (batches' CODEC)"
	assert_eq "record 00199 " "$(mk_read "$MNT/topics/z$codec/0/records" | tail -n 1 | cut -c1-13)" \
		"  ... and the files decompress it"
done
# An idempotent producer: InitProducerId gives it an identity, shown under
# /producers as a file producer's; its batch carries the id and sequence.
mk_ctl "create-topic idem replication.factor=1" || bail "create-topic idem"
seq 1 5 | timeout 30 kcat -P -b "$L1" -t idem -p 0 -X enable.idempotence=true 2>>"$MK_TMP/kcat.err"
assert_eq "0" "$?" "kcat -P enable.idempotence=true: produced"
assert_eq "wire-1" "$(ls "$MNT/producers" | tr '\n' ' ' | sed 's/ $//')" "  ... InitProducerId made producer wire-1"
assert_match "^0 4 5 [0-9]+ 0+\.log 0 [0-9]+ $(mk_read "$MNT/producers/wire-1/id") 0 0 " \
	"$(mk_read "$MNT/topics/idem/0/batches")" "  ... its batch: that producer id, epoch 0, base sequence 0"
coord() {
	timeout 20 "$KPY" -c '
import sys
from kafka import KafkaAdminClient
a = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=5000)
try:
    print(a._find_coordinator_ids(["g"])["g"])
except Exception as e:
    print(type(e).__name__, e)
' "$L1" 2>&1 | tail -n 1
}
assert_match "error_code=15" "$(coord)" \
	"FindCoordinator before __consumer_offsets exists: COORDINATOR_NOT_AVAILABLE (kafka-python)"
mk_mkdir "$MNT/groups/g" || bail "mkdir groups/g"
gp=$("$MK_PYTHON" -c 'import sys, zlib; print(zlib.crc32(b"g") % int(sys.argv[1]))' \
	"$(ls "$MNT/topics/__consumer_offsets" | grep -c '^[0-9]')")
assert_eq "$(mk_read "$MNT/topics/__consumer_offsets/$gp/leader")" "$(coord)" \
	"FindCoordinator: the leader of the group's __consumer_offsets partition"

# A consumer waiting at the end: its Fetch parks until a record comes.
# It says "ready" once a poll came back empty with its fetch in flight
# (fetch_max_wait_ms 20 s: parked at the daemon); then a file append.
timeout 60 "$KPY" -c '
import sys
from kafka import KafkaConsumer, TopicPartition
c = KafkaConsumer(bootstrap_servers=sys.argv[1], fetch_max_wait_ms=20000)
tp = TopicPartition("zgzip", 0)
c.assign([tp]); c.seek(tp, 200)
while not c.poll(timeout_ms=1000):
    open(sys.argv[2], "w").write("ready")
    break
for m in c:
    print(m.offset, m.value.decode()); break
' "$L1" "$MK_TMP/ready" >"$MK_TMP/poll.out" 2>&1 &
ppid=$!
mk_wait_for 30 test -s "$MK_TMP/ready" || fail "the consumer never polled"
mk_write_e "$MNT/topics/zgzip/0/append:acks=1" 'late\n' || fail "append late"
wait "$ppid"
assert_eq "200 late" "$(cat "$MK_TMP/poll.out")" "a long-polling Fetch gets the record appended through a file"

# ---- a client configured for SASL or TLS: a clear failure, not a hang ------------
out=$(timeout 30 kcat -L -b "$L1" -m 2 -X security.protocol=SASL_PLAINTEXT \
	-X sasl.mechanism=PLAIN -X sasl.username=u -X sasl.password=p 2>&1)
assert_match "SASL Handshake not supported by broker" "$out" "kcat with SASL: librdkafka says the broker has no SASL"
assert_no_match() { if [[ $2 =~ $1 ]]; then fail "$3"; else pass "$3"; fi; }
assert_no_match "ApiVersions v3" "$(mk_read "$MNT/errors")" \
	"  ... (librdkafka's ApiVersions v3 and its v0 answer are negotiation, no /errors line)"
nerr=$(mk_errors_mark)
out=$(timeout 30 kcat -L -b "$L1" -m 2 -X security.protocol=SSL 2>&1)
assert_match "SSL handshake failed" "$out" "kcat with TLS: the handshake fails at once (the listener closed it)"
assert_match "TLS handshake to a PLAINTEXT listener" "$(mk_read "$MNT/errors" | tail -n +$((nerr + 1)))" \
	"  ... and /errors says why"

# ---- bounds, and a stop with requests parked -------------------------------------
assert_eq "answered" "$("$KPY" "$RAW" fetchmany 127.0.0.1 "$P1" orders 3)" "a Fetch listing a partition 3 times is answered"
assert_eq "closed" "$("$KPY" "$RAW" fetchmany 127.0.0.1 "$P1" orders 10001)" \
	"a Fetch of 10,001 partitions closes the connection (at most 10,000 a request)"
assert_match "request body does not parse" "$(last_error)" "  ... with an /errors line"

# ---- a crash closes the listener, a restart opens it ----------------------------
mk_write "$MNT/brokers/2/crash" 1 || bail "crash 2"
assert_eq "none" "$(mk_read "$MNT/brokers/2/listener")" "a crashed broker has no listener"
assert_eq "refused" "$("$KPY" "$RAW" refused 127.0.0.1 "$P2")" "  ... its port refuses connections at once"
meta=$(timeout 20 kcat -L -b "$L1" -m 10 2>&1)
assert_match "2 brokers:" "$meta" "Metadata lists only the online brokers"
mk_write "$MNT/brokers/2/restart" 1 || bail "restart 2"
assert_eq "$L2" "$(mk_read "$MNT/brokers/2/listener")" "a restarted broker listens on the port it had"
assert_match "apis=" "$("$KPY" "$RAW" apiversions 127.0.0.1 "$P2" 0)" "  ... and serves"
# Two Fetches parked on one connection (the second queued behind the
# first) when the mount stops: both answered or dropped, no watcher left
# behind (the unmount's exit status; ASan's run checks the memory).
lp=$(mk_read "$MNT/brokers/$(mk_read "$O/leader")/listener")
"$KPY" "$RAW" parktwo 127.0.0.1 "${lp#*:}" orders "$(mk_read "$O/hw")" "$MK_TMP/parked" &
parker=$!
mk_wait_for 20 test -s "$MK_TMP/parked" || fail "the parked fetches were not sent"
mk_unmount
kill "$parker" 2>/dev/null
wait "$parker" 2>/dev/null

# ---- a port taken, and off --------------------------------------------------------
# Hold a port, then ask broker 1 for it: broker 1 goes without, broker 2
# (the next port) listens, the mount stays up.
"$MK_PYTHON" -c '
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
time.sleep(600)
' >"$MK_TMP/port" 2>/dev/null &
holder=$!
mk_wait_for 10 test -s "$MK_TMP/port" || bail "no port held"
taken=$(cat "$MK_TMP/port")
rm -rf "$DATA" && mkdir -p "$DATA"
mk_mount "[cluster]
brokers = 1,2
[network]
listeners = 127.0.0.1:$taken"
assert_eq "none" "$(mk_read "$MNT/brokers/1/listener")" "a taken port: broker 1 has no listener"
assert_eq "127.0.0.1:$((taken + 1))" "$(mk_read "$MNT/brokers/2/listener")" "  ... broker 2 listens on the next port"
assert_match "broker 1: no listener on 127\.0\.0\.1:$taken: Address already in use" "$(mk_read "$MNT/errors")" \
	"  ... and /errors says why"
mk_unmount
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

mk_mount '[network]
listeners = off'
assert_eq "none" "$(mk_read "$MNT/brokers/1/listener")" "listeners = off: none"
mk_unmount
