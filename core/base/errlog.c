#include "errlog.h"
#include "xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void mk_errlog_init(mk_errlog *log)
{
	pthread_mutex_init(&log->lock, NULL);
	log->head = 0;
	log->count = 0;
	for (size_t i = 0; i < MK_ERRLOG_LINES; i++)
		log->lines[i] = NULL;
	log->held = NULL;
	log->held_path = NULL;
}

void mk_errlog_destroy(mk_errlog *log)
{
	for (size_t i = 0; i < MK_ERRLOG_LINES; i++)
		free(log->lines[i]);
	free(log->held);
	free(log->held_path);
	pthread_mutex_destroy(&log->lock);
}

static char *format_line(int64_t time_ms, const char *path, mk_err code,
			 const char *fmt, va_list ap)
{
	mk_strbuf line = MK_STRBUF_INIT;
	mk_strbuf_addf(&line, "%lld %s %s ", (long long)time_ms,
		       path && *path ? path : "-", mk_err_name(code));
	mk_strbuf_vaddf(&line, fmt, ap);
	/* One line per error: fold any newline the message carried. */
	for (size_t i = 0; i < line.len; i++)
		if (line.buf[i] == '\n' || line.buf[i] == '\r')
			line.buf[i] = ' ';
	return mk_strbuf_detach(&line, NULL);
}

static void push_locked(mk_errlog *log, char *text)
{
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
}

static void commit_held_locked(mk_errlog *log)
{
	if (!log->held)
		return;
	push_locked(log, log->held);
	log->held = NULL;
	free(log->held_path);
	log->held_path = NULL;
}

void mk_errlog_add(mk_errlog *log, int64_t time_ms, const char *path,
		   mk_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = format_line(time_ms, path, code, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log->lock);
	commit_held_locked(log);
	push_locked(log, text);
	pthread_mutex_unlock(&log->lock);
}

void mk_errlog_hold(mk_errlog *log, int64_t time_ms, const char *path,
		    mk_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = format_line(time_ms, path, code, fmt, ap);
	va_end(ap);
	char *p = mk_xstrdup(path ? path : "");
	pthread_mutex_lock(&log->lock);
	commit_held_locked(log);
	log->held = text;
	log->held_path = p;
	pthread_mutex_unlock(&log->lock);
}

void mk_errlog_drop_held(mk_errlog *log, const char *path)
{
	pthread_mutex_lock(&log->lock);
	if (log->held && !strcmp(log->held_path, path)) {
		free(log->held);
		free(log->held_path);
		log->held = NULL;
		log->held_path = NULL;
	}
	pthread_mutex_unlock(&log->lock);
}

void mk_errlog_format(mk_errlog *log, mk_strbuf *out)
{
	pthread_mutex_lock(&log->lock);
	commit_held_locked(log);
	for (size_t i = 0; i < log->count; i++) {
		mk_strbuf_addstr(out, log->lines[(log->head + i) % MK_ERRLOG_LINES]);
		mk_strbuf_addch(out, '\n');
	}
	pthread_mutex_unlock(&log->lock);
}
