# ibverbs - make test: install what is missing, build, run the host tests,
# then the integration tests against rxe0 inside a throw-away Soft-RoCE
# QEMU guest (tools/rxe-vm).  make demo: real RDMA transfers from Python,
# verified, side by side with rdma-core's C tools.

PYTHON   ?= python3
VENV     := .venv
VPY      := $(VENV)/bin/python
RXE_VM   := tools/rxe-vm
OUT      := $(CURDIR)/build/out
PYTEST   := $(VPY) -m pytest -rs

.PHONY: all deps venv build test test-host test-guest demo bench wheel \
	test-wheels sanitize clean

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

test: build test-host test-guest

test-host:
	$(PYTEST) -m 'not integration' tests

# One guest boot, one pytest process for every integration test.
# IBVERBS_REQUIRE_INTEGRATION makes a missing device an error and fails the
# run when no integration test passed.
test-guest:
	@mkdir -p $(OUT)
	IBVERBS_REQUIRE_INTEGRATION=1 $(RXE_VM) --rw $(OUT) -- \
		$(VPY) -m pytest -rs -m 'integration' tests

demo: build
	@mkdir -p $(OUT)
	$(RXE_VM) --rw $(OUT) -- sh tools/demo.sh $(OUT)

clean:
	rm -rf build dist src/*.egg-info src/ibverbs/*.so
