/*
 * mkfs.c — the helper the node-function files share (mkfs.h).
 */
#include "mkfs.h"

#include <string.h>

const char *mk_duplicate_key(char *const *words, int n)
{
	for (int i = 1; i < n; i++) {
		size_t ki = strcspn(words[i], "=");
		for (int j = 0; j < i; j++)
			if (strcspn(words[j], "=") == ki && !strncmp(words[i], words[j], ki))
				return words[i];
	}
	return NULL;
}
