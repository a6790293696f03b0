/*
 * gid.c - the GID table of a Context (ibv_query_gid_table), the GID
 * helper built on it (Context.find_gid), and the other lookups that
 * libibverbs answers itself: ibv_get_pkey_index, ibv_get_device_index,
 * ibv_resolve_eth_l2_from_gid.
 */
#include "device/device.h"
#include <string.h>
#include <stdlib.h>
#include <net/if.h>
#include <arpa/inet.h>

#define GCTX(self) ((struct ibv_context *)HANDLE(self)->obj)

/* Every valid entry of every port, in a malloc'ed array (*out, *n).
 * Sized from the ports' gid_tbl_len. -1 with an exception set. */
static int gid_table_fetch(PyObject *self, struct ibv_gid_entry **out,
			   size_t *n)
{
	struct ibv_context *ctx = GCTX(self);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_gid_entry *e;
	size_t max = 0;
	ssize_t got;
	int rc, p;

	if (lib_need((void *)IBV.query_gid_table, "libibverbs",
		     "_ibv_query_gid_table", "rdma-core 32") < 0)
		return -1;
	rc = IBV.query_device(ctx, &da);
	if (rc != 0) {
		verbs_error(rc, "ibv_query_device");
		return -1;
	}
	for (p = 1; p <= da.phys_port_cnt; p++) {
		rc = port_query(ctx, (uint8_t)p, &pa);
		if (rc != 0) {
			verbs_error_fmt(rc, "ibv_query_port", "port %d", p);
			return -1;
		}
		max += (size_t)pa.gid_tbl_len;
	}
	e = calloc(max ? max : 1, sizeof(*e));
	if (e == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	got = IBV.query_gid_table(ctx, e, max, 0, sizeof(*e));
	if (got < 0) {
		free(e);
		verbs_error((int)-got, "ibv_query_gid_table");
		return -1;
	}
	*out = e;
	*n = (size_t)got;
	return 0;
}

/* One entry as a GidEntry record: index, port, gid, gid_type,
 * ndev_ifindex, netdev (the record adds ip). */
static PyObject *gid_entry_to_py(const struct ibv_gid_entry *e)
{
	char name[IF_NAMESIZE];
	PyObject *d, *raw, *gid;

	raw = PyBytes_FromStringAndSize((const char *)e->gid.raw, 16);
	if (raw == NULL)
		return NULL;
	gid = PyObject_CallFunctionObjArgs(ST.Gid, raw, NULL);
	Py_DECREF(raw);
	if (gid == NULL)
		return NULL;
	d = PyDict_New();
	if (d == NULL || PyDict_SetItemString(d, "gid", gid) < 0)
		goto fail;
	Py_CLEAR(gid);
	if (dict_set_u64(d, "index", e->gid_index) < 0 ||
	    dict_set_u64(d, "port", e->port_num) < 0 ||
	    dict_set_u64(d, "gid_type", e->gid_type) < 0 ||
	    dict_set_u64(d, "ndev_ifindex", e->ndev_ifindex) < 0)
		goto fail;
	if (e->ndev_ifindex != 0 && if_indextoname(e->ndev_ifindex, name)) {
		if (dict_set_str(d, "netdev", name) < 0)
			goto fail;
	} else if (PyDict_SetItemString(d, "netdev", Py_None) < 0) {
		goto fail;
	}
	return make_record(ST.GidEntry, d);
fail:
	Py_XDECREF(gid);
	Py_XDECREF(d);
	return NULL;
}

const char context_query_gid_table__doc__[] = PyDoc_STR(
	"Read every valid entry of every port's GID table at once.\n"
	"\n"
	"Wraps ``ibv_query_gid_table`` (man page\n"
	"ibv_query_gid_table(3)).\n"
	"\n"
	"Returns:\n"
	"    A list of GidEntry records (``index``, ``port``, ``gid``,\n"
	"    ``gid_type`` as a GIDType, ``ndev_ifindex``, ``netdev`` the\n"
	"    interface name or None, ``ip`` the address of a RoCE entry\n"
	"    or None), in the order libibverbs gives them.\n"
	"\n"
	"Raises:\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	"        when libibverbs lacks the verb (rdma-core < 32); else\n"
	"        the verb failed (``errno``).");

PyObject *context_query_gid_table(PyObject *self, PyObject *unused)
{
	struct ibv_gid_entry *e;
	PyObject *list;
	size_t n, i;

	HANDLE_CHECK(self);
	if (gid_table_fetch(self, &e, &n) < 0)
		return NULL;
	list = PyList_New(0);
	for (i = 0; list != NULL && i < n; i++) {
		PyObject *r = gid_entry_to_py(&e[i]);

		if (r == NULL || PyList_Append(list, r) < 0)
			Py_CLEAR(list);
		Py_XDECREF(r);
	}
	free(e);
	return list;
}

/* ip (NULL for None, a str or an ipaddress object) as the 16 GID bytes
 * it maps to: an IPv4 address as ::ffff:a.b.c.d. 0 for NULL, 1 when set,
 * -1 on error. */
static int ip_to_gid(PyObject *ip, uint8_t raw[16])
{
	PyObject *s;
	const char *txt;
	struct in_addr v4;
	int rc = 1;

	if (ip == NULL)
		return 0;
	if (!PyUnicode_Check(ip) && !PyObject_HasAttrString(ip, "packed"))
		return arg_type_error("ip", "str, an ipaddress address", 1, ip);
	s = PyObject_Str(ip);
	if (s != NULL) {
		PyObject *b = PyUnicode_AsUTF8String(s);

		Py_DECREF(s);
		s = b;
	}
	if (s == NULL)
		return -1;
	txt = PyBytes_AsString(s);
	if (txt == NULL) {
		rc = -1;
	} else if (inet_pton(AF_INET, txt, &v4) == 1) {
		memset(raw, 0, 10);
		raw[10] = raw[11] = 0xff;
		memcpy(raw + 12, &v4, 4);
	} else if (inet_pton(AF_INET6, txt, raw) != 1) {
		PyErr_Format(PyExc_ValueError, "not an IP address: %R", ip);
		rc = -1;
	}
	Py_DECREF(s);
	return rc;
}

static const uint8_t v4_mapped_prefix[12] = { 0, 0, 0, 0, 0,	0,
					      0, 0, 0, 0, 0xff, 0xff };

const char context_find_gid__doc__[] = PyDoc_STR(
	"The GID table entry to use on a port: the one of gid_type holding\n"
	"ip, or with ip None the first of gid_type whose GID is an\n"
	"IPv4-mapped address (the first entry of that type for\n"
	"``GIDType.IB``).  Pass its ``index`` as ``sgid_index``.\n"
	"\n"
	"Wraps ``ibv_query_gid_table`` (man page ibv_query_gid_table(3)).\n"
	"\n"
	"Args:\n"
	"    port: the port, from 1.\n"
	"    ip: an IPv4 or IPv6 address (str or ``ipaddress`` object) of\n"
	"        the port's netdev, or None for the first IPv4 one.\n"
	"    gid_type: a GIDType (or int); RoCE v2 by default.\n"
	"\n"
	"Returns:\n"
	"    The GidEntry (``index``, ``gid``, ``netdev``, ``ip``, ...).\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument has the wrong type.\n"
	"    ValueError: port outside 1..255, ip is not an IP address,\n"
	"        or no entry matches (e.g. the netdev has no IPv4 address,\n"
	"        or the port is InfiniBand and has no RoCE GIDs).\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	"        when libibverbs lacks ``ibv_query_gid_table`` (rdma-core\n"
	"        < 32); else the verb failed (``errno``).");

#define FIND_GID_ARGS(X, S)                                                \
	X(S, INT, uint8_t, port, 1, 255, .flags = ARG_OPT, .def = 1)       \
	X(S, OBJECT, PyObject *, ip, .flags = ARG_OPT | ARG_NONE)          \
	X(S, ENUM, int, gid_type, GIDType, 0, INT32_MAX, .flags = ARG_OPT, \
	  .def = IBV_GID_TYPE_ROCE_V2)
ARGS_METHOD(extern, context_find_gid, "Context.find_gid", FIND_GID_ARGS, self,
	    a)
{
	PyObject *res = NULL;
	struct ibv_gid_entry *e;
	long port, type;
	uint8_t want[16];
	int has_ip;
	size_t n, i;

	port = a->port;
	type = a->gid_type;
	has_ip = ip_to_gid(a->ip, want);
	if (has_ip < 0 || gid_table_fetch(self, &e, &n) < 0)
		return NULL;
	for (i = 0; i < n; i++) {
		if (e[i].port_num != (uint32_t)port ||
		    e[i].gid_type != (uint32_t)type)
			continue;
		if (has_ip ? memcmp(e[i].gid.raw, want, 16) == 0 :
			     (type == IBV_GID_TYPE_IB ||
			      memcmp(e[i].gid.raw, v4_mapped_prefix, 12) == 0))
			break;
	}
	if (i < n)
		res = gid_entry_to_py(&e[i]);
	else if (has_ip)
		PyErr_Format(PyExc_ValueError,
			     "%s port %ld has no GID of type %ld for %S",
			     IBV.get_device_name(GCTX(self)->device), port,
			     type, a->ip);
	else
		PyErr_Format(PyExc_ValueError,
			     "%s port %ld has no GID of type %ld with an IPv4 "
			     "address (give the netdev an IPv4 address, or "
			     "pass ip)",
			     IBV.get_device_name(GCTX(self)->device), port,
			     type);
	free(e);
	return res;
}

const char context_get_pkey_index__doc__[] = PyDoc_STR(
	"The index of a P_Key in a port's P_Key table.\n"
	"\n"
	"Wraps ``ibv_get_pkey_index`` (man page ibv_get_pkey_index(3)).\n"
	"\n"
	"Args:\n"
	"    port: the port, from 1 (positional only).\n"
	"    pkey: the P_Key, host order, e.g. 0xffff (positional only).\n"
	"\n"
	"Returns:\n"
	"    The index, an int.\n"
	"\n"
	"Raises:\n"
	"    TypeError: an argument is not an int, or not 2 given.\n"
	"    ValueError: port outside 1..255 or pkey outside 0..0xffff.\n"
	"    VerbsError: EBADF once the Context is closed; else the\n"
	"        verb failed (``errno``; ENOENT when the table lacks\n"
	"        the P_Key).");

#define GET_PKEY_INDEX_ARGS(X, S)                              \
	X(S, INT, uint8_t, port, 1, 255, .flags = ARG_POSONLY) \
	X(S, UINT, uint16_t, pkey, .flags = ARG_POSONLY)
ARGS_METHOD(extern, context_get_pkey_index, "Context.get_pkey_index",
	    GET_PKEY_INDEX_ARGS, self, a)
{
	int rc;

	errno = 0;
	rc = IBV.get_pkey_index(GCTX(self), a->port, htobe16(a->pkey));
	if (rc < 0)
		return verbs_error_fmt(errno_or(ENOENT), "ibv_get_pkey_index",
				       "port %d pkey 0x%x", a->port, a->pkey);
	return PyLong_FromLong(rc);
}

const char context_get_device_index__doc__[] = PyDoc_STR(
	"The kernel's index of this Context's device.\n"
	"\n"
	"Wraps ``ibv_get_device_index`` (man page\n"
	"ibv_get_device_index(3)).\n"
	"\n"
	"Returns:\n"
	"    The index, an int (stable while the device exists).\n"
	"\n"
	"Raises:\n"
	"    VerbsError: EBADF once the Context is closed; EOPNOTSUPP\n"
	"        when the kernel gives no index.");

PyObject *context_get_device_index(PyObject *self, PyObject *unused)
{
	int idx;

	HANDLE_CHECK(self);
	idx = IBV.get_device_index(GCTX(self)->device);
	if (idx < 0)
		return verbs_error_fmt(EOPNOTSUPP, "ibv_get_device_index",
				       "the kernel gives %s no index",
				       IBV.get_device_name(GCTX(self)->device));
	return PyLong_FromLong(idx);
}

const char context_resolve_eth_l2_from_gid__doc__[] = PyDoc_STR(
	"The Ethernet MAC address and VLAN id that an address vector\n"
	"reaches, resolved by the kernel (neighbour table) from its dgid.\n"
	"\n"
	"Wraps ``ibv_resolve_eth_l2_from_gid`` (man page\n"
	"ibv_resolve_eth_l2_from_gid(3)).\n"
	"\n"
	"Args:\n"
	"    ah_attr: an AHAttr with ``is_global`` set (positional only).\n"
	"\n"
	"Returns:\n"
	"    ``(mac, vid)``: mac is 6 bytes, vid the VLAN id (0xffff for\n"
	"    none).\n"
	"\n"
	"Raises:\n"
	"    TypeError: ah_attr is not an AHAttr.\n"
	"    ValueError: a field of ah_attr is out of range.\n" DOC_RAISES_VERB_AS(
		"Context", ", e.g. EINVAL without a GRH"));

PyObject *context_resolve_eth_l2_from_gid(PyObject *self, PyObject *arg)
{
	struct ibv_ah_attr a;
	uint8_t mac[6];
	uint16_t vid = 0;
	int rc;

	HANDLE_CHECK(self);
	memset(&a, 0, sizeof(a));
	/* Parsed by hand: one positional-only argument (METH_O). */
	if (ah_attr_from_py(arg, &a) < 0)
		return NULL;
	errno = 0;
	rc = IBV.resolve_eth_l2_from_gid(GCTX(self), &a, mac, &vid);
	if (rc != 0)
		return verbs_error(rc < 0 ? errno_or(EINVAL) : rc,
				   "ibv_resolve_eth_l2_from_gid");
	return Py_BuildValue("(y#I)", (const char *)mac, (Py_ssize_t)6,
			     (unsigned)vid);
}
