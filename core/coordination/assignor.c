/*
 * assignor.c — round-robin over sorted members and sorted partitions.
 */
#include "assignor.h"
#include "xalloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool subscribes(const mk_assign_member *m, const char *topic)
{
	for (size_t i = 0; i < m->ntopics; i++)
		if (!strcmp(m->topics[i], topic))
			return true;
	return false;
}

size_t mk_assign_round_robin(const mk_assign_member *members, size_t nmembers,
			     const mk_assign_topic *topics, size_t ntopics,
			     mk_assign_pair **out)
{
	*out = NULL;
	if (!nmembers || !ntopics)
		return 0;
	/* Sort index arrays, so the caller's order does not matter. */
	size_t *mi = mk_xmalloc(nmembers * sizeof(*mi));
	size_t *ti = mk_xmalloc(ntopics * sizeof(*ti));
	if (!mi || !ti) {
		free(mi);
		free(ti);
		return 0;
	}
	for (size_t i = 0; i < nmembers; i++)
		mi[i] = i;
	for (size_t i = 0; i < ntopics; i++)
		ti[i] = i;
	/* Insertion sorts: no shared state, and the sets are small. */
	for (size_t i = 1; i < nmembers; i++)
		for (size_t j = i; j > 0 && strcmp(members[mi[j - 1]].name,
						   members[mi[j]].name) > 0; j--) {
			size_t t = mi[j];
			mi[j] = mi[j - 1];
			mi[j - 1] = t;
		}
	for (size_t i = 1; i < ntopics; i++)
		for (size_t j = i; j > 0 && strcmp(topics[ti[j - 1]].name,
						   topics[ti[j]].name) > 0; j--) {
			size_t t = ti[j];
			ti[j] = ti[j - 1];
			ti[j - 1] = t;
		}
	size_t total = 0;
	for (size_t i = 0; i < ntopics; i++)
		if (topics[i].partitions > 0)
			total += (size_t)topics[i].partitions;
	mk_assign_pair *pairs = mk_xcalloc(total ? total : 1, sizeof(*pairs));
	size_t n = 0, next = 0;
	for (size_t k = 0; k < ntopics && pairs; k++) {
		const mk_assign_topic *t = &topics[ti[k]];
		/* Skip duplicates of a topic given twice. */
		if (k > 0 && !strcmp(topics[ti[k - 1]].name, t->name))
			continue;
		for (int p = 0; p < t->partitions; p++) {
			for (size_t tries = 0; tries < nmembers; tries++) {
				size_t m = mi[next];
				next = (next + 1) % nmembers;
				if (subscribes(&members[m], t->name)) {
					pairs[n++] = (mk_assign_pair){ m, t->name, p };
					break;
				}
			}
		}
	}
	free(mi);
	free(ti);
	*out = pairs;
	return n;
}
