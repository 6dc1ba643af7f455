// tests/sim/support.hpp — the problem and configuration builders the simulator's tests share.
#pragma once
#include <cstdint>

#include "sim/simulate.hpp"

namespace sim::test {

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One head (B = H = 1) of N = n, d, fp16, unmasked unless causal.
inline Problem shape(int64_t n, int64_t d, bool causal = false) {
    Problem p;
    p.seq = n;
    p.head_dim = d;
    p.causal = causal;
    return p;
}

// The same with B = batch, H = heads.
inline Problem with_heads(Problem p, int64_t batch, int64_t heads) {
    p.batch = batch;
    p.heads = heads;
    return p;
}

// Counting only (numerics off), L2 model as given (off by default). Non-zero blocks are fixed for
// both passes (0: the algorithm's rule; the backward then takes the forward's, halved to fit).
inline Config counting(Algo a, int64_t br = 0, int64_t bc = 0, Pass pass = Pass::forward, L2Mode l2 = L2Mode::off) {
    Config c;
    c.algo = a;
    c.block_rows = br;
    c.block_cols = bc;
    c.bwd_block_rows = br;
    c.bwd_block_cols = bc;
    c.numerics = Numerics::off;
    c.pass = pass;
    c.l2 = l2;
    return c;
}

// The same with the real arithmetic (outputs, and gradients with a backward pass).
inline Config numeric(Algo a, int64_t br = 0, int64_t bc = 0, Pass pass = Pass::forward) {
    Config c = counting(a, br, bc, pass);
    c.numerics = Numerics::on;
    return c;
}

}  // namespace sim::test
