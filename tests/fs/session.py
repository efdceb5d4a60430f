# tests/fs/session.py — hold descriptors open across several operations.
#
# Used by producer.sh and topic_append.sh (through mk_session): one process
# opens named descriptors and runs the operations given as arguments, in
# order, printing exactly one line per operation:
#
#   open NAME MODE PATH   MODE w (O_WRONLY), rw (O_RDWR) or r (O_RDONLY)
#   write NAME DATA       one write(2); DATA has \n \t \\ \xHH escapes
#   read NAME             one read(2) of up to 1 MiB (receipts)
#   fsync NAME | close NAME
#   put PATH DATA         open O_WRONLY, one write(2), close (e.g. /clock)
#   get PATH              the whole file
#   mark FILE             create FILE (a signal to the script)
#   wait FILE             poll until FILE exists (at most 60 s)
#
# The line is "ok" for a success without data, the errno name (ESTALE, ...)
# for a failure, or the data read with each newline shown as '|' (a final
# newline dropped). The process keeps going after a failure; it closes what
# is still open at the end. Nothing here waits a fixed time.
import codecs, errno, os, sys, time

fds = {}


def ename(e):
    return errno.errorcode.get(e.errno, "E%s" % e.errno)


def text(b):
    s = b.decode("utf-8", "backslashreplace")
    if s.endswith("\n"):
        s = s[:-1]
    return s.replace("\n", "|")


def data(s):
    return codecs.escape_decode(os.fsencode(s))[0]


def run(op):
    parts = op.split(" ", 1)
    verb, rest = parts[0], parts[1] if len(parts) > 1 else ""
    if verb == "open":
        name, mode, path = rest.split(" ", 2)
        flags = {"w": os.O_WRONLY, "rw": os.O_RDWR, "r": os.O_RDONLY}[mode]
        fds[name] = os.open(path, flags)
        return "ok"
    if verb == "write":
        name, _, d = rest.partition(" ")
        b = data(d)
        n = os.write(fds[name], b)
        return "ok" if n == len(b) else "short %d of %d" % (n, len(b))
    if verb == "read":
        return text(os.read(fds[rest], 1 << 20))
    if verb == "fsync":
        os.fsync(fds[rest])
        return "ok"
    if verb == "close":
        fd = fds.pop(rest)
        os.close(fd)
        return "ok"
    if verb == "put":
        path, _, d = rest.partition(" ")
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data(d))
        finally:
            os.close(fd)
        return "ok"
    if verb == "get":
        with open(rest, "rb") as f:
            return text(f.read())
    if verb == "mark":
        open(rest, "w").close()
        return "ok"
    if verb == "wait":
        for _ in range(3000):
            if os.path.exists(rest):
                return "ok"
            time.sleep(0.02)
        return "timeout"
    return "unknown op " + verb


for op in sys.argv[1:]:
    try:
        out = run(op)
    except OSError as e:
        out = ename(e)
    except KeyError as e:
        out = "not-open %s" % e
    print(out, flush=True)
for fd in fds.values():
    try:
        os.close(fd)
    except OSError:
        pass
