#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

static const char *const names[] = {
#define MK_ERR_NAME(name) #name,
	MK_ERR_LIST(MK_ERR_NAME)
#undef MK_ERR_NAME
};

const char *mk_err_name(mk_err err)
{
	if ((unsigned)err >= MK_ERR__COUNT)
		return "UNKNOWN_SERVER_ERROR";
	return names[err];
}

mk_err mk_error(mk_strbuf *why, mk_err err, const char *fmt, ...)
{
	if (why) {
		va_list ap;
		va_start(ap, fmt);
		mk_strbuf_vaddf(why, fmt, ap);
		va_end(ap);
	}
	return err;
}

void mk_why(mk_strbuf *why, const char *fmt, ...)
{
	if (!why)
		return;
	va_list ap;
	va_start(ap, fmt);
	mk_strbuf_vaddf(why, fmt, ap);
	va_end(ap);
}

mk_err mk_io_error(mk_strbuf *why, const char *path, const char *what)
{
	return mk_error(why, MK_KAFKA_STORAGE_ERROR, "%s: %s: %s", path, what,
			strerror(errno));
}
