#!/usr/bin/env python3
"""kafka_decode.py — read segment files with kafka-python's own record
classes (kafka.record: MemoryRecords, DefaultRecordBatch), an independent
decoder of Kafka's RecordBatch v2, and check them against a mount.

    kafka_decode.py check LOG...            every batch decodes, CRC valid
    kafka_decode.py compare RECORDS_JSON LOG...
        as check, and the data records of the LOG files (control batches
        aside) equal the mount's records (RECORDS_JSON: a file holding what
        records@0:json read): offsets, keys, values, headers, null and
        empty apart.

Prints one line of counts ("batches=N records=N ...") and exits 1 on the
first disagreement, 77 when kafka-python is missing (a skip).
"""
import base64
import json
import struct
import sys

try:
    from kafka.record import MemoryRecords
    from kafka.record.default_records import DefaultRecordBatch
except ImportError:
    print("kafka-python (python3-kafka) is not installed")
    sys.exit(77)

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def walk(path):
    """Yield (batch, header fields, records) for every batch of a .log."""
    data = open(path, "rb").read()
    mr = MemoryRecords(data)
    seen = 0
    while mr.has_next():
        batch = mr.next_batch()
        if batch is None:
            break
        if not isinstance(batch, DefaultRecordBatch):
            die("%s: batch at %d is not a v2 batch" % (path, seen))
        if batch.magic != 2:
            die("%s: magic %d" % (path, batch.magic))
        if not batch.validate_crc():
            die("%s: batch at offset %d: CRC-32C invalid"
                % (path, batch.base_offset))
        h = batch._header_data
        fields = {
            "base_offset": h[0], "length": h[1], "leader_epoch": h[2],
            "attributes": h[5], "last_offset_delta": h[6],
            "producer_id": h[9], "producer_epoch": h[10],
            "base_sequence": h[11], "count": h[12],
        }
        seen += 12 + h[1]
        recs = list(batch)          # raises on any malformed record
        if len(recs) != fields["count"]:
            die("%s: batch at %d: %d records, count says %d"
                % (path, h[0], len(recs), fields["count"]))
        yield batch, fields, recs
    if seen != len(data):
        die("%s: %d bytes after the last whole batch" % (path, len(data) - seen))


def b64(b):
    return None if b is None else base64.b64encode(b).decode()


def summarise(paths):
    out = {"batches": 0, "records": 0, "commit": 0, "abort": 0,
           "idempotent": 0, "transactional": 0, "gaps": 0}
    data = {}
    for path in paths:
        for batch, f, recs in walk(path):
            out["batches"] += 1
            codec = CODECS.get(f["attributes"] & 7, "?")
            out["codec_" + codec] = out.get("codec_" + codec, 0) + 1
            if f["producer_id"] >= 0 and not batch.is_control_batch:
                out["idempotent"] += 1
            if batch.is_transactional and not batch.is_control_batch:
                out["transactional"] += 1
            if batch.is_control_batch:
                if len(recs) != 1:
                    die("%s: control batch with %d records" % (path, len(recs)))
                k, v = recs[0].key, recs[0].value
                kv, ktype = struct.unpack(">hh", k)
                vv, cepoch = struct.unpack(">hi", v)
                if kv != 0 or vv != 0 or ktype not in (0, 1):
                    die("%s: control record key %r value %r" % (path, k, v))
                out["commit" if ktype == 1 else "abort"] += 1
                continue
            offs = [r.offset for r in recs]
            if offs[-1] - offs[0] + 1 != len(offs) or \
                    offs[0] != f["base_offset"]:
                out["gaps"] += 1
            if offs[-1] > f["base_offset"] + f["last_offset_delta"]:
                die("%s: offset %d past the batch's last" % (path, offs[-1]))
            for r in recs:
                out["records"] += 1
                data[r.offset] = (b64(r.key), b64(r.value),
                                  sorted((hk, b64(hv)) for hk, hv in r.headers))
    return out, data


def mount_records(path):
    recs = {}
    for line in open(path, encoding="utf-8"):
        j = json.loads(line)

        def field(name):
            if name + "_b64" in j:
                return j[name + "_b64"]
            v = j.get(name)
            return None if v is None else b64(v.encode())
        hs = [(k, b64(v.encode()) if v is not None else None)
              for k, v in j.get("headers", {}).items()]
        recs[j["offset"]] = (field("key"), field("value"), sorted(hs))
    return recs


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("check", "compare"):
        print(__doc__)
        sys.exit(2)
    if sys.argv[1] == "check":
        out, _ = summarise(sys.argv[2:])
    else:
        out, data = summarise(sys.argv[3:])
        want = mount_records(sys.argv[2])
        if data != want:
            for off in sorted(set(data) | set(want)):
                if data.get(off) != want.get(off):
                    die("offset %d: segments %r, mount %r"
                        % (off, data.get(off), want.get(off)))
        out["equal"] = len(want)
    print(" ".join("%s=%s" % kv for kv in sorted(out.items())))


main()
