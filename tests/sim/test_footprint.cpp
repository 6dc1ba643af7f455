// The memory footprint of one attention layer, tensor by tensor, against closed forms counted by
// hand here; the longest-N fit against its own definition (N fits, the next grid point does not).
#include <doctest/doctest.h>

#include "sim/footprint.hpp"

using namespace sim;

namespace {
Problem shape(int64_t b, int64_t h, int64_t n, int64_t d, DType dt) {
    Problem p;
    p.batch = b;
    p.heads = h;
    p.seq = n;
    p.head_dim = d;
    p.dtype = dt;
    return p;
}
}  // namespace

TEST_CASE("footprint: each algorithm and pass equals the hand count of its tensors") {
    for (DType dt : {DType::bf16, DType::fp32})
        for (int64_t n : {1, 7, 1000, 8192}) {
            const Problem p = shape(2, 3, n, 64, dt);
            // hand count: T = (B,H,N,d) elements, R = (B,H,N), S = (B,H,N,N); e bytes per element
            const double T = 2.0 * 3 * n * 64, R = 2.0 * 3 * n, S = 2.0 * 3 * n * n, e = dt == DType::bf16 ? 2 : 4;
            // standard forward: Q, K, V, O + S and P
            CHECK(footprint(p, Algo::standard, Pass::forward).total_bytes == 4 * T * e + 2 * S * e);
            // standard backward: Q K V O dO dQ dK dV + P dP dS (S is not read back)
            CHECK(footprint(p, Algo::standard, Pass::backward).total_bytes == 8 * T * e + 3 * S * e);
            // a step: all eight (B,H,N,d) tensors and S, P, dP, dS
            CHECK(footprint(p, Algo::standard, Pass::both).total_bytes == 8 * T * e + 4 * S * e);
            CHECK(footprint(p, Algo::standard, Pass::both).quadratic_bytes == 4 * S * e);
            // flash1 forward: Q K V in storage type, O fp32, l and m fp32
            CHECK(footprint(p, Algo::flash1, Pass::forward).total_bytes == 3 * T * e + 4 * T + 8 * R);
            // flash1 backward: + dO, dK, dV (storage) and dQ (fp32)
            CHECK(footprint(p, Algo::flash1, Pass::backward).total_bytes == 6 * T * e + 8 * T + 8 * R);
            // flash2 forward: Q K V O + LSE
            CHECK(footprint(p, Algo::flash2, Pass::forward).total_bytes == 4 * T * e + 4 * R);
            // flash2 backward / step: eight (B,H,N,d) tensors, LSE and D, the fp32 dQ accumulator
            CHECK(footprint(p, Algo::flash2, Pass::backward).total_bytes == 8 * T * e + 8 * R + 4 * T);
            CHECK(footprint(p, Algo::flash2, Pass::both).total_bytes == 8 * T * e + 8 * R + 4 * T);
            CHECK(footprint(p, Algo::flash2, Pass::both).quadratic_bytes == 0);
        }
}

TEST_CASE("footprint: a kernel's own buffers (flash2h's backward keeps one dQ accumulator)") {
    for (int64_t d : {64, 128})
        for (bool causal : {false, true}) {
            Problem p = shape(2, 3, 1000, d, DType::bf16);
            p.causal = causal;
            const double T = 2.0 * 3 * 1000 * d, R = 2.0 * 3 * 1000, e = 2;
            // d = 64 (bulk-sum) sums its two warpgroups' parts in shared memory before adding
            // them into one fp32 (B,H,N,d) accumulator, as d = 128 adds its column halves into one
            const double copies = 1;
            CHECK(footprint(p, Algo::flash2, Pass::both, "flash2h").total_bytes == 8 * T * e + 8 * R + copies * 4 * T);
            CHECK(footprint(p, Algo::flash2, Pass::both, "flash2").total_bytes == 8 * T * e + 8 * R + 4 * T);
            // the forward keeps no accumulator, whatever the kernel
            CHECK(footprint(p, Algo::flash2, Pass::forward, "flash2h").total_bytes == 4 * T * e + 4 * R);
        }
    CHECK_THROWS_AS(footprint(shape(1, 1, 8, 64, DType::bf16), Algo::flash2, Pass::both, "flash9"), Error);
}

TEST_CASE("footprint: the issue's shape (B=1, H=16, d=128, bf16, N=8192)") {
    const Problem p = shape(1, 16, 8192, 128, DType::bf16);
    // one (B,H,N,N) bf16 tensor: 16 * 8192^2 * 2 = 2^31 bytes = 2 GiB; standard's step holds four
    const double sq = 16.0 * 8192 * 8192 * 2;
    CHECK(sq == 2147483648.0);
    const Footprint f = footprint(p, Algo::standard, Pass::both);
    CHECK(f.quadratic_bytes == 4 * sq);
    // flash2's step: 8 tensors of 32 MiB, the 64 MiB fp32 accumulator and 2 x 512 KiB of row stats
    CHECK(footprint(p, Algo::flash2, Pass::both).total_bytes == 8 * 33554432.0 + 67108864.0 + 2 * 524288.0);
}

TEST_CASE("the N grid: steps of an eighth of a power of two") {
    const int64_t want[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 26, 28, 30, 32, 36};
    for (int64_t i = 0; i < int64_t(std::size(want)); ++i) CHECK(grid_point(i) == want[i]);
    CHECK(grid_point(grid_index_at_most(8192)) == 8192);
    CHECK(grid_point(grid_index_at_most(8192) + 1) == 9216);
    CHECK(grid_point(grid_index_at_most(9000)) == 8192);
    for (int64_t i = 0; i < 200; ++i) {
        CHECK(grid_index_at_most(grid_point(i)) == i);
        CHECK(grid_point(i + 1) > grid_point(i));
    }
}

TEST_CASE("longest_fit: N fits and the next grid point does not") {
    const Problem p = shape(1, 16, 0, 128, DType::bf16);
    for (double cap : {1e6, 80e9, 139.0 * 1024 * 1024 * 1024, 2e12})
        for (Algo a : {Algo::standard, Algo::flash1, Algo::flash2})
            for (Pass ps : {Pass::forward, Pass::backward, Pass::both}) {
                const FitResult r = longest_fit(p, a, ps, cap);
                CAPTURE(cap);
                if (r.at_limit) {  // 2e12 bytes hold flash's N = 2^24 (the simulator's limit)
                    CHECK(r.longest_n == 16777216);
                    CHECK(a != Algo::standard);
                    continue;
                }
                CHECK(r.next_n == (r.longest_n > 0 ? grid_point(grid_index_at_most(r.longest_n) + 1) : 1));
                if (r.longest_n > 0) {
                    Problem q = p;
                    q.seq = r.longest_n;
                    CHECK(footprint(q, a, ps).total_bytes <= cap);
                    CHECK(r.bytes_at_longest == footprint(q, a, ps).total_bytes);
                }
                Problem q = p;
                q.seq = r.next_n;
                CHECK(footprint(q, a, ps).total_bytes > cap);
            }
    // standard's step on 139 GiB: 4 N^2 tensors dominate; 4 * 16 * N^2 * 2 <= 139 GiB gives N <= 34,146, and
    // on the grid (32768, 36864, ...) that is 32768.
    const FitResult s = longest_fit(p, Algo::standard, Pass::both, 139.0 * 1024 * 1024 * 1024);
    CHECK(s.longest_n == 32768);
    CHECK(s.next_n == 36864);
    // flash2's step: 20 bytes per element of (1,16,N,128) + 8 bytes per row: 41,088 bytes per token,
    // so N <= 139 GiB / 41088 = 3,632,450; on the grid 3,670,016 = 2^21 * 14/8 is over, 3,407,872 not.
    const FitResult f = longest_fit(p, Algo::flash2, Pass::both, 139.0 * 1024 * 1024 * 1024);
    CHECK(f.longest_n == 3407872);
    CHECK_THROWS_AS(longest_fit(p, Algo::flash2, Pass::both, 0), Error);
    Problem bad = p;
    bad.head_dim = 0;
    CHECK_THROWS_AS(longest_fit(bad, Algo::flash2, Pass::both, 1e9), Error);
}
