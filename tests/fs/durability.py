# tests/fs/durability.py — the workload and the checks of the crash tests
# (crashpoints.sh, random_kill.sh).
#
#   work MNT ACKS FIRST ROUNDS   run ROUNDS rounds of the workload; every
#       acknowledged record is appended to ACKS as "TOPIC VALUE" (and
#       "deleting TOPIC" before an rmdir). Record values are unique: w<N>
#       from N = FIRST on. Exit 0 when done, 3 when the daemon went away.
#   normalize MNT                bring every broker back and give every
#       partition a leader (restart, then a clean promotion of an ISR
#       member), so that everything can be read.
#   check MNT DATA ACKS EPOCHS   the invariants after a remount; one line
#       per problem, exit 1 if any. EPOCHS keeps the largest leader epoch
#       seen so far (epochs never go back across kills).
#
# A round (2 brokers, topic t with RF 2, acks=all, small segments):
#   acks=all batches; crash broker 2, batches, restart 2, wait for the ISR;
#   promote 2, batches, promote 1; create a topic (RF 1), acks=1 batches,
#   delete it; crash 1, promote 2, restart 1, wait for the ISR, promote 1.
# Every step of every control path of docs/filesystem.md "Crash points" is
# on this path, with rolls, flusher checkpoints and ISR saves under load.
import errno, os, re, sys, time

GONE = (errno.ENOTCONN, errno.ECONNABORTED, errno.ENODEV, errno.EIO)


class Gone(Exception):
    pass


def alive(mnt):
    try:
        os.stat(os.path.join(mnt, "README"))
        return True
    except OSError:
        return False


def put(mnt, path, data):
    """One write(2); the errno on failure, None on success."""
    e = put1(mnt, path, data)
    if e is not None and os.environ.get("MKFS_DEBUG") and "append" not in path:
        sys.stderr.write("%s %s: %s\n" % (path, data.strip(), errno.errorcode.get(e, e)))
    return e


def put1(mnt, path, data):
    try:
        fd = os.open(os.path.join(mnt, path), os.O_WRONLY)
    except OSError as e:
        if not alive(mnt):
            raise Gone()
        return e.errno
    try:
        os.write(fd, data.encode())
        os.close(fd)
        return None
    except OSError as e:
        try:
            os.close(fd)
        except OSError:
            pass
        if not alive(mnt):
            raise Gone()
        return e.errno


def get(mnt, path):
    try:
        with open(os.path.join(mnt, path), "rb") as f:
            return f.read().decode()
    except OSError:
        if not alive(mnt):
            raise Gone()
        return None


def wait_isr(mnt, topic, want, secs=10):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v = get(mnt, "topics/%s/0/isr" % topic)
        if v is not None and v.split() == want:
            return True
        time.sleep(0.005)
    sys.stderr.write("wait_isr %s %s timed out: %s\n" % (topic, want, (get(mnt, "topics/%s/0/state" % topic) or "").replace("\n", " | ")))
    return False


class Work:
    def __init__(self, mnt, acks, first):
        self.mnt = mnt
        self.acks = open(acks, "a")
        self.n = first

    def note(self, line):
        self.acks.write(line + "\n")
        self.acks.flush()

    def batches(self, topic, count, per=5, acks="all"):
        for _ in range(count):
            vals = ["w%d" % (self.n + i) for i in range(per)]
            self.n += per
            err = put(self.mnt, "topics/%s/0/append:acks=%s" % (topic, acks),
                      "".join(v + "\n" for v in vals))
            if err is None:
                for v in vals:
                    self.note("%s %s" % (topic, v))

    def round(self, r):
        m = self.mnt
        if os.environ.get("MKFS_DEBUG"):
            sys.stderr.write("round %d: %s\n" % (r, (get(m, "topics/t/0/state") or "").replace("\n", " | ")))
        # The round is written for broker 1 leading (after a kill and
        # normalize, broker 2 may lead).
        if (get(m, "topics/t/0/leader") or "").strip() != "1":
            put(m, "brokers/1/promote", "t/0\n")
        self.batches("t", 15)
        put(m, "brokers/2/crash", "\n")
        self.batches("t", 5)
        put(m, "brokers/2/restart", "\n")
        wait_isr(m, "t", ["1", "2"])
        put(m, "brokers/2/promote", "t/0\n")
        self.batches("t", 5)
        put(m, "brokers/1/promote", "t/0\n")
        tmp = "tmp%d" % self.n
        if put(m, "ctl", "create-topic %s replication.factor=1\n" % tmp) is None:
            self.batches(tmp, 3, acks="1")
            self.note("deleting %s" % tmp)
            put(m, "ctl", "delete-topic %s\n" % tmp)
        put(m, "brokers/1/crash", "\n")
        put(m, "brokers/2/promote", "t/0\n")
        self.batches("t", 3)
        put(m, "brokers/1/restart", "\n")
        wait_isr(m, "t", ["1", "2"]) or wait_isr(m, "t", ["2", "1"])
        put(m, "brokers/1/promote", "t/0\n")
        put(m, "ctl", "flush\n")


def work(mnt, acks, first, rounds):
    w = Work(mnt, acks, first)
    try:
        if get(mnt, "topics/t/0/leo") is None:
            put(mnt, "ctl", "create-topic t\n")
        for r in range(rounds):
            w.round(r)
    except Gone:
        return 3
    return 0


def topics(mnt):
    try:
        return sorted(os.listdir(os.path.join(mnt, "topics")))
    except OSError:
        return []


def normalize(mnt):
    for b in ("1", "2"):
        if (get(mnt, "brokers/%s/state" % b) or "").strip() == "offline":
            put(mnt, "brokers/%s/restart" % b, "\n")
    for t in topics(mnt):
        n = len([p for p in os.listdir(os.path.join(mnt, "topics", t))
                 if p.isdigit()])
        for p in range(n):
            if (get(mnt, "topics/%s/%d/leader" % (t, p)) or "").strip() != "none":
                continue
            for b in (get(mnt, "topics/%s/%d/isr" % (t, p)) or "").split():
                if put(mnt, "brokers/%s/promote" % b, "%s/%d\n" % (t, p)) is None:
                    break
    put(mnt, "ctl", "replicate\n")
    return 0


def epochs_of(path):
    """A leader-epoch-checkpoint's entries (Kafka's format: version 0, the
    count, then EPOCH START_OFFSET lines); [] when there is none."""
    out = []
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines[2:]:
        f = line.split()
        out.append((int(f[0]), int(f[1])))
    return out


# A broker directory's own files (core/storage/logdir.h), and the temporary
# file a kill can leave beside one of them: no partition's.
BROKER_FILES = tuple(n + t for n in ("recovery-point-offset-checkpoint",
                                     "log-start-offset-checkpoint",
                                     "replication-offset-checkpoint")
                     for t in ("", ".tmp"))


def check(mnt, data, acks, epochs_file):
    bad = []
    acked, deleting = {}, set()
    for line in open(acks):
        f = line.split()
        if f[0] == "deleting":
            deleting.add(f[1])
        else:
            acked.setdefault(f[0], []).append(f[1])
    present = topics(mnt)
    for t, vals in sorted(acked.items()):
        if t not in present:
            if t not in deleting:
                bad.append("topic %s with %d acknowledged records is gone" % (t, len(vals)))
            continue
        rows = [l.split("\t") for l in (get(mnt, "topics/%s/0/records:tsv" % t) or "").splitlines()]
        start = int(get(mnt, "topics/%s/0/log_start_offset" % t) or "0")
        for i, r in enumerate(rows):
            if int(r[0]) != start + i:
                bad.append("%s: offset %s at row %d (expected %d): not contiguous" % (t, r[0], i, start + i))
                break
        seen = {}
        for r in rows:
            seen[r[3]] = seen.get(r[3], 0) + 1
        dups = [v for v, c in seen.items() if c > 1]
        if dups:
            bad.append("%s: %d values more than once (%s...)" % (t, len(dups), dups[0]))
        lost = [v for v in vals if seen.get(v, 0) != 1]
        if lost:
            bad.append("%s: %d of %d acknowledged records missing (%s...)" % (t, len(lost), len(vals), lost[0]))
    # Epochs: every epoch cache increasing; the partition's epoch at least
    # the newest any cache knows, and never lower than before a kill.
    top = 0
    for d in sorted(os.listdir(data)):
        if not d.startswith("broker-"):
            continue
        for part in sorted(os.listdir(os.path.join(data, d))):
            if part in BROKER_FILES:
                continue
            ep = epochs_of(os.path.join(data, d, part, "leader-epoch-checkpoint"))
            for a, b in zip(ep, ep[1:]):
                if not (a[0] < b[0] and a[1] <= b[1]):
                    bad.append("%s/%s: epoch cache not increasing: %s" % (d, part, ep))
                    break
            if part == "t-0" and ep:
                top = max(top, ep[-1][0])
    e = int((get(mnt, "topics/t/0/leader_epoch") or "0").strip() or 0)
    if e < top:
        bad.append("t/0 leader_epoch %d below the epoch %d a log holds" % (e, top))
    before = int(open(epochs_file).read() or 0) if os.path.exists(epochs_file) else 0
    if e < before:
        bad.append("t/0 leader_epoch went back from %d to %d" % (before, e))
    open(epochs_file, "w").write("%d\n" % max(e, before))
    # Metadata and directories agree: every partition directory is a
    # replica the metadata knows, and no deletion is left half done.
    meta = open(os.path.join(data, "metadata")).read()
    if re.search(r"^deleting ", meta, re.M):
        bad.append("metadata still holds a deleting mark after the mount")
    known = set()
    for m in re.finditer(r"^partition (\S+) (\d+) .*replicas=([\d,]+)", meta, re.M):
        for b in m.group(3).split(","):
            known.add("broker-%s/%s-%s" % (b, m.group(1), m.group(2)))
    for d in sorted(os.listdir(data)):
        if d.startswith("broker-"):
            for part in os.listdir(os.path.join(data, d)):
                if part in BROKER_FILES:
                    continue
                if "%s/%s" % (d, part) not in known:
                    bad.append("directory %s/%s is no replica in metadata" % (d, part))
    for b in bad:
        print(b)
    return 1 if bad else 0


def main():
    op, a = sys.argv[1], sys.argv[2:]
    if op == "work":
        return work(a[0], a[1], int(a[2]), int(a[3]))
    if op == "normalize":
        return normalize(a[0])
    if op == "check":
        return check(a[0], a[1], a[2], a[3])
    print("durability.py: unknown op " + op)
    return 2


if __name__ == "__main__":
    sys.exit(main())
