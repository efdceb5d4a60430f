#!/usr/bin/env python3
"""kafka_raw.py — hand-made Kafka requests for tests/fs/kafka_protocol.sh.

An independent encoder (struct, nothing of the daemon's): each command
sends one request to HOST:PORT and prints what came back, one line.

    kafka_raw.py apiversions HOST PORT VERSION
        "error=E apis=N apiversions=MIN-MAX metadata=MIN-MAX" (a v0 body
        is read when E is UNSUPPORTED_VERSION, as KIP-511 says)
    kafka_raw.py unknown HOST PORT KEY VERSION
        "correlation=C error=E" (the int16 after the response header)
    kafka_raw.py garbage HOST PORT KIND
        KIND huge (a size of 2 GiB), tls (a TLS ClientHello's first bytes),
        short (a size of 3): "closed" when the daemon closed the
        connection without answering, else "answered"
    kafka_raw.py refused HOST PORT
        "refused" when nothing listens, else "accepted"
    kafka_raw.py fetchmany HOST PORT TOPIC N
        a Fetch v4 listing partition 0 of TOPIC N times (max_wait 0):
        "closed" or "answered"
    kafka_raw.py parktwo HOST PORT TOPIC OFFSET READY
        two Fetch v4 of TOPIC partition 0 at OFFSET (max_wait 60 s,
        min_bytes 1) in one write, then writes READY and holds the
        connection until killed (the second queued behind the parked
        first)
    kafka_raw.py deleterecords HOST PORT TOPIC OFFSET
        DeleteRecords v1 of TOPIC partition 0 before OFFSET:
        "error=E low=L"
    kafka_raw.py epochend HOST PORT TOPIC EPOCH [CURRENT]
        OffsetForLeaderEpoch v2 for TOPIC partition 0:
        "error=E epoch=L end=O"
"""
import socket
import struct
import sys

CLIENT = b"kafka_raw"


def header(key, version, corr, flexible=False):
    h = struct.pack(">hhi", key, version, corr)
    h += struct.pack(">h", len(CLIENT)) + CLIENT      # client id, never compact
    if flexible:
        h += b"\x00"                                  # empty tag section
    return h


def send(sock, payload):
    sock.sendall(struct.pack(">i", len(payload)) + payload)


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(data), n))
        data += chunk
    return data


def recv_response(sock):
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return recv_exact(sock, size)


def connect(host, port):
    return socket.create_connection((host, int(port)), timeout=10)


def apiversions(host, port, version):
    version = int(version)
    s = connect(host, port)
    body = b""
    if version >= 3:     # client_software_name, _version, tags
        body = b"\x05mkfs\x04" + b"0.1" + b"\x00"
    send(s, header(18, version, 7, flexible=version >= 3) + body)
    r = recv_response(s)
    corr, err = struct.unpack(">ih", r[:6])
    assert corr == 7, corr
    pos = 6
    if version >= 3 and err == 0:
        n = r[pos] - 1
        pos += 1
        width = 7          # key, min, max, tags
    else:
        n = struct.unpack(">i", r[pos:pos + 4])[0]
        pos += 4
        width = 6
    apis = {}
    for _ in range(n):
        k, lo, hi = struct.unpack(">hhh", r[pos:pos + 6])
        apis[k] = (lo, hi)
        pos += width
    def rng(k):
        return "%d-%d" % apis[k] if k in apis else "none"
    print("error=%d apis=%d apiversions=%s metadata=%s" % (err, n, rng(18), rng(3)))


def unknown(host, port, key, version):
    s = connect(host, port)
    send(s, header(int(key), int(version), 99) + b"\x00" * 8)
    r = recv_response(s)
    corr, err = struct.unpack(">ih", r[:6])
    print("correlation=%d error=%d" % (corr, err))


def garbage(host, port, kind):
    s = connect(host, port)
    if kind == "huge":
        s.sendall(struct.pack(">i", 0x7fffffff) + b"\x00" * 16)
    elif kind == "tls":
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 32)
    elif kind == "short":
        s.sendall(struct.pack(">i", 3) + b"abc")
    else:
        raise SystemExit("unknown kind " + kind)
    try:
        data = s.recv(4)
        print("closed" if not data else "answered")
    except ConnectionResetError:
        print("closed")


def refused(host, port):
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
        print("accepted")
    except ConnectionRefusedError:
        print("refused")


def fetch_v4(topic, nparts, offset, max_wait, corr):
    t = topic.encode()
    body = struct.pack(">iiiib", -1, max_wait, 1, 1 << 20, 0)
    body += struct.pack(">i", 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">i", nparts)
    body += struct.pack(">iqi", 0, offset, 1 << 20) * nparts
    payload = header(1, 4, corr) + body
    return struct.pack(">i", len(payload)) + payload


def fetchmany(host, port, topic, n):
    s = connect(host, port)
    s.sendall(fetch_v4(topic, int(n), 0, 0, 5))
    try:
        data = s.recv(4)
        print("closed" if not data else "answered")
    except ConnectionResetError:
        print("closed")


def parktwo(host, port, topic, offset, ready):
    import time
    s = connect(host, port)
    s.sendall(fetch_v4(topic, 1, int(offset), 60000, 1) +
              fetch_v4(topic, 1, int(offset), 60000, 2))
    open(ready, "w").write("sent")
    time.sleep(600)


def epochend(host, port, topic, epoch, current="-1"):
    t = topic.encode()
    body = struct.pack(">i", 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">i", 1) + struct.pack(">iii", 0, int(current), int(epoch))
    s = connect(host, port)
    send(s, header(23, 2, 11) + body)
    r = recv_response(s)
    corr, _throttle, nt = struct.unpack(">iii", r[:12])
    pos = 12
    tl = struct.unpack(">h", r[pos:pos + 2])[0]
    pos += 2 + tl
    _np, err, _part, lep, end = struct.unpack(">ihiiq", r[pos:pos + 22])
    print("error=%d epoch=%d end=%d" % (err, lep, end))


def deleterecords(host, port, topic, offset):
    t = topic.encode()
    body = struct.pack(">i", 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">i", 1) + struct.pack(">iq", 0, int(offset))
    body += struct.pack(">i", 5000)
    s = connect(host, port)
    send(s, header(21, 1, 12) + body)
    r = recv_response(s)
    pos = 4 + 4 + 4          # correlation, throttle, topic count
    tl = struct.unpack(">h", r[pos:pos + 2])[0]
    pos += 2 + tl + 4        # name, partition count
    _part, low, err = struct.unpack(">iqh", r[pos:pos + 14])
    print("error=%d low=%d" % (err, low))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"apiversions": apiversions, "unknown": unknown, "garbage": garbage,
     "refused": refused, "fetchmany": fetchmany, "parktwo": parktwo,
     "epochend": epochend, "deleterecords": deleterecords}[cmd](*args)
