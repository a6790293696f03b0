"""tools/arm64-wheel-check.py SITE: run by tools/arm64-suite in the arm64 guest.

Checks, before the suite starts, that this is an aarch64 machine and that
``import ibverbs`` takes the extension from SITE (where the aarch64 wheel
was installed), not from the tree's src/; prints what it imported.  Under a
free-threaded interpreter (the cross-built 3.13t of make test-arm64), also
that the extension is the cp3XYt one and that importing it left the GIL off.
"""

import os
import platform
import sys
import sysconfig

import ibverbs

site = sys.argv[1]
mod = ibverbs._ibverbs.__file__
print(
    f"arm64-suite: {platform.machine()}, Python {platform.python_version()},",
    f"ibverbs {ibverbs.__version__} from {mod}, libibverbs {ibverbs.library_version}",
)
if platform.machine() != "aarch64":
    sys.exit("arm64-suite: not an aarch64 guest")
if not os.path.realpath(mod).startswith(os.path.realpath(site) + os.sep):
    sys.exit(f"arm64-suite: ibverbs comes from {mod}, not from the installed wheel in {site}")
if sysconfig.get_config_var("Py_GIL_DISABLED"):
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not mod.endswith(suffix):
        sys.exit(f"arm64-suite: {mod} is not the free-threaded build ({suffix})")
    if sys._is_gil_enabled():
        sys.exit("arm64-suite: import ibverbs turned the GIL on")
    print(f"arm64-suite: free-threaded, the GIL is off after import ({suffix})")
