#include "topic_name.h"

#include <string.h>

bool mk_topic_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > MK_TOPIC_NAME_MAX)
		return false;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool mk_topic_name_internal(const char *name)
{
	return !strcmp(name, "__consumer_offsets") ||
	       !strcmp(name, "__transaction_state");
}
