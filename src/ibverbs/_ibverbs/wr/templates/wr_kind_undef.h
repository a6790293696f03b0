/*
 * wr_kind_undef.h - undefines what wr_kind_send.h or wr_kind_recv.h
 * defined, after the template that used it.
 */
#undef WR_PREFIX
#undef WR_OBJ
#undef WR_NATIVE
#undef WR_TYPE
#undef WR_CHAIN_TYPE
#undef WR_NAME
#undef WR_IS_SEND
