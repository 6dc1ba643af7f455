// cuda/counters.hpp — hardware counters read in-process with CUPTI's range profiler: the DRAM
// bytes read and written and the L2 bytes (dram__bytes_read.sum, dram__bytes_write.sum,
// lts__t_bytes.sum) of whatever GPU work one call makes, summed over its kernels.
//
//   CounterValues c = read_counters([&] { run_the_pass(); cudaDeviceSynchronize(); });
//   if (c.ok) ... c.dram_read ... else c.why  (one line: what failed)
//
// Auto range (each kernel its own range) with kernel replay (CUPTI reruns a kernel when the
// metrics need more than one pass), like Nsight Compute's default, except that caches are not
// flushed between the kernels of the call. Built only when CMake finds CUPTI
// (FLASHSIM_HAVE_CUPTI); otherwise `why` says so.
#pragma once
#include <functional>
#include <string>

namespace fcuda {

struct CounterValues {
    bool ok = false;
    double dram_read = 0, dram_write = 0, l2 = 0;  // bytes
    int kernels = 0;                               // ranges profiled = kernels launched
    int passes = 0;                                // replay passes the metrics needed
    std::string why;                               // when !ok
};

CounterValues read_counters(const std::function<void()>& work);

}  // namespace fcuda
