#!/bin/sh
# Round trips of ibv_rc_pingpong 4 KiB in ONE guest boot: two rxe devices on
# the two ends of a veth pair (RIG.md), two on veths joined by a bridge (what
# tools/rxe-vm --nodes builds), and rxe0 loopback, three rounds of each.
# Run: tools/rxe-vm -- sh benchmarks/rig_rtt.sh   (N=iterations, default 500)
set -e
for k in all default; do
  echo 1 > /proc/sys/net/ipv4/conf/$k/accept_local
  echo 0 > /proc/sys/net/ipv4/conf/$k/rp_filter
  echo 1 > /proc/sys/net/ipv4/conf/$k/arp_ignore
  echo 2 > /proc/sys/net/ipv4/conf/$k/arp_announce
done
ip -batch - <<IP
link add va type veth peer name vb
addr add 10.99.0.1/24 dev va
addr add 10.99.0.2/24 dev vb
link set va up
link set vb up
link add br9 type bridge
link add vc type veth peer name pc
link add vd type veth peer name pd
link set pc master br9
link set pd master br9
addr add 10.98.0.1/24 dev vc
addr add 10.98.0.2/24 dev vd
link set pc up
link set pd up
link set vc up
link set vd up
link set br9 up
rule add pref 100 lookup local
rule del pref 0 lookup local
route add 10.99.0.0/24 dev va src 10.99.0.1 table 21
route add 10.99.0.0/24 dev vb src 10.99.0.2 table 22
rule add pref 10 iif lo from 10.99.0.1 to 10.99.0.2 lookup 21
rule add pref 10 iif lo from 10.99.0.2 to 10.99.0.1 lookup 22
route add 10.98.0.0/24 dev vc src 10.98.0.1 table 23
route add 10.98.0.0/24 dev vd src 10.98.0.2 table 24
rule add pref 10 iif lo from 10.98.0.1 to 10.98.0.2 lookup 23
rule add pref 10 iif lo from 10.98.0.2 to 10.98.0.1 lookup 24
IP
rdma link add rxa type rxe netdev va
rdma link add rxb type rxe netdev vb
rdma link add rxc type rxe netdev vc
rdma link add rxd type rxe netdev vd
sleep 3
rdma link
pp() { # server-dev client-dev server-addr port label
  ibv_rc_pingpong -d "$1" -g 1 -s 4096 -n "$N" -p "$4" >"/tmp/s.$4" 2>&1 &
  sleep 1
  ibv_rc_pingpong -d "$2" -g 1 -s 4096 -n "$N" -p "$4" "$3" 2>&1 | grep iters | sed "s/^/$5: /"
  wait
}
N=${N:-500}
for r in 1 2 3; do
  pp rxa rxb 10.99.0.1 $((19000+r*10)) "pair   "
  pp rxc rxd 10.98.0.1 $((19001+r*10)) "bridge "
  pp rxe0 rxe0 127.0.0.1 $((19002+r*10)) "loop   "
done
