/*
 * nodes_groups.h — the node functions of /groups (rows of the table in
 * nodes.c): match and list groups and members, the group files (join,
 * leave, heartbeat, state, generation, offsets, config) and the member
 * files (assignment, generation, positions, lag, seek, commit). poll is a
 * stream and lives in poll.c. Text in, text out; every rule is in
 * core/coordination/group.c. No state of its own.
 */
#ifndef MK_NODES_GROUPS_H
#define MK_NODES_GROUPS_H

#include "mkfs.h"

bool mk_groups_match_group(mkfs *fs, node_ref *ref, const char *name);
void mk_groups_list_groups(mkfs *fs, const node_ref *ref,
			   void (*add)(void *, const char *, bool), void *arg);
bool mk_groups_match_member(mkfs *fs, node_ref *ref, const char *name);
void mk_groups_list_members(mkfs *fs, const node_ref *ref,
			    void (*add)(void *, const char *, bool), void *arg);

mk_err mk_groups_write_join(mkfs *fs, const node_ref *ref, char *line,
			    mk_coord_call *call, mk_strbuf *why);
mk_err mk_groups_write_leave(mkfs *fs, const node_ref *ref, char *line,
			     mk_coord_call *call, mk_strbuf *why);
mk_err mk_groups_write_heartbeat(mkfs *fs, const node_ref *ref, char *line,
				 mk_coord_call *call, mk_strbuf *why);
mk_err mk_groups_read_state(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_groups_read_generation(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_groups_read_offsets(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_groups_read_config(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_groups_write_config(mkfs *fs, const node_ref *ref, char *line,
			      mk_coord_call *call, mk_strbuf *why);

mk_err mk_groups_read_assignment(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_groups_read_positions(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_groups_read_lag(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_groups_write_seek(mkfs *fs, const node_ref *ref, char *line,
			    mk_coord_call *call, mk_strbuf *why);
mk_err mk_groups_write_commit(mkfs *fs, const node_ref *ref, const char *buf,
			      size_t len, mk_coord_call *call, mk_strbuf *why);

/* mkdir / rmdir of /groups/G, and /ctl expire-members. */
mk_err mk_groups_mkdir(mkfs *fs, const char *name, mk_coord_call *call,
		       mk_strbuf *why);
mk_err mk_groups_rmdir(mkfs *fs, const char *name, mk_coord_call *call,
		       mk_strbuf *why);
mk_err mk_groups_expire_members(mkfs *fs, mk_coord_call *call, mk_strbuf *why);

#endif
