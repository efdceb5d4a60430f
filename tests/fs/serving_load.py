# tests/fs/serving_load.py — many parked requests, and the mount still answers.
#
#   serving_load.py MNT TOPIC PARTITIONS READERS WRITERS OTHER_TOPIC \
#                   [TOPIC_WRITERS CLOSERS GROUPS MEMBERS]
#
# Starts READERS threads, each blocked in one read(2) of
# TOPIC/(i % PARTITIONS)/records@latest:follow, and WRITERS threads, each
# blocked in one acks=all write(2) to TOPIC/(i % PARTITIONS)/append:acks=all:key=wI
# (manual replication: nothing acknowledges them). Each writer has a file
# name of its own: the kernel serialises writes past the end of one file on
# its inode lock, so a second writer of the same file would wait in the
# kernel (holding no daemon thread) rather than be parked by the daemon. "Blocked" is observed:
# every thread is inside read(2)/write(2) (/proc/self/task/TID/syscall) and
# the partitions' log ends hold every writer's record. Then it times other
# operations (ls, cat hw, an acks=1 append to OTHER_TOPIC, /ctl replicate)
# and checks that the replicate acknowledged every writer and the readers
# all returned records. Every wait is bounded polling with a deadline; an
# operation that does not answer in 10 s is a failure (the process then
# exits without waiting for the stuck threads).
#
# The optional loads park the other kinds of waits too: TOPIC_WRITERS
# threads blocked in one acks=all write(2) each to TOPIC/append (the topic
# producer: keyed records routed to partitions); CLOSERS threads that each
# write an unterminated line to a partition's acks=all append file and
# close it (the last close sends the line and owes its acknowledgement:
# the kernel's release is answered, the acknowledgement parked);
# GROUPS * MEMBERS threads blocked in one read(2) each of
# /groups/gG/members/mK/poll:follow (every member joined to TOPIC
# beforehand, nothing to poll yet; one reader per member, since a poll
# consumes what it returns).
#
# Output: "ok - ..." / "FAIL - ..." lines; exit status 1 on any failure.
import os, sys, threading, time

mnt, topic, nparts = sys.argv[1], sys.argv[2], int(sys.argv[3])
nreaders, nwriters, other = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
extra = sys.argv[7:] + ["0", "0", "0", "0"][len(sys.argv[7:]):]
ntwriters, nclosers = int(extra[0]), int(extra[1])
ngroups, nmembers = int(extra[2]), int(extra[3])
npollers = ngroups * nmembers
LIMIT_MS = float(os.environ.get("MKFS_LATENCY_LIMIT_MS", "100"))
failed = False
threading.stack_size(256 * 1024)


def report(ok, what):
    global failed
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        failed = True


def bail(what):
    report(False, what)
    sys.stdout.flush()
    os._exit(1)


def poll(secs, cond):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def in_syscall(tid, nr):
    try:
        with open("/proc/self/task/%d/syscall" % tid) as f:
            return f.read().split()[0] == str(nr)
    except OSError:
        return False


def part(i):
    return "%s/topics/%s/%d" % (mnt, topic, i % nparts)


class Worker(threading.Thread):
    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.tid, self.result, self.error = fn, None, None, None
        self.done = threading.Event()

    def run(self):
        self.tid = threading.get_native_id()
        try:
            self.result = self.fn()
        except OSError as e:
            self.error = e
        self.done.set()


def reader(i):
    def fn():
        fd = os.open(part(i) + "/records@latest:follow", os.O_RDONLY)
        try:
            return os.read(fd, 65536)
        finally:
            os.close(fd)
    return fn


def writer(i):
    def fn():
        fd = os.open(part(i) + "/append:acks=all:key=w%d" % i, os.O_WRONLY)
        try:
            return os.write(fd, b"w-%d\n" % i)
        finally:
            os.close(fd)
    return fn


def topic_writer(i):
    def fn():
        fd = os.open("%s/topics/%s/append:acks=all:key=t%d" % (mnt, topic, i), os.O_WRONLY)
        try:
            return os.write(fd, b"t-%d\n" % i)
        finally:
            os.close(fd)
    return fn


def closer(i):
    def fn():
        fd = os.open(part(i) + "/append:acks=all:key=c%d" % i, os.O_WRONLY)
        n = os.write(fd, b"c-%d" % i)
        os.close(fd)
        return n
    return fn


def poller(i):
    def fn():
        fd = os.open("%s/groups/g%d/members/m%d/poll:follow"
                     % (mnt, i // nmembers, i % nmembers), os.O_RDONLY)
        try:
            return os.read(fd, 65536)
        finally:
            os.close(fd)
    return fn


# The operations are timed in a helper process started before the load, so
# that the 1,100 threads of this one (and their interpreter lock) are not
# part of the measure. It runs one operation per line of its stdin and
# prints the milliseconds it took, or "error ERRNO".
HELPER = r"""
import os, sys, time
for line in sys.stdin:
    op, path = line.split(" ", 1)
    path = path.rstrip("\n")
    t0 = time.monotonic()
    try:
        if op == "ls":
            os.listdir(path)
        elif op == "cat":
            with open(path, "rb") as f:
                f.read()
        else:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, op.encode() + b"\n" if op != "put" else b"side\n")
            finally:
                os.close(fd)
        print("%.3f" % ((time.monotonic() - t0) * 1000), flush=True)
    except OSError as e:
        print("error %s" % e, flush=True)
"""
import subprocess
helper = subprocess.Popen([sys.executable, "-I", "-c", HELPER], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, bufsize=1)


def timed(what, op, path, reps=5, limit=None):
    """Run op on path reps times in the helper, each bounded by 10 s."""
    times = []
    for _ in range(reps):
        helper.stdin.write("%s %s\n" % (op, path))
        helper.stdin.flush()
        got = []
        w = Worker(lambda: got.append(helper.stdout.readline()))
        w.start()
        if not w.done.wait(10):
            bail("%s did not answer within 10 s" % what)
        line = got[0].strip() if got else "error: no answer"
        if line.startswith("error"):
            bail("%s failed: %s" % (what, line))
        times.append(float(line))
    times.sort()
    med = times[len(times) // 2]
    limit = limit or LIMIT_MS
    report(med < limit, "%s answers in %.1f ms (median of %d; max %.1f ms; limit %d ms)"
           % (what, med, reps, times[-1], limit))
    return times


def read_file(p):
    with open(p, "rb") as f:
        return f.read()


def leo_sum():
    return sum(int(read_file(part(i) + "/leo")) for i in range(nparts))


base = leo_sum()
readers = [Worker(reader(i)) for i in range(nreaders)]
for w in readers:
    w.start()
if not poll(60, lambda: all(w.tid and in_syscall(w.tid, 0) for w in readers)):
    n = sum(1 for w in readers if w.tid and in_syscall(w.tid, 0))
    bail("only %d of %d readers blocked in read(2)" % (n, nreaders))
report(True, "%d readers blocked in read(2) on records@latest:follow" % nreaders)
writers = [Worker(writer(i)) for i in range(nwriters)]
for w in writers:
    w.start()
if not poll(60, lambda: leo_sum() == base + nwriters and
            all(w.tid and in_syscall(w.tid, 1) for w in writers)):
    bail("the %d acks=all writers did not all append and block (leo sum %d, expected %d)"
         % (nwriters, leo_sum(), base + nwriters))
report(True, "%d acks=all writers appended and blocked in write(2)" % nwriters)
twriters = [Worker(topic_writer(i)) for i in range(ntwriters)]
for w in twriters:
    w.start()
if ntwriters:
    if not poll(60, lambda: leo_sum() == base + nwriters + ntwriters and
                all(w.tid and in_syscall(w.tid, 1) for w in twriters)):
        bail("the %d topic acks=all writers did not all append and block (leo sum %d, expected %d)"
             % (ntwriters, leo_sum(), base + nwriters + ntwriters))
    report(True, "%d topic acks=all writers appended and blocked in write(2)" % ntwriters)
closers = [Worker(closer(i)) for i in range(nclosers)]
for w in closers:
    w.start()
if nclosers:
    expect = base + nwriters + ntwriters + nclosers
    if not poll(60, lambda: all(w.done.is_set() for w in closers) and leo_sum() == expect):
        bail("the %d closers did not all close and append (leo sum %d, expected %d)"
             % (nclosers, leo_sum(), expect))
    report(not any(w.error for w in closers),
           "%d acks=all appends closed with a carried line: close(2) returned, the line appended"
           % nclosers)
pollers = [Worker(poller(i)) for i in range(npollers)]
for w in pollers:
    w.start()
if npollers:
    if not poll(60, lambda: all(w.tid and in_syscall(w.tid, 0) for w in pollers)):
        n = sum(1 for w in pollers if w.tid and in_syscall(w.tid, 0))
        bail("only %d of %d pollers blocked in read(2)" % (n, npollers))
    report(True, "%d pollers blocked in read(2) on poll:follow" % npollers)
parked = readers + writers + twriters + pollers
report(not any(w.done.is_set() for w in parked),
       "no parked request answered before its event")

timed("ls /topics/%s" % topic, "ls", "%s/topics/%s" % (mnt, topic))
timed("ls /", "ls", mnt)
timed("cat hw", "cat", part(0) + "/hw")
timed("cat state", "cat", part(1) + "/state")
timed("append:acks=1 to another topic", "put", "%s/topics/%s/0/append:acks=1" % (mnt, other))
report(not any(w.done.is_set() for w in parked),
       "the parked requests are still parked after those operations")
# The replicate is the event itself: it runs a fetch round of every
# partition (the followers' appends and their disk writes) and wakes the
# parked requests, so it is allowed five times the others' bound.
timed("/ctl replicate", "replicate", mnt + "/ctl", reps=1, limit=5 * LIMIT_MS)
ok = poll(30, lambda: all(w.done.is_set() for w in writers + twriters))
report(ok, "every acks=all writer was answered after the replicate")
errs = [w.error for w in writers + twriters if w.error]
report(not errs and all(w.result for w in writers + twriters),
       "and every write succeeded (%s)" % (errs[0] if errs else "no error"))
if npollers:
    ok = poll(60, lambda: all(w.done.is_set() for w in pollers))
    n = sum(1 for w in pollers if w.done.is_set())
    report(ok, "every poller was answered once the HW moved (%d of %d)" % (n, npollers))
    bad = [w for w in pollers if w.error or not w.result]
    report(not bad, "and each poll returned records (%d empty or failed)" % len(bad))
# The writers' records became visible (HW moved): each reader wakes.
ok = poll(60, lambda: all(w.done.is_set() for w in readers))
n = sum(1 for w in readers if w.done.is_set())
report(ok, "every reader was answered once the HW moved (%d of %d)" % (n, nreaders))
bad = [w for w in readers if w.error or not w.result]
report(not bad, "and each returned records (%d empty or failed)" % len(bad))
total = leo_sum()
report(total == base + nwriters + ntwriters + nclosers,
       "each writer's record is in the log once (leo sum %d)" % total)
helper.stdin.close()
helper.wait()
sys.exit(1 if failed else 0)
