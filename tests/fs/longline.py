# tests/fs/longline.py — writes from a buffer at a chosen page offset.
#
# Used by longline.sh: the kernel splits one write(2) to a direct-I/O file
# into pieces by the pages of the user's buffer (the first piece is
# max_write less the buffer's offset in its page), so where a buffer starts
# decides where a long line is cut. One process opens PATH O_WRONLY and
# runs the operations given, in order, printing one word per operation on
# one line:
#
#   line N [@OFF]     one write(2) of N bytes, 'x' * (N - 1) + '\n', from a
#                     buffer OFF bytes into a page (default: the second
#                     argument)
#   raw N [@OFF]       the same without the newline ('x' * N)
#   lines K L N [@OFF] one write(2) of K lines of L bytes (newline counted)
#                     then one line of N bytes
#   rest              one write(2) of what the last write left unwritten
#                     (after a short count; nothing: "none")
#   text DATA         one write(2) of DATA (\n \t escapes), a plain buffer
#   close             close(2)
#   open              open PATH again (after a close)
#
# A write prints the count it returned ("all" when it is the whole
# buffer) or the errno name; close prints "ok" or the errno name. The
# process goes on after a failure.
import codecs, errno, mmap, os, sys

PAGE = mmap.PAGESIZE


def ename(e):
    return errno.errorcode.get(e.errno, "E%s" % e.errno)


def placed(data, off):
    """A memoryview of data starting off bytes into a page (anonymous
    memory: page aligned), kept alive by the returned mapping."""
    m = mmap.mmap(-1, off + len(data) + PAGE)
    m[off:off + len(data)] = data
    return m, memoryview(m)[off:off + len(data)]


def main():
    path, default_off, ops = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    fd = os.open(path, os.O_WRONLY)
    out, left, i = [], b"", 0
    while i < len(ops):
        op = ops[i]
        argc = {"line": 1, "raw": 1, "lines": 3, "text": 1}.get(op, 0)
        args = ops[i + 1:i + 1 + argc]
        i += 1 + argc
        # an optional page offset after the sized operations
        off = default_off
        if op in ("line", "raw", "lines") and i < len(ops) and ops[i].startswith("@"):
            off = int(ops[i][1:])
            i += 1
        if op == "open":
            fd = os.open(path, os.O_WRONLY)
            out.append("ok")
            continue
        if op == "close":
            try:
                os.close(fd)
                out.append("ok")
            except OSError as e:
                out.append(ename(e))
            fd = None
            continue
        if op == "line":
            n = int(args[0])
            data = b"x" * (n - 1) + b"\n"
        elif op == "raw":
            data = b"x" * int(args[0])
        elif op == "lines":
            k, l, n = (int(a) for a in args)
            data = (b"a" * (l - 1) + b"\n") * k + b"x" * (n - 1) + b"\n"
        elif op == "rest":
            if not left:
                out.append("none")
                continue
            data, off = left, 0
        elif op == "text":
            data, off = codecs.escape_decode(os.fsencode(args[0]))[0], None
        else:
            print("longline.py: unknown op " + op)
            sys.exit(2)
        m = None
        buf = data
        if off is not None:
            m, buf = placed(data, off)
        try:
            n = os.write(fd, buf)
            out.append("all" if n == len(data) else str(n))
            left = data[n:]
        except OSError as e:
            out.append(ename(e))
            left = b""
        if m is not None:
            buf.release()
            m.close()
    if fd is not None:
        os.close(fd)
    print(" ".join(out))


main()
