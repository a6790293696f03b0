#!/bin/sh
# tools/rxe-vm --nodes 2 [--separate-vms] -- sh benchmarks/rig_rtt_nodes.sh :
# ibv_rc_pingpong 4 KiB across the rig's nodes, three runs of N per client.
# Run per node by the rig: node 0 serves, every other node connects to it in
# turn (node 1 first, then node 2, ...), each with its own device.
N=${N:-1000}
G=${IBVERBS_TEST_GID_INDEX:-1}
NODES=${IBVERBS_NODES:-2}
SERVER=$(echo "$IBVERBS_NODE_ADDRS" | cut -d, -f1)
c=1
while [ $c -lt "$NODES" ]; do
  for r in 1 2 3; do
    p=$((18600 + c * 10 + r))
    if [ "$IBVERBS_NODE" = 0 ]; then
      ibv_rc_pingpong -d "$IBVERBS_DEVICE" -g "$G" -s 4096 -n "$N" -p $p >/dev/null 2>&1 || exit 1
    elif [ "$IBVERBS_NODE" = $c ]; then
      t=0 # the server may still be serving an earlier client: retry
      until out=$(ibv_rc_pingpong -d "$IBVERBS_DEVICE" -g "$G" -s 4096 -n "$N" -p $p "$SERVER" 2>&1); do
        t=$((t + 1))
        case "$out" in *"Couldn't connect"*) [ $t -lt 120 ] && { sleep 1; continue; } ;; esac
        echo "$out"; exit 1
      done
      echo "$out" | grep iters | sed "s/^/node $c -> node 0: /"
    fi
  done
  c=$((c + 1))
done
