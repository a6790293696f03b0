"""tools/arm64-wheel-check.py SITE: run by tools/arm64-suite in the arm64 guest.

Checks, before the suite starts, that this is an aarch64 machine and that
``import ibverbs`` takes the extension from SITE (where the aarch64 wheel
was installed), not from the tree's src/; prints what it imported.
"""

import os
import platform
import sys

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
