#!/bin/sh
# tools/rxe-vm --nodes 2 -- sh benchmarks/rig_rtt_nodes.sh : ibv_rc_pingpong 4 KiB
# across the rig's two nodes (rxe1 client -> rxe0 server), three runs of N.
# Run per node by the rig: node 0 serves, node 1 connects.
N=${N:-1000}
if [ "$IBVERBS_NODE" = 0 ]; then
  for p in 18601 18602 18603; do ibv_rc_pingpong -d rxe0 -g ${IBVERBS_TEST_GID_INDEX:-1} -s 4096 -n $N -p $p >/dev/null 2>&1 || exit 1; done
else
  for p in 18601 18602 18603; do sleep 2; ibv_rc_pingpong -d rxe1 -g ${IBVERBS_TEST_GID_INDEX:-1} -s 4096 -n $N -p $p 198.18.0.1 | grep iters || exit 1; done
fi
