#ifndef CPQ_SHIM_H
#define CPQ_SHIM_H
#include <libpq-fe.h>

/* The PG_DIAG_* field codes are character-literal macros. */
static inline int cpq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int cpq_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }
#endif
