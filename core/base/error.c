#include "error.h"

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
