// cuda/units.hpp — the work units of flash2h forward's persistent grids (the static order and the
// counter), in plain C++ that the kernel runs on the device and a host test checks against the
// simulator's walk (sim/program.hpp, StaticUnits). No CUDA headers: compiled by nvcc and by the host
// compiler alike.
#pragma once

#ifdef __CUDACC__
#define FLASHSIM_HD __host__ __device__
#else
#define FLASHSIM_HD
#endif

namespace fcuda::units {

// A tile of the forward: query block i of head bh (batch x head).
struct Tile {
    int i, bh;
};

// Unmasked, a unit is one query block: T_r - 1 - u mod T_r of head u / T_r (a head's blocks
// together, so that the blocks running at once share their K_j, V_j in L2).
//
// Causal, a unit is two query blocks of about T_r + 1 key blocks together: a head's p-th heaviest
// and p-th lightest (T_r - 1 - p, then p). At even T_r that covers every block, T_r / 2 units a head.
// At odd T_r each head keeps a middle block m = (T_r - 1) / 2 of about half a pair's work; the
// heads go in twos, and a two's T_r units are first the two middle blocks (of head 2g, then of 2g +
// 1), then head 2g's m pairs, then head 2g + 1's. An odd number of heads leaves the last head's
// middle block a unit alone (then its m pairs). Handed out in turn, units of equal cost keep the
// slots level; a lone middle block a head (the kernel until 2026-12-05) left every slot that held one
// half a unit ahead, walking K, V the rest had left behind in L2 (cuda/NOTES.md, "middle blocks").
FLASHSIM_HD constexpr int count(bool causal, int T_r, int BH) {
    if (!causal) return BH * T_r;
    if (T_r % 2 == 0) return BH * (T_r / 2);
    return (BH / 2) * T_r + (BH % 2) * (T_r / 2 + 1);
}

// Where causal unit u lies: its head, its pair p, or (middles) the middle block of heads head and
// head + 1.
struct Place {
    int head, p;
    bool middles;
};
FLASHSIM_HD constexpr Place place_causal(int u, int T_r) {
    if (T_r % 2 == 0) return {u / (T_r / 2), u % (T_r / 2), false};
    const int g = u / T_r, r = u % T_r, m = T_r / 2;
    if (r == 0) return {2 * g, m, true};
    return r <= m ? Place{2 * g, r - 1, false} : Place{2 * g + 1, r - 1 - m, false};
}

// How many tiles unit u holds (1 or 2).
FLASHSIM_HD constexpr int tiles(bool causal, int u, int T_r, int BH) {
    if (!causal) return 1;
    const Place pl = place_causal(u, T_r);
    return pl.middles && pl.head + 1 >= BH ? 1 : 2;
}

// Unit u's tile `half` (0 or 1) in the order the unit runs them.
FLASHSIM_HD constexpr Tile tile(bool causal, int u, int half, int T_r) {
    if (!causal) return {T_r - 1 - u % T_r, u / T_r};
    const Place pl = place_causal(u, T_r);
    if (pl.middles) return {pl.p, pl.head + half};
    return {half == 0 ? T_r - 1 - pl.p : pl.p, pl.head};
}

}  // namespace fcuda::units

#undef FLASHSIM_HD
