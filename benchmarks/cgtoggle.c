/*
 * cgtoggle.c - callgrind client requests for benchmarks/cg_loop.py, loaded
 * with ctypes: valgrind runs with --instr-atstart=no (start-up and set-up
 * are not instrumented, which is fast), cg_start() turns instrumentation
 * on and zeroes the counters right before the measured loop, cg_stop()
 * dumps them ("loop") right after it.  Outside valgrind both do nothing.
 *
 *   cc -O2 -shared -fPIC -o build/bench/cgtoggle.so benchmarks/cgtoggle.c
 */
#include <valgrind/callgrind.h>

void cg_start(void)
{
	CALLGRIND_START_INSTRUMENTATION;
	CALLGRIND_ZERO_STATS;
}

void cg_stop(void)
{
	CALLGRIND_DUMP_STATS_AT("loop");
	CALLGRIND_STOP_INSTRUMENTATION;
}
