/*
 * topic_name.h — Kafka's rule for topic (and other entity) names:
 * 1..249 characters of [A-Za-z0-9._-], and not "." or "..". Such a name is
 * always a single, harmless path component under DATA_DIR.
 */
#ifndef MK_TOPIC_NAME_H
#define MK_TOPIC_NAME_H

#include <stdbool.h>

#define MK_TOPIC_NAME_MAX 249

bool mk_topic_name_valid(const char *name);
/* Internal topics (__consumer_offsets, __transaction_state): users read them but cannot
 * append to or delete them. */
bool mk_topic_name_internal(const char *name);

#endif
