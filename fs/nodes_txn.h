/*
 * nodes_txn.h — the node functions of /transactions (rows of the table in
 * nodes.c): match and list transactional ids, their files (init, commit,
 * abort, offsets, state, partitions, producer_id, epoch), their mkdir and
 * rmdir, and /ctl expire-transactions. Text in, text out; every rule is in
 * core/coordination/txn.c. No state of its own: the coordinator is fs->txns.
 */
#ifndef MK_NODES_TXN_H
#define MK_NODES_TXN_H

#include "mkfs.h"

bool mk_txn_node_match(mkfs *fs, node_ref *ref, const char *name);
void mk_txn_node_list(mkfs *fs, const node_ref *ref,
		      void (*add)(void *, const char *, bool), void *arg);

mk_err mk_txn_node_read_state(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_txn_node_read_partitions(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_txn_node_read_pid(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_txn_node_read_epoch(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
mk_err mk_txn_node_read_offsets(mkfs *fs, const node_ref *ref, mk_strbuf *out, mk_strbuf *why);
/* offsets takes a whole write: every GROUP T/P OFFSET line parsed first,
 * then all staged at once. */
mk_err mk_txn_node_write_offsets(mkfs *fs, const node_ref *ref, const char *buf,
				 size_t len, mk_coord_call *call, mk_strbuf *why);
mk_err mk_txn_node_write_init(mkfs *fs, const node_ref *ref, char *line,
			      mk_coord_call *call, mk_strbuf *why);
mk_err mk_txn_node_write_commit(mkfs *fs, const node_ref *ref, char *line,
				mk_coord_call *call, mk_strbuf *why);
mk_err mk_txn_node_write_abort(mkfs *fs, const node_ref *ref, char *line,
			       mk_coord_call *call, mk_strbuf *why);

mk_err mk_txn_node_mkdir(mkfs *fs, const char *name, mk_coord_call *call,
			 mk_strbuf *why);
mk_err mk_txn_node_rmdir(mkfs *fs, const char *name, mk_coord_call *call,
			 mk_strbuf *why);
mk_err mk_txn_node_expire(mkfs *fs, mk_coord_call *call, mk_strbuf *why);

#endif
