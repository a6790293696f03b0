/*
 * device.c - the device-level mlx5 direct verbs: mlx5.is_supported,
 * mlx5.open_device, mlx5.query_device, mlx5.get_data_direct_sysfs_path
 * and mlx5.reg_dmabuf_mr.
 *
 * A device is named as ibverbs.Context takes it: a str, or a Device
 * record of get_device_list() (its name).  Each call looks the name up in
 * a fresh ibv_get_device_list(), calls the verb with that struct
 * ibv_device, and frees the list.
 */
#include "mlx5/mlx5.h"
#include <string.h>

/* The device's name from a str or an object with a str .name: a new
 * UTF-8 bytes object, or NULL with TypeError/ValueError naming "device". */
static PyObject *device_name_bytes(PyObject *device)
{
	PyObject *name, *utf8;

	if (PyUnicode_Check(device)) {
		name = device;
		Py_INCREF(name);
	} else {
		name = PyObject_GetAttrString(device, "name");
		if (name == NULL || !PyUnicode_Check(name)) {
			if (name == NULL &&
			    !PyErr_ExceptionMatches(PyExc_AttributeError))
				return NULL;
			PyErr_Clear();
			Py_XDECREF(name);
			arg_type_error_hint("device", "str or Device", 0,
					    device, "a device's name");
			return NULL;
		}
	}
	utf8 = PyUnicode_AsUTF8String(name);
	Py_DECREF(name);
	if (utf8 == NULL)
		return NULL;
	if ((Py_ssize_t)strlen(PyBytes_AsString(utf8)) != PyBytes_Size(utf8)) {
		Py_DECREF(utf8);
		PyErr_SetString(PyExc_ValueError,
				"device: embedded null character");
		return NULL;
	}
	return utf8;
}

/* The device list and, in *dev, the device called name (verb: for the
 * error).  The list to free with IBV.free_device_list, or NULL with
 * VerbsError(ENODEV) set. */
static struct ibv_device **device_lookup(const char *name, const char *verb,
					 struct ibv_device **dev)
{
	struct ibv_device **list;
	int i, n = 0;

	errno = 0;
	list = IBV.get_device_list(&n);
	if (list == NULL) {
		verbs_error_fmt(errno && errno != ENOSYS ? errno : ENODEV,
				"ibv_get_device_list",
				"cannot list RDMA devices to find %s", name);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(IBV.get_device_name(list[i]), name) == 0) {
			*dev = list[i];
			return list;
		}
	}
	IBV.free_device_list(list);
	verbs_error_fmt(ENODEV, verb, "no RDMA device named '%s'", name);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* mlx5.is_supported(device)                                           */
/* ------------------------------------------------------------------ */

METHOD_DOC(mlx5_mod_is_supported,
	   "Whether the device is driven by the mlx5 provider (an NVIDIA\n"
	   "ConnectX or BlueField NIC): the mlx5 direct verbs work on it\n"
	   "and on what it makes.\n"
	   "\n"
	   "Wraps ``mlx5dv_is_supported`` (man page mlx5dv_is_supported(3),\n"
	   "rdma-core 22).  False on Soft-RoCE (rxe), siw and EFA devices.\n"
	   "\n"
	   "Args:\n"
	   "    device: the device's name, or a Device of\n"
	   "        ``ibverbs.get_device_list()``.\n"
	   "\n"
	   "Returns:\n"
	   "    True or False.\n"
	   "\n"
	   "Raises:\n"
	   "    TypeError: device is neither a str nor a Device.\n"
	   "    ImportError: libmlx5.so.1 cannot be loaded (install\n"
	   "        ibverbs-providers).\n"
	   "    VerbsError: ENODEV when no device has that name;\n"
	   "        EOPNOTSUPP when the loaded libmlx5 predates rdma-core\n"
	   "        22.");

struct is_supported_args {
	PyObject *device;
};
static const ArgSpec is_supported_params[] = {
	ARG_OBJECT(struct is_supported_args, device), ARG_END
};
METHOD_ARGS(mlx5_mod_is_supported, "mlx5_is_supported", is_supported_params);

PyObject *mlx5_mod_is_supported(PyObject *mod, PyObject *args, PyObject *kw)
{
	struct is_supported_args a;
	struct ibv_device **list, *dev = NULL;
	PyObject *name;
	bool ok;

	if (args_parse(&mlx5_mod_is_supported_args, NULL, args, kw, &a) < 0)
		return NULL;
	MLX5_NEED(is_supported);
	name = device_name_bytes(a.device);
	if (name == NULL)
		return NULL;
	list = device_lookup(PyBytes_AsString(name), "mlx5dv_is_supported",
			     &dev);
	Py_DECREF(name);
	if (list == NULL)
		return NULL;
	ok = MLX5.is_supported(dev);
	IBV.free_device_list(list);
	return PyBool_FromLong(ok);
}
