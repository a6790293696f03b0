/*
 * wr_kind_send.h - the parameters of the WR templates (post_link.h,
 * wrchain_kind.h) for send WRs.  Include it, then the template, then
 * wr_kind_undef.h.  The names a template defines are WRFN(x) and CHFN(x)
 * (wr/wr.h), here sendwr_x and sendwrchain_x.
 */
#define WR_PREFIX sendwr
#define WR_OBJ SendWRObject
#define WR_NATIVE struct ibv_send_wr
#define WR_TYPE ST.SendWR_type
#define WR_CHAIN_TYPE ST.SendWRChain_type
#define WR_NAME "SendWR"
#define WR_IS_SEND 1
