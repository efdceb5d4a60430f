#include "errlog.h"

#include <stdarg.h>
#include <stdlib.h>

void mk_errlog_init(mk_errlog *log)
{
	pthread_mutex_init(&log->lock, NULL);
	log->head = 0;
	log->count = 0;
	for (size_t i = 0; i < MK_ERRLOG_LINES; i++)
		log->lines[i] = NULL;
}

void mk_errlog_destroy(mk_errlog *log)
{
	for (size_t i = 0; i < MK_ERRLOG_LINES; i++)
		free(log->lines[i]);
	pthread_mutex_destroy(&log->lock);
}

void mk_errlog_add(mk_errlog *log, int64_t time_ms, const char *path,
		   mk_err code, const char *fmt, ...)
{
	mk_strbuf line = MK_STRBUF_INIT;
	mk_strbuf_addf(&line, "%lld %s %s ", (long long)time_ms,
		       path && *path ? path : "-", mk_err_name(code));
	va_list ap;
	va_start(ap, fmt);
	mk_strbuf_vaddf(&line, fmt, ap);
	va_end(ap);
	/* One line per error: fold any newline the message carried. */
	for (size_t i = 0; i < line.len; i++)
		if (line.buf[i] == '\n' || line.buf[i] == '\r')
			line.buf[i] = ' ';
	char *text = mk_strbuf_detach(&line, NULL);

	pthread_mutex_lock(&log->lock);
	size_t slot;
	if (log->count < MK_ERRLOG_LINES) {
		slot = (log->head + log->count) % MK_ERRLOG_LINES;
		log->count++;
	} else {
		slot = log->head;
		log->head = (log->head + 1) % MK_ERRLOG_LINES;
	}
	free(log->lines[slot]);
	log->lines[slot] = text;
	pthread_mutex_unlock(&log->lock);
}

void mk_errlog_format(mk_errlog *log, mk_strbuf *out)
{
	pthread_mutex_lock(&log->lock);
	for (size_t i = 0; i < log->count; i++) {
		mk_strbuf_addstr(out, log->lines[(log->head + i) % MK_ERRLOG_LINES]);
		mk_strbuf_addch(out, '\n');
	}
	pthread_mutex_unlock(&log->lock);
}
