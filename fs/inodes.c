/*
 * inodes.c — two chained hash tables over the same entries: by path and
 * by inode number.
 */
#include "inodes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
	uint64_t ino;
	uint64_t nlookup;
	char *path;
	struct entry *next_by_path, *next_by_ino;
} entry;

struct mk_inodes {
	pthread_mutex_t lock;
	entry **by_path, **by_ino;
	size_t nbuckets, count;
	uint64_t next_ino;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;    /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static uint64_t hash_ino(uint64_t ino)
{
	return ino * 11400714819323198485ULL;
}

static void insert(mk_inodes *t, entry *e)
{
	size_t bp = hash_str(e->path) % t->nbuckets, bi = hash_ino(e->ino) % t->nbuckets;
	e->next_by_path = t->by_path[bp];
	t->by_path[bp] = e;
	e->next_by_ino = t->by_ino[bi];
	t->by_ino[bi] = e;
}

static void grow(mk_inodes *t)
{
	size_t old = t->nbuckets;
	entry **bp = t->by_path;
	t->nbuckets = old * 2;
	t->by_path = calloc(t->nbuckets, sizeof(*t->by_path));
	t->by_ino = (free(t->by_ino), calloc(t->nbuckets, sizeof(*t->by_ino)));
	if (!t->by_path || !t->by_ino)
		abort();
	for (size_t i = 0; i < old; i++)
		for (entry *e = bp[i], *n; e; e = n) {
			n = e->next_by_path;
			insert(t, e);
		}
	free(bp);
}

static entry *add(mk_inodes *t, const char *path, uint64_t ino)
{
	if (t->count >= t->nbuckets)
		grow(t);
	entry *e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup(path)))
		abort();
	e->ino = ino;
	insert(t, e);
	t->count++;
	return e;
}

mk_inodes *mk_inodes_new(void)
{
	mk_inodes *t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	pthread_mutex_init(&t->lock, NULL);
	t->nbuckets = 64;
	t->by_path = calloc(t->nbuckets, sizeof(*t->by_path));
	t->by_ino = calloc(t->nbuckets, sizeof(*t->by_ino));
	if (!t->by_path || !t->by_ino)
		abort();
	t->next_ino = 2;
	add(t, "/", 1)->nlookup = 1;    /* the root is never forgotten */
	return t;
}

void mk_inodes_free(mk_inodes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nbuckets; i++)
		for (entry *e = t->by_path[i], *n; e; e = n) {
			n = e->next_by_path;
			free(e->path);
			free(e);
		}
	free(t->by_path);
	free(t->by_ino);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static entry *find_path(mk_inodes *t, const char *path)
{
	for (entry *e = t->by_path[hash_str(path) % t->nbuckets]; e; e = e->next_by_path)
		if (!strcmp(e->path, path))
			return e;
	return NULL;
}

static entry *find_ino(mk_inodes *t, uint64_t ino)
{
	for (entry *e = t->by_ino[hash_ino(ino) % t->nbuckets]; e; e = e->next_by_ino)
		if (e->ino == ino)
			return e;
	return NULL;
}

uint64_t mk_inodes_ref(mk_inodes *t, const char *path)
{
	pthread_mutex_lock(&t->lock);
	entry *e = find_path(t, path);
	if (!e)
		e = add(t, path, t->next_ino++);
	e->nlookup++;
	uint64_t ino = e->ino;
	pthread_mutex_unlock(&t->lock);
	return ino;
}

bool mk_inodes_path(mk_inodes *t, uint64_t ino, mk_strbuf *out)
{
	pthread_mutex_lock(&t->lock);
	entry *e = find_ino(t, ino);
	if (e)
		mk_strbuf_addstr(out, e->path);
	pthread_mutex_unlock(&t->lock);
	return e != NULL;
}

static void unlink_entry(entry **head, entry *e, bool by_path)
{
	for (entry **pp = head; *pp; pp = by_path ? &(*pp)->next_by_path : &(*pp)->next_by_ino)
		if (*pp == e) {
			*pp = by_path ? e->next_by_path : e->next_by_ino;
			return;
		}
}

void mk_inodes_forget(mk_inodes *t, uint64_t ino, uint64_t n)
{
	if (ino == 1)
		return;
	pthread_mutex_lock(&t->lock);
	entry *e = find_ino(t, ino);
	if (e) {
		e->nlookup = e->nlookup > n ? e->nlookup - n : 0;
		if (!e->nlookup) {
			unlink_entry(&t->by_path[hash_str(e->path) % t->nbuckets], e, true);
			unlink_entry(&t->by_ino[hash_ino(e->ino) % t->nbuckets], e, false);
			t->count--;
			free(e->path);
			free(e);
		}
	}
	pthread_mutex_unlock(&t->lock);
}

size_t mk_inodes_count(mk_inodes *t)
{
	pthread_mutex_lock(&t->lock);
	size_t n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}
