/*
 * nullfs — a do-nothing FUSE filesystem, the transport ceiling for the
 * benchmarks in bench/run.sh.
 *
 *   nullfs [-f] [-o source_size=SIZE] [-o store=FILE] MOUNTPOINT
 *                                                     (SIZE: bytes, or K/M/G)
 *
 *   /sink    w  accepts any write and discards it
 *   /store   w  with -o store=FILE: every write goes into FILE at
 *               the same offset, with pwrite(2) (an open with O_TRUNC
 *               truncates FILE), and
 *               nothing else is done: the ceiling of any FUSE daemon that
 *               keeps the bytes it is given in the page cache, without
 *               parsing or framing them (run.sh's "nullfs-store" row)
 *   /source  r  SIZE bytes (default 1 GiB, or $NULLFS_SOURCE_SIZE) of
 *               100-byte lines (99 characters and '\n'), made in memory
 *   /stats   r  request counts and the largest read/write request seen
 *
 * Both data files are opened with direct_io, as the daemon opens its dynamic
 * files, and init() asks for the same 1 MiB max_write as the daemon. Reads
 * need no max_read: left at 0 it means "no limit of our own", and the kernel
 * bounds a read by max_pages, which libfuse derives from max_write (setting
 * conn->max_read would also require the -o max_read mount option). /stats
 * shows the request sizes the kernel really sent.
 *
 * High-level libfuse3 API, multithreaded default loop (no -s), 16 idle
 * worker threads unless -o max_idle_threads= says otherwise (as the daemon).
 */
#define FUSE_USE_VERSION 31

#include <fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "benchutil.h"

#define NULLFS_MAX_WRITE (1u << 20)
#define LINE BENCH_RECORD

static uint64_t source_size = 1ull << 30;
/* One period of the /source pattern plus room for the largest request, so a
 * read is a single memcpy from offset % LINE. */
static char *pattern;
static size_t pattern_len;

static atomic_ullong n_writes, n_write_bytes, max_write_seen;
static atomic_ullong n_reads, n_read_bytes, max_read_seen;

static void note_max(atomic_ullong *max, unsigned long long v)
{
    unsigned long long cur = atomic_load(max);
    while (v > cur && !atomic_compare_exchange_weak(max, &cur, v))
        ;
}

enum node { N_NONE, N_ROOT, N_SINK, N_SOURCE, N_STATS, N_STORE };

/* -o store=FILE: the file /store writes go to; -1 without the option. */
static int store_fd = -1;

static enum node node_of(const char *path)
{
    if (strcmp(path, "/") == 0)
        return N_ROOT;
    if (strcmp(path, "/sink") == 0)
        return N_SINK;
    if (strcmp(path, "/source") == 0)
        return N_SOURCE;
    if (strcmp(path, "/stats") == 0)
        return N_STATS;
    if (strcmp(path, "/store") == 0 && store_fd >= 0)
        return N_STORE;
    return N_NONE;
}

static void *nf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    conn->max_write = NULLFS_MAX_WRITE;
    cfg->attr_timeout = 1.0;
    cfg->entry_timeout = 1.0;
    return NULL;
}

static int nf_getattr(const char *path, struct stat *st,
                      struct fuse_file_info *fi)
{
    (void)fi;
    memset(st, 0, sizeof *st);
    st->st_nlink = 1;
    switch (node_of(path)) {
    case N_ROOT:
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    case N_SINK:
    case N_STORE:
        st->st_mode = S_IFREG | 0666;
        return 0;
    case N_SOURCE:
        st->st_mode = S_IFREG | 0444;
        st->st_size = (off_t)source_size;
        return 0;
    case N_STATS:
        st->st_mode = S_IFREG | 0444;
        return 0;
    case N_NONE:
        break;
    }
    return -ENOENT;
}

static int nf_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
                      off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    if (node_of(path) != N_ROOT)
        return -ENOTDIR;
    static const char *const names[] = { ".", "..", "sink", "source", "stats" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        fill(buf, names[i], NULL, 0, 0);
    if (store_fd >= 0)
        fill(buf, "store", NULL, 0, 0);
    return 0;
}

static int nf_open(const char *path, struct fuse_file_info *fi)
{
    int acc = fi->flags & O_ACCMODE;
    switch (node_of(path)) {
    case N_SINK:
        break;
    case N_STORE:
        /* libfuse enables atomic O_TRUNC: the flag comes with the open,
         * no truncate follows. */
        if ((fi->flags & O_TRUNC) && ftruncate(store_fd, 0))
            return -errno;
        break;
    case N_SOURCE:
    case N_STATS:
        if (acc != O_RDONLY)
            return -EACCES;
        break;
    case N_ROOT:
        return -EISDIR;
    case N_NONE:
        return -ENOENT;
    }
    fi->direct_io = 1;
    return 0;
}

/* A truncate (open's O_TRUNC arrives with the open: nf_open). */
static int nf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    (void)size;
    (void)fi;
    switch (node_of(path)) {
    case N_SINK:
        return 0;
    case N_STORE:
        return ftruncate(store_fd, size) == 0 ? 0 : -errno;
    default:
        return -EACCES;
    }
}

static int nf_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)fi;
    if (node_of(path) == N_STORE) {
        size_t done = 0;
        while (done < size) {
            ssize_t n = pwrite(store_fd, buf + done, size - done,
                               off + (off_t)done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return n < 0 ? -errno : -EIO;
            done += (size_t)n;
        }
    }
    atomic_fetch_add(&n_writes, 1);
    atomic_fetch_add(&n_write_bytes, size);
    note_max(&max_write_seen, size);
    return (int)size;
}

static int read_stats(char *buf, size_t size, off_t off)
{
    char text[512];
    int n = snprintf(text, sizeof text,
                     "writes %llu\nwrite_bytes %llu\nmax_write_request %llu\n"
                     "reads %llu\nread_bytes %llu\nmax_read_request %llu\n",
                     atomic_load(&n_writes), atomic_load(&n_write_bytes),
                     atomic_load(&max_write_seen), atomic_load(&n_reads),
                     atomic_load(&n_read_bytes), atomic_load(&max_read_seen));
    if (n < 0 || off >= n)
        return 0;
    size_t len = (size_t)n - (size_t)off;
    if (len > size)
        len = size;
    memcpy(buf, text + off, len);
    return (int)len;
}

static int nf_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)fi;
    switch (node_of(path)) {
    case N_STATS:
        return read_stats(buf, size, off);
    case N_SOURCE:
        break;
    default:
        return 0; /* /sink reads as empty */
    }
    if (off < 0 || (uint64_t)off >= source_size)
        return 0;
    if (size > source_size - (uint64_t)off)
        size = (size_t)(source_size - (uint64_t)off);
    atomic_fetch_add(&n_reads, 1);
    atomic_fetch_add(&n_read_bytes, size);
    note_max(&max_read_seen, size);
    size_t done = 0;
    while (done < size) {
        size_t start = (size_t)(((uint64_t)off + done) % LINE);
        size_t n = size - done;
        if (n > pattern_len - start)
            n = pattern_len - start;
        memcpy(buf + done, pattern + start, n);
        done += n;
    }
    return (int)size;
}

static const struct fuse_operations nf_ops = {
    .init = nf_init,
    .getattr = nf_getattr,
    .readdir = nf_readdir,
    .open = nf_open,
    .truncate = nf_truncate,
    .read = nf_read,
    .write = nf_write,
};

struct nf_opts {
    char *source_size;
    char *store;
};

static const struct fuse_opt nf_optspec[] = {
    { "source_size=%s", offsetof(struct nf_opts, source_size), 0 },
    { "store=%s", offsetof(struct nf_opts, store), 0 },
    FUSE_OPT_END
};

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct nf_opts opts = { NULL, NULL };
    if (fuse_opt_parse(&args, &opts, nf_optspec, NULL) == -1)
        return 1;
    const char *size_text = opts.source_size ? opts.source_size
                                             : getenv("NULLFS_SOURCE_SIZE");
    if (size_text && bench_parse_size(size_text, &source_size) != 0) {
        fprintf(stderr, "nullfs: bad source size '%s'\n", size_text);
        return 1;
    }
    free(opts.source_size);
    if (opts.store) {
        /* Opened before fuse_main daemonizes: the path may be relative. */
        store_fd = open(opts.store, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (store_fd < 0) {
            perror(opts.store);
            free(opts.store);
            return 1;
        }
        free(opts.store);
    }

    /* Largest single request the kernel can send, rounded up, plus a period. */
    pattern_len = NULLFS_MAX_WRITE * 2 + LINE;
    pattern = malloc(pattern_len);
    if (!pattern) {
        perror("nullfs: malloc");
        return 1;
    }
    for (size_t i = 0; i < pattern_len; i++) {
        size_t col = i % LINE;
        pattern[i] = col == LINE - 1 ? '\n' : (char)('a' + col % 26);
    }

    /* As the daemon does: 16 idle worker threads, which also keeps libfuse
     * 3.14 from warning about its own default. */
    int have_idle = 0;
    for (int i = 0; i < args.argc; i++)
        have_idle |= strstr(args.argv[i], "max_idle_threads=") != NULL;
    if (!have_idle && fuse_opt_add_arg(&args, "-omax_idle_threads=16") != 0)
        return 1;
    int rc = fuse_main(args.argc, args.argv, &nf_ops, NULL);
    fuse_opt_free_args(&args);
    free(pattern);
    return rc;
}
