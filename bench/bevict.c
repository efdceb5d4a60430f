/*
 * bevict — drop given files from the page cache, for the cold rows of
 * bench/run.sh (bench/cat_rows.sh).
 *
 *   bevict PATH...
 *
 * Every regular file named, and every regular file below a directory
 * named, is fdatasync'ed (a dirty page cannot be dropped) and then given
 * posix_fadvise(POSIX_FADV_DONTNEED) over its whole length. Only these
 * files leave the cache: unlike writing /proc/sys/vm/drop_caches this
 * needs no privilege and does not slow down whatever else the machine
 * runs. Afterwards each file's pages still resident are counted with
 * mincore(2).
 *
 * Output, one line on stdout:
 *   files=N bytes=B resident_pages=R
 * R should be 0; the kernel may keep a page that another process has
 * mapped or locked. A file of the mount may be named too: a paged
 * records file (docs/filesystem.md) leaves the cache like any other; a
 * records stream (direct I/O) has nothing cached. Exit status 1 on any
 * error, with the reason on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long long nfiles, nbytes, resident;

static int resident_pages(int fd, off_t size, unsigned long long *out)
{
	*out = 0;
	if (size == 0)
		return 0;
	void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		/* A FUSE file opened with direct I/O (a records stream) has
		 * no pages cached and cannot be mapped shared. */
		return errno == ENODEV ? 0 : -1;
	long page = sysconf(_SC_PAGESIZE);
	size_t n = ((size_t)size + (size_t)page - 1) / (size_t)page;
	unsigned char *vec = malloc(n);
	int rc = -1;
	if (vec && mincore(m, (size_t)size, vec) == 0) {
		for (size_t i = 0; i < n; i++)
			*out += vec[i] & 1;
		rc = 0;
	}
	free(vec);
	munmap(m, (size_t)size);
	return rc;
}

static int evict_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "bevict: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	struct stat st;
	int err = fstat(fd, &st);
	if (!err)
		err = fdatasync(fd);
	if (!err)
		err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) ? -1 : 0;
	unsigned long long r = 0;
	if (!err)
		err = resident_pages(fd, st.st_size, &r);
	if (err)
		fprintf(stderr, "bevict: %s: %s\n", path, strerror(errno));
	close(fd);
	nfiles++;
	nbytes += (unsigned long long)st.st_size;
	resident += r;
	return err;
}

static int evict(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "bevict: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (S_ISREG(st.st_mode))
		return evict_file(path);
	if (!S_ISDIR(st.st_mode))
		return 0;
	DIR *d = opendir(path);
	if (!d) {
		fprintf(stderr, "bevict: %s: %s\n", path, strerror(errno));
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t n = strlen(path) + strlen(e->d_name) + 2;
		char *sub = malloc(n);
		if (!sub) {
			rc = -1;
			break;
		}
		snprintf(sub, n, "%s/%s", path, e->d_name);
		if (evict(sub))
			rc = -1;
		free(sub);
	}
	closedir(d);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bevict PATH...\n");
		return 2;
	}
	int rc = 0;
	for (int i = 1; i < argc; i++)
		if (evict(argv[i]))
			rc = 1;
	printf("files=%llu bytes=%llu resident_pages=%llu\n", nfiles, nbytes,
	       resident);
	return rc;
}
