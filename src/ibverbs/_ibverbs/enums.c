/*
 * enums.c - every enum value comes from the compiled rdma-core headers.
 *
 * ibverbs/enums.py builds IntEnum/IntFlag classes from the dict this file
 * returns, so a value is never typed in by hand.  Members are the C
 * constant minus its prefix (IBV_ACCESS_LOCAL_WRITE ->
 * AccessFlags.LOCAL_WRITE, IBV_MTU_1024 -> MTU.MTU_1024).
 */
#include "ibverbs.h"
#include <rdma/rdma_cma.h>

struct constant {
	const char *cls;
	const char *name;
	long long value;
};

#define C(cls, name, value) { #cls, #name, (long long)(value) },

static const struct constant constants[] = {
	C(AccessFlags, LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE) C(
		AccessFlags, REMOTE_WRITE,
		IBV_ACCESS_REMOTE_WRITE) C(AccessFlags, REMOTE_READ,
					   IBV_ACCESS_REMOTE_READ) C(AccessFlags,
								     REMOTE_ATOMIC,
								     IBV_ACCESS_REMOTE_ATOMIC) C(AccessFlags, MW_BIND, IBV_ACCESS_MW_BIND) C(AccessFlags, ZERO_BASED, IBV_ACCESS_ZERO_BASED) C(AccessFlags, ON_DEMAND, IBV_ACCESS_ON_DEMAND) C(AccessFlags, HUGETLB, IBV_ACCESS_HUGETLB) C(AccessFlags, RELAXED_ORDERING, IBV_ACCESS_RELAXED_ORDERING)
#ifdef IBVERBS_HAVE_ACCESS_FLUSH
		C(AccessFlags, FLUSH_GLOBAL,
		  IBV_ACCESS_FLUSH_GLOBAL) C(AccessFlags, FLUSH_PERSISTENT,
					     IBV_ACCESS_FLUSH_PERSISTENT)
#else
	/* The only values typed in: rdma-core 45 added these two bits to
	 * enum ibv_access_flags, and older headers (Debian 12's rdma-core 44)
	 * lack them.  These are rdma-core's ABI values (verbs.h: 1 << 8 and
	 * 1 << 9), listed in ibv_abi_constants below; setup.py defines
	 * IBVERBS_HAVE_ACCESS_FLUSH when the header has them, and
	 * tests/host/test_compat.py checks the values against any header
	 * that defines them. */
	C(AccessFlags, FLUSH_GLOBAL, 1 << 8) C(AccessFlags, FLUSH_PERSISTENT,
					       1 << 9)
#endif
			C(QPType, RC, IBV_QPT_RC) C(QPType, UC, IBV_QPT_UC) C(QPType, UD, IBV_QPT_UD) C(
				QPType,
				RAW_PACKET,
				IBV_QPT_RAW_PACKET) C(QPType, XRC_SEND,
						      IBV_QPT_XRC_SEND) C(QPType, XRC_RECV, IBV_QPT_XRC_RECV)
				C(QPType, DRIVER, IBV_QPT_DRIVER) C(QPState, RESET, IBV_QPS_RESET) C(QPState, INIT, IBV_QPS_INIT) C(QPState, RTR, IBV_QPS_RTR) C(QPState, RTS, IBV_QPS_RTS) C(QPState, SQD, IBV_QPS_SQD) C(QPState, SQE, IBV_QPS_SQE) C(
					QPState,
					ERR, IBV_QPS_ERR) C(QPState, UNKNOWN,
							    IBV_QPS_UNKNOWN) C(QPAttrMask, STATE, IBV_QP_STATE)
					C(QPAttrMask, CUR_STATE, IBV_QP_CUR_STATE) C(QPAttrMask, EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY) C(QPAttrMask, ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS) C(
						QPAttrMask, PKEY_INDEX,
						IBV_QP_PKEY_INDEX) C(QPAttrMask,
								     PORT, IBV_QP_PORT) C(QPAttrMask, QKEY, IBV_QP_QKEY)
						C(QPAttrMask, AV, IBV_QP_AV) C(QPAttrMask, PATH_MTU, IBV_QP_PATH_MTU) C(QPAttrMask, TIMEOUT, IBV_QP_TIMEOUT) C(QPAttrMask, RETRY_CNT, IBV_QP_RETRY_CNT) C(
							QPAttrMask, RNR_RETRY,
							IBV_QP_RNR_RETRY) C(QPAttrMask, RQ_PSN,
									    IBV_QP_RQ_PSN) C(QPAttrMask, MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC)
							C(QPAttrMask, ALT_PATH, IBV_QP_ALT_PATH) C(QPAttrMask, MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER) C(QPAttrMask, SQ_PSN, IBV_QP_SQ_PSN) C(
								QPAttrMask,
								MAX_DEST_RD_ATOMIC,
								IBV_QP_MAX_DEST_RD_ATOMIC) C(QPAttrMask,
											     PATH_MIG_STATE,
											     IBV_QP_PATH_MIG_STATE) C(QPAttrMask, CAP, IBV_QP_CAP)
								C(QPAttrMask, DEST_QPN, IBV_QP_DEST_QPN) C(QPAttrMask, RATE_LIMIT, IBV_QP_RATE_LIMIT) C(
									WROpcode,
									RDMA_WRITE,
									IBV_WR_RDMA_WRITE) C(WROpcode,
											     RDMA_WRITE_WITH_IMM,
											     IBV_WR_RDMA_WRITE_WITH_IMM) C(WROpcode,
															   SEND,
															   IBV_WR_SEND) C(WROpcode, SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM)
									C(WROpcode, RDMA_READ, IBV_WR_RDMA_READ) C(WROpcode, ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP) C(WROpcode, ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD) C(
										WROpcode,
										LOCAL_INV,
										IBV_WR_LOCAL_INV) C(WROpcode,
												    BIND_MW,
												    IBV_WR_BIND_MW) C(WROpcode,
														      SEND_WITH_INV,
														      IBV_WR_SEND_WITH_INV)
										C(WROpcode, TSO, IBV_WR_TSO) C(SendFlags, FENCE, IBV_SEND_FENCE) C(SendFlags, SIGNALED, IBV_SEND_SIGNALED) C(SendFlags, SOLICITED, IBV_SEND_SOLICITED) C(SendFlags, INLINE, IBV_SEND_INLINE) C(
											SendFlags,
											IP_CSUM,
											IBV_SEND_IP_CSUM) C(WCStatus,
													    SUCCESS,
													    IBV_WC_SUCCESS) C(WCStatus,
															      LOC_LEN_ERR,
															      IBV_WC_LOC_LEN_ERR) C(WCStatus, LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR)
											C(WCStatus, LOC_EEC_OP_ERR, IBV_WC_LOC_EEC_OP_ERR) C(WCStatus, LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR) C(WCStatus, WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR) C(WCStatus, MW_BIND_ERR, IBV_WC_MW_BIND_ERR) C(
												WCStatus,
												BAD_RESP_ERR,
												IBV_WC_BAD_RESP_ERR) C(WCStatus,
														       LOC_ACCESS_ERR,
														       IBV_WC_LOC_ACCESS_ERR) C(WCStatus, REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR)
												C(WCStatus, REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR) C(WCStatus, REM_OP_ERR, IBV_WC_REM_OP_ERR) C(WCStatus, RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR) C(WCStatus, RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR) C(WCStatus, LOC_RDD_VIOL_ERR, IBV_WC_LOC_RDD_VIOL_ERR) C(
													WCStatus,
													REM_INV_RD_REQ_ERR,
													IBV_WC_REM_INV_RD_REQ_ERR) C(WCStatus,
																     REM_ABORT_ERR,
																     IBV_WC_REM_ABORT_ERR) C(WCStatus, INV_EECN_ERR, IBV_WC_INV_EECN_ERR)
													C(WCStatus, INV_EEC_STATE_ERR, IBV_WC_INV_EEC_STATE_ERR) C(WCStatus, FATAL_ERR, IBV_WC_FATAL_ERR) C(
														WCStatus,
														RESP_TIMEOUT_ERR,
														IBV_WC_RESP_TIMEOUT_ERR) C(WCStatus,
																	   GENERAL_ERR,
																	   IBV_WC_GENERAL_ERR) C(WCStatus,
																				 TM_ERR,
																				 IBV_WC_TM_ERR) C(WCStatus, TM_RNDV_INCOMPLETE, IBV_WC_TM_RNDV_INCOMPLETE)
														C(WCOpcode, SEND, IBV_WC_SEND) C(WCOpcode, RDMA_WRITE, IBV_WC_RDMA_WRITE) C(WCOpcode, RDMA_READ, IBV_WC_RDMA_READ) C(WCOpcode, COMP_SWAP, IBV_WC_COMP_SWAP) C(
															WCOpcode,
															FETCH_ADD,
															IBV_WC_FETCH_ADD) C(WCOpcode,
																	    BIND_MW,
																	    IBV_WC_BIND_MW) C(WCOpcode,
																			      LOCAL_INV,
																			      IBV_WC_LOCAL_INV) C(WCOpcode, TSO, IBV_WC_TSO)
															C(WCOpcode, RECV, IBV_WC_RECV) C(WCOpcode, RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM) C(WCFlags, GRH, IBV_WC_GRH) C(WCFlags, WITH_IMM, IBV_WC_WITH_IMM) C(WCFlags, IP_CSUM_OK, IBV_WC_IP_CSUM_OK) C(WCFlags, WITH_INV, IBV_WC_WITH_INV) C(WCFlags, TM_SYNC_REQ, IBV_WC_TM_SYNC_REQ) C(
																WCFlags,
																TM_MATCH,
																IBV_WC_TM_MATCH) C(WCFlags,
																		   TM_DATA_VALID,
																		   IBV_WC_TM_DATA_VALID) C(MTU,
																					   MTU_256, IBV_MTU_256) C(MTU, MTU_512, IBV_MTU_512)
																C(MTU, MTU_1024, IBV_MTU_1024) C(MTU, MTU_2048, IBV_MTU_2048) C(MTU, MTU_4096, IBV_MTU_4096) C(PortState, NOP, IBV_PORT_NOP) C(PortState, DOWN, IBV_PORT_DOWN) C(PortState, INIT, IBV_PORT_INIT) C(PortState, ARMED, IBV_PORT_ARMED) C(
																	PortState,
																	ACTIVE,
																	IBV_PORT_ACTIVE) C(PortState, ACTIVE_DEFER,
																			   IBV_PORT_ACTIVE_DEFER) C(NodeType,
																						    UNKNOWN, IBV_NODE_UNKNOWN) C(NodeType, CA, IBV_NODE_CA)
																	C(NodeType, SWITCH, IBV_NODE_SWITCH) C(NodeType, ROUTER, IBV_NODE_ROUTER) C(NodeType, RNIC, IBV_NODE_RNIC) C(NodeType, USNIC, IBV_NODE_USNIC) C(
																		NodeType,
																		USNIC_UDP,
																		IBV_NODE_USNIC_UDP) C(NodeType,
																				      UNSPECIFIED,
																				      IBV_NODE_UNSPECIFIED) C(TransportType,
																							      UNKNOWN,
																							      IBV_TRANSPORT_UNKNOWN) C(TransportType, IB, IBV_TRANSPORT_IB)
																		C(TransportType, IWARP, IBV_TRANSPORT_IWARP) C(TransportType, USNIC, IBV_TRANSPORT_USNIC) C(TransportType, USNIC_UDP, IBV_TRANSPORT_USNIC_UDP) C(
																			TransportType,
																			UNSPECIFIED,
																			IBV_TRANSPORT_UNSPECIFIED) C(EventType,
																						     CQ_ERR,
																						     IBV_EVENT_CQ_ERR) C(EventType, QP_FATAL, IBV_EVENT_QP_FATAL)
																			C(EventType, QP_REQ_ERR, IBV_EVENT_QP_REQ_ERR) C(EventType, QP_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR) C(EventType, COMM_EST, IBV_EVENT_COMM_EST) C(EventType, SQ_DRAINED, IBV_EVENT_SQ_DRAINED) C(
																				EventType,
																				PATH_MIG,
																				IBV_EVENT_PATH_MIG) C(EventType,
																						      PATH_MIG_ERR, IBV_EVENT_PATH_MIG_ERR) C(EventType, DEVICE_FATAL, IBV_EVENT_DEVICE_FATAL)
																				C(EventType, PORT_ACTIVE, IBV_EVENT_PORT_ACTIVE) C(EventType, PORT_ERR, IBV_EVENT_PORT_ERR) C(EventType, LID_CHANGE, IBV_EVENT_LID_CHANGE) C(EventType, PKEY_CHANGE, IBV_EVENT_PKEY_CHANGE) C(
																					EventType,
																					SM_CHANGE,
																					IBV_EVENT_SM_CHANGE) C(EventType,
																							       SRQ_ERR,
																							       IBV_EVENT_SRQ_ERR) C(EventType,
																										    SRQ_LIMIT_REACHED,
																										    IBV_EVENT_SRQ_LIMIT_REACHED) C(EventType, QP_LAST_WQE_REACHED, IBV_EVENT_QP_LAST_WQE_REACHED)
																					C(EventType, CLIENT_REREGISTER, IBV_EVENT_CLIENT_REREGISTER) C(EventType, GID_CHANGE, IBV_EVENT_GID_CHANGE) C(
																						EventType,
																						WQ_FATAL,
																						IBV_EVENT_WQ_FATAL) C(SRQAttrMask,
																								      MAX_WR,
																								      IBV_SRQ_MAX_WR) C(SRQAttrMask, LIMIT, IBV_SRQ_LIMIT)
																						C(AtomicCap, NONE, IBV_ATOMIC_NONE) C(AtomicCap, HCA, IBV_ATOMIC_HCA) C(AtomicCap, GLOB, IBV_ATOMIC_GLOB) C(
																							MigState,
																							MIGRATED,
																							IBV_MIG_MIGRATED) C(MigState,
																									    REARM,
																									    IBV_MIG_REARM) C(MigState,
																											     ARMED,
																											     IBV_MIG_ARMED) C(GIDType, IB, IBV_GID_TYPE_IB)
																							C(GIDType, ROCE_V1, IBV_GID_TYPE_ROCE_V1) C(GIDType, ROCE_V2, IBV_GID_TYPE_ROCE_V2) C(DeviceCapFlags, RESIZE_MAX_WR, IBV_DEVICE_RESIZE_MAX_WR) C(DeviceCapFlags, BAD_PKEY_CNTR, IBV_DEVICE_BAD_PKEY_CNTR) C(
																								DeviceCapFlags,
																								BAD_QKEY_CNTR,
																								IBV_DEVICE_BAD_QKEY_CNTR) C(DeviceCapFlags,
																											    RAW_MULTI,
																											    IBV_DEVICE_RAW_MULTI) C(DeviceCapFlags, AUTO_PATH_MIG, IBV_DEVICE_AUTO_PATH_MIG)
																								C(DeviceCapFlags, CHANGE_PHY_PORT, IBV_DEVICE_CHANGE_PHY_PORT) C(DeviceCapFlags, UD_AV_PORT_ENFORCE, IBV_DEVICE_UD_AV_PORT_ENFORCE) C(DeviceCapFlags, CURR_QP_STATE_MOD, IBV_DEVICE_CURR_QP_STATE_MOD) C(
																									DeviceCapFlags,
																									SHUTDOWN_PORT,
																									IBV_DEVICE_SHUTDOWN_PORT) C(DeviceCapFlags,
																												    INIT_TYPE,
																												    IBV_DEVICE_INIT_TYPE) C(DeviceCapFlags,
																															    PORT_ACTIVE_EVENT,
																															    IBV_DEVICE_PORT_ACTIVE_EVENT) C(DeviceCapFlags,
																																			    SYS_IMAGE_GUID,
																																			    IBV_DEVICE_SYS_IMAGE_GUID)
																									C(DeviceCapFlags, RC_RNR_NAK_GEN, IBV_DEVICE_RC_RNR_NAK_GEN) C(
																										DeviceCapFlags,
																										SRQ_RESIZE,
																										IBV_DEVICE_SRQ_RESIZE) C(DeviceCapFlags,
																													 N_NOTIFY_CQ,
																													 IBV_DEVICE_N_NOTIFY_CQ) C(DeviceCapFlags,
																																   MEM_WINDOW,
																																   IBV_DEVICE_MEM_WINDOW) C(DeviceCapFlags, UD_IP_CSUM, IBV_DEVICE_UD_IP_CSUM)
																										C(DeviceCapFlags, XRC, IBV_DEVICE_XRC) C(DeviceCapFlags, MEM_MGT_EXTENSIONS, IBV_DEVICE_MEM_MGT_EXTENSIONS) C(
																											DeviceCapFlags,
																											MEM_WINDOW_TYPE_2A,
																											IBV_DEVICE_MEM_WINDOW_TYPE_2A) C(DeviceCapFlags,
																															 MEM_WINDOW_TYPE_2B,
																															 IBV_DEVICE_MEM_WINDOW_TYPE_2B) C(DeviceCapFlags, RC_IP_CSUM, IBV_DEVICE_RC_IP_CSUM)
																											C(DeviceCapFlags, RAW_IP_CSUM, IBV_DEVICE_RAW_IP_CSUM) C(DeviceCapFlags, MANAGED_FLOW_STEERING, IBV_DEVICE_MANAGED_FLOW_STEERING) C(
																												PortCapFlags,
																												SM,
																												IBV_PORT_SM) C(PortCapFlags,
																													       NOTICE_SUP,
																													       IBV_PORT_NOTICE_SUP) C(PortCapFlags, TRAP_SUP,
																																      IBV_PORT_TRAP_SUP) C(PortCapFlags, OPT_IPD_SUP, IBV_PORT_OPT_IPD_SUP)
																												C(PortCapFlags, AUTO_MIGR_SUP, IBV_PORT_AUTO_MIGR_SUP) C(
																													PortCapFlags,
																													SL_MAP_SUP,
																													IBV_PORT_SL_MAP_SUP) C(PortCapFlags,
																															       MKEY_NVRAM,
																															       IBV_PORT_MKEY_NVRAM) C(PortCapFlags, PKEY_NVRAM, IBV_PORT_PKEY_NVRAM)
																													C(PortCapFlags, LED_INFO_SUP, IBV_PORT_LED_INFO_SUP) C(PortCapFlags, SYS_IMAGE_GUID_SUP, IBV_PORT_SYS_IMAGE_GUID_SUP) C(
																														PortCapFlags,
																														PKEY_SW_EXT_PORT_TRAP_SUP,
																														IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP) C(PortCapFlags, EXTENDED_SPEEDS_SUP,
																																		      IBV_PORT_EXTENDED_SPEEDS_SUP) C(PortCapFlags, CAP_MASK2_SUP, IBV_PORT_CAP_MASK2_SUP)
																														C(PortCapFlags, CM_SUP, IBV_PORT_CM_SUP) C(PortCapFlags, SNMP_TUNNEL_SUP, IBV_PORT_SNMP_TUNNEL_SUP) C(
																															PortCapFlags,
																															REINIT_SUP,
																															IBV_PORT_REINIT_SUP) C(PortCapFlags,
																																	       DEVICE_MGMT_SUP,
																																	       IBV_PORT_DEVICE_MGMT_SUP) C(PortCapFlags,
																																					   VENDOR_CLASS_SUP,
																																					   IBV_PORT_VENDOR_CLASS_SUP)
																															C(PortCapFlags, DR_NOTICE_SUP, IBV_PORT_DR_NOTICE_SUP) C(
																																PortCapFlags,
																																CAP_MASK_NOTICE_SUP,
																																IBV_PORT_CAP_MASK_NOTICE_SUP) C(PortCapFlags, BOOT_MGMT_SUP, IBV_PORT_BOOT_MGMT_SUP)
																																C(PortCapFlags, LINK_LATENCY_SUP, IBV_PORT_LINK_LATENCY_SUP) C(
																																	PortCapFlags,
																																	CLIENT_REG_SUP,
																																	IBV_PORT_CLIENT_REG_SUP) C(PortCapFlags,
																																				   IP_BASED_GIDS,
																																				   IBV_PORT_IP_BASED_GIDS) C(LinkLayer, UNSPECIFIED, IBV_LINK_LAYER_UNSPECIFIED)
																																	C(LinkLayer, INFINIBAND, IBV_LINK_LAYER_INFINIBAND) C(LinkLayer, ETHERNET, IBV_LINK_LAYER_ETHERNET) C(
																																		CMEventType,
																																		ADDR_RESOLVED,
																																		RDMA_CM_EVENT_ADDR_RESOLVED) C(CMEventType,
																																					       ADDR_ERROR,
																																					       RDMA_CM_EVENT_ADDR_ERROR) C(CMEventType,
																																									   ROUTE_RESOLVED,
																																									   RDMA_CM_EVENT_ROUTE_RESOLVED)
																																		C(CMEventType, ROUTE_ERROR, RDMA_CM_EVENT_ROUTE_ERROR) C(
																																			CMEventType,
																																			CONNECT_REQUEST,
																																			RDMA_CM_EVENT_CONNECT_REQUEST) C(CMEventType,
																																							 CONNECT_RESPONSE,
																																							 RDMA_CM_EVENT_CONNECT_RESPONSE)
																																			C(CMEventType, CONNECT_ERROR, RDMA_CM_EVENT_CONNECT_ERROR) C(
																																				CMEventType,
																																				UNREACHABLE,
																																				RDMA_CM_EVENT_UNREACHABLE) C(CMEventType, REJECTED,
																																							     RDMA_CM_EVENT_REJECTED)
																																				C(CMEventType, ESTABLISHED, RDMA_CM_EVENT_ESTABLISHED) C(
																																					CMEventType,
																																					DISCONNECTED,
																																					RDMA_CM_EVENT_DISCONNECTED) C(CMEventType,
																																								      DEVICE_REMOVAL,
																																								      RDMA_CM_EVENT_DEVICE_REMOVAL)
																																					C(CMEventType, MULTICAST_JOIN, RDMA_CM_EVENT_MULTICAST_JOIN) C(
																																						CMEventType,
																																						MULTICAST_ERROR,
																																						RDMA_CM_EVENT_MULTICAST_ERROR)
																																						C(CMEventType,
																																						  ADDR_CHANGE,
																																						  RDMA_CM_EVENT_ADDR_CHANGE)
																																							C(CMEventType,
																																							  TIMEWAIT_EXIT,
																																							  RDMA_CM_EVENT_TIMEWAIT_EXIT){
																																								NULL,
																																								NULL,
																																								0 }
};

/* "Class.NAME" of the members whose value is rdma-core's ABI value
 * rather than the compiled header's (see above): _ibverbs._abi_constants. */
PyObject *ibv_abi_constants(void)
{
#ifdef IBVERBS_HAVE_ACCESS_FLUSH
	return PyTuple_New(0);
#else
	return Py_BuildValue("(ss)", "AccessFlags.FLUSH_GLOBAL",
			     "AccessFlags.FLUSH_PERSISTENT");
#endif
}

PyObject *ibv_constants_dict(void)
{
	PyObject *all = PyDict_New();
	const struct constant *c;

	if (all == NULL)
		return NULL;
	for (c = constants; c->cls != NULL; c++) {
		PyObject *cls = PyDict_GetItemString(all, c->cls), *v;

		if (cls == NULL) {
			cls = PyDict_New();
			if (cls == NULL ||
			    PyDict_SetItemString(all, c->cls, cls) < 0) {
				Py_XDECREF(cls);
				goto fail;
			}
			Py_DECREF(cls); /* borrowed from all from now on */
		}
		v = PyLong_FromLongLong(c->value);
		if (v == NULL || PyDict_SetItemString(cls, c->name, v) < 0) {
			Py_XDECREF(v);
			goto fail;
		}
		Py_DECREF(v);
	}
	return all;
fail:
	Py_DECREF(all);
	return NULL;
}
