/*
 * wr_kind_recv.h - the parameters of the WR templates (post_link.h,
 * wrchain_kind.h) for receive WRs.  Include it, then the template, then
 * wr_kind_undef.h.  The names a template defines are WRFN(x) and CHFN(x)
 * (wr/wr.h), here recvwr_x and recvwrchain_x.
 */
#define WR_PREFIX recvwr
#define WR_OBJ RecvWRObject
#define WR_NATIVE struct ibv_recv_wr
#define WR_TYPE ST.RecvWR_type
#define WR_CHAIN_TYPE ST.RecvWRChain_type
#define WR_NAME "RecvWR"
#define WR_IS_SEND 0
