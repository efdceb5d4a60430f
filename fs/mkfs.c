/*
 * mkfs.c — the helpers the node-function files share (mkfs.h).
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

mk_err mk_node_coordinator_check(const void *coordinator, const char *what,
				 mk_err code, bool changes,
				 const mk_coord_call *call, mk_strbuf *why)
{
	if (!coordinator)
		return mk_error(why, code, "the %s coordinator is not running", what);
	if (changes && !call)
		return mk_error(why, MK_INVALID_REQUEST,
				"this command waits for the %s coordinator and runs as a job", what);
	return MK_OK;
}
