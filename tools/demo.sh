#!/bin/sh
# tools/demo.sh OUT: what `make demo` runs inside the Soft-RoCE guest
# (tools/rxe-vm --rw OUT -- sh tools/demo.sh OUT).  Real RDMA transfers from
# Python on rxe0, each one verified, then the same work side by side with
# rdma-core's C tools and pyverbs: a ratio table with text bars, and a bar
# chart written to OUT/demo.svg.  About 5-10 minutes.
#
#   1. examples/quickstart.py: an RDMA WRITE, checked byte for byte
#   2. examples/rc_pingpong.py <-> ibv_rc_pingpong, both directions
#   2b. examples/cm_server.py with examples/cm_client.py, then with rdma-core's
#      C rdma_client (the RDMA connection manager)
#   3. python -m ibverbs perf: a few bandwidth and latency runs
#   4. benchmarks/compare.py --quick: C vs ibverbs vs pyverbs (the four
#      targets of issue 6), 3 interleaved runs each, best of each
#
# Under tools/rxe-vm --nodes 2 (IBVERBS_NODE set: `make demo` boots that
# rig second), it runs once per node and does the two-host section only:
#   5. examples/quickstart_two_hosts.py: node 1 RDMA-writes 4 KiB into node
#      0's memory; node 0 checks the bytes in its own memory
set -u
OUT=${1:?usage: tools/demo.sh OUT}
DEV=${IBVERBS_TEST_DEVICE:-rxe0}
GID=${IBVERBS_TEST_GID_INDEX:-1}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3

if [ -n "${IBVERBS_NODE:-}" ]; then
	SERVER=${IBVERBS_NODE_ADDRS%%,*}
	if [ "$IBVERBS_NODE" = 0 ]; then
		printf '\n==== 5. two hosts: node 1 writes into node 0 (%s, %s), verified on node 0\n' \
			"$DEV" "$SERVER"
		exec "$PY" -u examples/quickstart_two_hosts.py -d "$DEV" -g "$GID" --listen "$SERVER"
	fi
	# The client retries until node 0 listens.
	exec "$PY" -u examples/quickstart_two_hosts.py -d "$DEV" -g "$GID" "$SERVER"
fi
FAILED=""
mkdir -p "$OUT"
START=$(date +%s)

step() {
	printf '\n==== %s\n' "$*"
}

fail() {
	echo "FAILED: $*"
	FAILED="$FAILED\n  $*"
}

# pingpong SERVER_CMD CLIENT_CMD PORT LABEL: one end of each; both must
# finish with status 0 and print their usec/iter line.
pingpong() {
	srv_log=$OUT/pingpong-server.log
	$1 -p "$3" >"$srv_log" 2>&1 &
	srv=$!
	i=0
	while ! grep -qi ":$(printf '%04X' "$3") .* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 $srv 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if $2 -p "$3" 127.0.0.1 >"$OUT/pingpong-client.log" 2>&1; then crc=0; else crc=$?; fi
	wait $srv
	src=$?
	echo "  server: $(tail -1 "$srv_log")"
	echo "  client: $(tail -1 "$OUT/pingpong-client.log")"
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		fail "$4 (client $crc, server $src)"
		sed 's/^/    | /' "$srv_log" "$OUT/pingpong-client.log" | tail -20
	else
		echo "  ok: $4"
	fi
}

step "ibverbs in the guest"
$PY -c 'import sys, ibverbs as ib; print("python", sys.version.split()[0], "| ibverbs", ib.__version__, "| libibverbs", ib.library_version, "| devices", [d.name for d in ib.get_device_list()])'

step "1. quickstart: RDMA WRITE between two QPs on $DEV, verified byte for byte"
if $PY examples/quickstart.py "$DEV" "$GID"; then :; else fail "examples/quickstart.py"; fi

step "2. rc_pingpong interop, 4 KiB x 200: Python server <-> C client"
pingpong "$PY examples/rc_pingpong.py -d $DEV -g $GID -n 200" \
	"ibv_rc_pingpong -d $DEV -g $GID -n 200" 18701 "Python server, C client"
step "   C server <-> Python client"
pingpong "ibv_rc_pingpong -d $DEV -g $GID -n 200" \
	"$PY examples/rc_pingpong.py -d $DEV -g $GID -n 200" 18702 "C server, Python client"

step "2b. connection manager: examples/cm_server.py <-> cm_client.py, then C rdma_client"
CM_ADDR=${IBVERBS_TEST_CM_SERVER:-198.18.0.1}
cm_pair() {
	$PY examples/cm_server.py -s "$CM_ADDR" -p "$2" >"$OUT/cm-server.log" 2>&1 &
	srv=$!
	i=0
	until grep -q listening "$OUT/cm-server.log" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 $srv 2>/dev/null; then break; fi
		sleep 0.1
	done
	if $1 -s "$CM_ADDR" -p "$2" >"$OUT/cm-client.log" 2>&1; then crc=0; else crc=$?; fi
	wait $srv
	src=$?
	echo "  server: $(grep 'got' "$OUT/cm-server.log")"
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		fail "$3 (client $crc, server $src)"
		sed 's/^/    | /' "$OUT/cm-server.log" "$OUT/cm-client.log" | tail -20
	else
		echo "  ok: $3"
	fi
}
if $PY -c 'import sys, ibverbs; sys.exit(not ibverbs.has_rdmacm())'; then
	cm_pair "$PY examples/cm_client.py" 18720 "Python CM client -> Python CM server"
	if command -v rdma_client >/dev/null; then
		cm_pair rdma_client 18721 "C rdma_client -> Python CM server"
	fi
else
	echo "  skipped: librdmacm.so.1 cannot be loaded"
fi

step "3. python -m ibverbs perf (--loopback: the server is a forked child)"
P="$PY -m ibverbs perf"
O="-d $DEV -x $GID --loopback --timeout 120"
for args in "write_bw -s 8,4K,64K -n 2000" \
	"write_bw -s 8 -n 4000 -l 16" \
	"read_bw -s 64K -n 400 --cq-mod 100" \
	"send_bw -s 4K -n 2000 -q 2" \
	"write_lat -s 8,4K -n 300" \
	"send_lat -s 8,4K -n 300"; do
	echo "\$ python -m ibverbs perf $args"
	# shellcheck disable=SC2086
	if $P $args $O -p 18710; then :; else fail "perf $args"; fi
done

step "4. side by side: C (perftest, ibv_rc_pingpong) vs ibverbs vs pyverbs"
if /usr/bin/python3 benchmarks/compare.py --quick --reps 3 --bars \
	--out "$OUT" --svg "$OUT/demo.svg"; then :; else fail "benchmarks/compare.py"; fi

step "done in $(( $(date +%s) - START )) s"
echo "ratio table:  $OUT/compare.txt (JSON with every sample: $OUT/compare.json)"
echo "bar chart:    $OUT/demo.svg"
if [ -n "$FAILED" ]; then
	printf "FAILED:%b\n" "$FAILED"
	exit 1
fi
echo "all transfers verified"
