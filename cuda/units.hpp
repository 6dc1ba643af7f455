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

// The static order's last round split along the keys (FLASHSIM_FLASH2H_TAIL=split, unmasked): with
// `units` equal units of T_c key blocks over G blocks, every block first runs F = units / G whole
// units in turn (units b, b + G, ...); the L = units - F G left over would run as a last round with
// G - L blocks idle. Instead their L T_c key blocks, laid end to end (unit by unit), are cut into G
// runs of equal length, run b from lo(b) = b W / G (W = L T_c) to lo(b + 1). A run shorter than a unit
// crosses at most one unit's edge, so a block holds at most two pieces; a unit is shared by the
// blocks whose runs meet it, each leaving its piece's O, m and l for the last of them to merge.
struct TailPlan {
    int u_full, L, T_c, G;  // whole units (F G), units left over, key blocks a unit, blocks
    long long W;            // key blocks left over (L T_c)
};
FLASHSIM_HD constexpr TailPlan tail_plan(int units, int T_c, int G) {
    const int F = units / G, L = units - F * G;
    return {F * G, L, T_c, G, static_cast<long long>(L) * T_c};
}
// Worth splitting: a last round that is not full, of runs two key blocks long or more.
FLASHSIM_HD constexpr bool tail_worth(const TailPlan& t) { return t.L > 0 && t.W >= 2LL * t.G; }
FLASHSIM_HD constexpr long long tail_lo(const TailPlan& t, int b) { return static_cast<long long>(b) * t.W / t.G; }
// The block whose run holds left-over key block f (the last b with lo(b) <= f).
FLASHSIM_HD constexpr int tail_block_of(const TailPlan& t, long long f) {
    return static_cast<int>(((f + 1) * t.G - 1) / t.W);
}
// Where a piece's partial O, m and l wait to be merged: block b's k-th piece (k = 0, 1).
FLASHSIM_HD constexpr int tail_slot(const TailPlan& t, int b, int tu) {
    return 2 * b + (tail_lo(t, b) < static_cast<long long>(tu) * t.T_c ? 1 : 0);
}
// How many blocks share left-over unit tu (its pieces).
FLASHSIM_HD constexpr int tail_sharers(const TailPlan& t, int tu) {
    const long long f0 = static_cast<long long>(tu) * t.T_c;
    return tail_block_of(t, f0 + t.T_c - 1) - tail_block_of(t, f0) + 1;
}
// Block b's k-th piece (k = 0, 1): unit u, key blocks j0 .. j0 + nj - 1, its slot; false when none.
struct Piece {
    int u, j0, nj, slot;
};
FLASHSIM_HD constexpr bool tail_piece(const TailPlan& t, int b, int k, Piece& out) {
    const long long lo = tail_lo(t, b), hi = tail_lo(t, b + 1);
    const long long f = k == 0 ? lo : (lo / t.T_c + 1) * t.T_c;
    if (k > 1 || f >= hi) return false;
    const int tu = static_cast<int>(f / t.T_c), j0 = static_cast<int>(f - static_cast<long long>(tu) * t.T_c);
    const long long left = hi - f;
    out = {t.u_full + tu, j0, left < t.T_c - j0 ? static_cast<int>(left) : t.T_c - j0, 2 * b + k};
    return true;
}

}  // namespace fcuda::units

#undef FLASHSIM_HD
