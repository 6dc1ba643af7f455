// sim/footprint.cpp — the tensors each algorithm and pass holds in HBM at once (see footprint.hpp),
// and the binary search for the longest N that fits a capacity.
#include "sim/footprint.hpp"

#include "sim/kernel_model.hpp"

#include <algorithm>
#include <cmath>

namespace sim {

namespace {
constexpr int64_t kMaxGridIndex = 7 + 8 * 21;  // N = 2^24, the longest the simulator accepts

struct Sizes {
    double T, R, S;  // elements of a (B,H,N,d), a (B,H,N) and a (B,H,N,N) tensor
};
}  // namespace

Footprint footprint(const Problem& p, Algo algo, Pass pass, const std::string& kernel) {
    p.validate_shape();  // closed forms in doubles: no count to overflow
    if (!kernel.empty()) {
        const auto names = kernel_names();
        if (std::find(names.begin(), names.end(), kernel) == names.end())
            throw Error("unknown kernel '" + kernel + "' for the footprint (standard, flash1, flash2, flash2h)");
    }
    const double bh = double(p.batch) * double(p.heads), n = double(p.seq);
    const Sizes z{bh * n * double(p.head_dim), bh * n, bh * n * n};
    const double e = double(p.elem_bytes());
    const std::string st(dtype_name(p.dtype));
    Footprint f;
    f.algo = algo;
    f.pass = pass;
    auto add = [&](const std::string& name, const char* shape, const std::string& dt, double elems, double bytes_per) {
        f.tensors.push_back({name, shape, dt, elems * bytes_per});
        f.total_bytes += elems * bytes_per;
        if (std::string(shape) == "(B, H, N, N)") f.quadratic_bytes += elems * bytes_per;
    };
    const char* full = "(B, H, N, d)";
    const char* rows = "(B, H, N)";
    const char* square = "(B, H, N, N)";
    const bool fwd = pass == Pass::forward;
    const bool bwd = pass == Pass::backward;
    switch (algo) {
        case Algo::standard:
            for (const char* t : {"Q", "K", "V", "O"}) add(t, full, st, z.T, e);
            if (!fwd)
                for (const char* t : {"dO", "dQ", "dK", "dV"}) add(t, full, st, z.T, e);
            if (!bwd) add("S", square, st, z.S, e);  // the backward reads P, not S
            add("P", square, st, z.S, e);
            if (!fwd) {
                add("dP", square, st, z.S, e);
                add("dS", square, st, z.S, e);
            }
            break;
        case Algo::flash1:
            for (const char* t : {"Q", "K", "V"}) add(t, full, st, z.T, e);
            add("O", full, "fp32", z.T, 4);  // Algorithm 1 keeps O in float32 in HBM
            add("l", rows, "fp32", z.R, 4);
            add("m", rows, "fp32", z.R, 4);
            if (!fwd) {
                for (const char* t : {"dO", "dK", "dV"}) add(t, full, st, z.T, e);
                add("dQ", full, "fp32", z.T, 4);  // Algorithm 4 accumulates dQ in HBM, float32
            }
            break;
        case Algo::flash2:
            for (const char* t : {"Q", "K", "V"}) add(t, full, st, z.T, e);
            // O in the storage type, except fp8's forward, which writes bf16 (Problem::out_bytes)
            add("O", full, p.dtype == DType::fp8 ? "bf16" : st, z.T, double(p.out_bytes()));
            add("LSE", rows, "fp32", z.R, 4);
            if (!fwd) {
                for (const char* t : {"dO", "dQ", "dK", "dV"}) add(t, full, st, z.T, e);
                add("D", rows, "fp32", z.R, 4);
                add("dQ accumulator", full, "fp32", z.T, 4);
                // a kernel whose warpgroups each keep a dQ_i copy (flash2h at d = 64 did, before
                // its bulk-sum schedule) holds one accumulator a copy: the kernel model's dq_tiles
                if (!kernel.empty()) {
                    const KernelProfile k = kernel_profile(kernel, Pass::backward, p.head_dim, p.causal);
                    for (int c = 1; c < k.dq_tiles && k.dq == DqAccumulation::bulk_reduction; ++c)
                        add("dQ accumulator (" + kernel + "'s copy " + std::to_string(c + 1) + ")", full, "fp32", z.T,
                            4);
                }
            }
            break;
    }
    return f;
}

double usable_memory(const Machine& m) { return m.hbm_usable_bytes > 0 ? m.hbm_usable_bytes : m.hbm_bytes; }

int64_t grid_point(int64_t index) {
    if (index < 0) throw Error("grid index must be >= 0");
    if (index < 8) return index + 1;
    const int64_t k = 3 + (index - 7) / 8, j = (index - 7) % 8;
    return (int64_t{1} << (k - 3)) * (8 + j);
}

int64_t grid_index_at_most(int64_t n) {
    if (n < 1) throw Error("N must be >= 1");
    if (n <= 8) return n - 1;
    int64_t k = 0;
    while ((int64_t{1} << (k + 1)) <= n) ++k;
    const int64_t step = int64_t{1} << (k - 3);
    return 7 + (k - 3) * 8 + (n / step - 8);
}

FitResult longest_fit(const Problem& shape, Algo algo, Pass pass, double capacity) {
    if (!(capacity > 0) || !std::isfinite(capacity)) throw Error("memory capacity must be a positive number of bytes");
    Problem p = shape;
    p.causal = false;
    p.window = 0;
    p.pad_left = 0;
    auto bytes_at = [&](int64_t idx) {
        p.seq = grid_point(idx);
        return footprint(p, algo, pass).total_bytes;
    };
    FitResult r;
    r.capacity = capacity;
    // largest index i with bytes_at(i) <= capacity; bytes grow with N
    int64_t lo = -1, hi = kMaxGridIndex;        // bytes_at(lo) fits (or lo = -1), bytes_at(hi) does not
    if (bytes_at(kMaxGridIndex) <= capacity) {  // everything up to the simulator's limit fits
        r.longest_n = grid_point(kMaxGridIndex);
        r.bytes_at_longest = bytes_at(kMaxGridIndex);
        r.at_limit = true;
        return r;
    }
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        (bytes_at(mid) <= capacity ? lo : hi) = mid;
    }
    if (lo >= 0) {
        r.longest_n = grid_point(lo);
        r.bytes_at_longest = bytes_at(lo);
    }
    r.next_n = grid_point(lo + 1);
    r.bytes_at_next = bytes_at(lo + 1);
    return r;
}

}  // namespace sim
