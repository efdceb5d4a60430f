#!/usr/bin/env python3
"""Cross-check of core/storage/compress.c with kafka-python's codecs
(kafka.codec), both ways, for a few inputs:

  ours -> theirs: what compress_tool compresses, kafka.codec's
      gzip_decode, snappy_decode, lz4_decode and zstd_decode read back;
  theirs -> ours: what gzip_encode, snappy_encode (xerial framing, as the
      Java client writes, and a raw block, as librdkafka writes),
      lz4_encode and zstd_encode produce, compress_tool decompresses.

    kafka_codecs.py COMPRESS_TOOL

Run by the system python (/usr/bin/python3, with python3-kafka,
python3-snappy, python3-lz4 and python3-zstandard); exit 77 (a skip, for
meson) when kafka.codec cannot be imported. A codec whose python module is
missing is skipped with a line saying so. Exit 1 on any mismatch.

One case is left out on purpose: kafka-python's snappy_decode takes a
xerial stream only when it is longer than its 16-byte header, so it cannot
read the header-only stream of an empty input (what snappy-java writes
too); compress_tool reads kafka-python's own encoding of it instead.
"""
import random
import subprocess
import sys

try:
    from kafka import codec as kc
except ImportError as e:
    print(f"skipped: kafka-python is not importable ({e})")
    sys.exit(77)

tool = sys.argv[1]
rng = random.Random(20240611)
WORDS = [b"order", b"id=", b"customer", b"total", b"42", b"EUR", b",", b"\n"]


def words(n):
    out = bytearray()
    while len(out) < n:
        out += rng.choice(WORDS)
    return bytes(out[:n])


INPUTS = {
    "empty": b"",
    "one byte": b"x",
    "small": b"hello kafka, hello minikafka",
    "text 100 KiB": words(100 * 1024),
    "random 200 KiB": rng.randbytes(200 * 1024),
    "zeros 1 MiB": bytes(1024 * 1024),
}

failures = 0


def run(mode, codec, data, arg=None):
    cmd = [tool, mode, codec] + ([str(arg)] if arg is not None else [])
    p = subprocess.run(cmd, input=data, capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode(errors="replace").strip())
    return p.stdout


def check(what, fn):
    global failures
    try:
        ok = fn()
    except Exception as e:  # a decoder's refusal is a failure too
        ok, why = False, f"{type(e).__name__}: {e}"
    else:
        why = "" if ok else "bytes differ"
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + why if why else ''}")
    if not ok:
        failures += 1


def ours_to_theirs(codec, decode, levels):
    for name, data in INPUTS.items():
        if codec == "snappy" and not data:
            continue  # see the module comment
        for level in levels:
            label = f"ours->kafka-python {codec}" + \
                (f" level {level}" if level is not None else "") + f" {name}"
            check(label, lambda: decode(run("c", codec, data, level)) == data)


def theirs_to_ours(codec, encoders):
    for name, data in INPUTS.items():
        for how, encode in encoders:
            label = f"kafka-python->ours {codec}{how} {name}"
            check(label, lambda: run("d", codec, encode(data)) == data)


CODECS = [
    ("gzip", kc.has_gzip(), kc.gzip_decode, [None, 1, 9],
     [("", kc.gzip_encode), (" level 1", lambda d: kc.gzip_encode(d, 1))]),
    ("snappy", kc.has_snappy(), kc.snappy_decode, [None],
     [(" xerial", lambda d: kc.snappy_encode(d, xerial_compatible=True)),
      (" raw", lambda d: kc.snappy_encode(d, xerial_compatible=False))]),
    ("lz4", kc.has_lz4(), kc.lz4_decode, [None, 9],
     [("", kc.lz4_encode)]),
    ("zstd", kc.has_zstd(), kc.zstd_decode, [None, 1, 19],
     [("", kc.zstd_encode)]),
]

for codec, present, decode, levels, encoders in CODECS:
    if not present:
        print(f"skipped: {codec} (its python module is missing)")
        continue
    ours_to_theirs(codec, decode, levels)
    theirs_to_ours(codec, encoders)

print(f"{failures} failed")
sys.exit(1 if failures else 0)
