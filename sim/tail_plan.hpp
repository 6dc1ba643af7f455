// sim/tail_plan.hpp — flash2h forward's static order with its last round split along the keys
// (FLASHSIM_FLASH2H_TAIL=split, no mask), written once for the kernel (cuda/flash2h.cu, on the device)
// and the kernel model (sim/kernel_model.cpp). Plain constexpr: nvcc (with --expt-relaxed-constexpr)
// and the host compiler both read it.
//
// With `units` equal units of T_c key blocks over G blocks, every block first runs F = units / G whole
// units in turn (units b, b + G, ...); the L = units - F G left over would run as a last round with
// G - L blocks idle. Instead their L T_c key blocks, laid end to end (unit by unit), are cut into G
// runs of equal length, run b from lo(b) = b W / G (W = L T_c) to lo(b + 1). A run shorter than a unit
// crosses at most one unit's edge, so a block holds at most two pieces; a unit is shared by the
// blocks whose runs meet it, each leaving its piece's O, m and l for the last of them to merge.
#pragma once

namespace sim::tail {

struct Plan {
    int u_full, L, T_c, G;  // whole units (F G), units left over, key blocks a unit, blocks
    long long W;            // key blocks left over (L T_c)
};
constexpr Plan plan(int units, int T_c, int G) {
    const int F = units / G, L = units - F * G;
    return {F * G, L, T_c, G, static_cast<long long>(L) * T_c};
}
// Worth splitting: a last round that is not full, of runs two key blocks long or more.
constexpr bool worth(const Plan& t) { return t.L > 0 && t.W >= 2LL * t.G; }
constexpr long long lo(const Plan& t, int b) { return static_cast<long long>(b) * t.W / t.G; }
// The longest run a block gets (the others are one key block shorter or as long).
constexpr long long longest_run(const Plan& t) { return (t.W + t.G - 1) / t.G; }
// The block whose run holds left-over key block f (the last b with lo(b) <= f).
constexpr int block_of(const Plan& t, long long f) { return static_cast<int>(((f + 1) * t.G - 1) / t.W); }
// Where a piece's partial O, m and l wait to be merged: block b's k-th piece (k = 0, 1).
constexpr int slot(const Plan& t, int b, int tu) {
    return 2 * b + (lo(t, b) < static_cast<long long>(tu) * t.T_c ? 1 : 0);
}
// How many blocks share left-over unit tu (its pieces).
constexpr int sharers(const Plan& t, int tu) {
    const long long f0 = static_cast<long long>(tu) * t.T_c;
    return block_of(t, f0 + t.T_c - 1) - block_of(t, f0) + 1;
}
// The bytes of one piece's partials: each consumer thread's O registers (64 rows a warpgroup: d / 2 a
// thread), its two rows' m and l, in fp32, for the B_r / 64 warpgroups of 128 threads.
constexpr long long piece_bytes(int block_rows, int d) { return static_cast<long long>(block_rows) * (d / 2 + 4) * 8; }
// Block b's k-th piece (k = 0, 1): unit u, key blocks j0 .. j0 + nj - 1, its slot; false when none.
struct Piece {
    int u, j0, nj, slot;
};
constexpr bool piece(const Plan& t, int b, int k, Piece& out) {
    const long long first = lo(t, b), end = lo(t, b + 1);
    const long long f = k == 0 ? first : (first / t.T_c + 1) * t.T_c;
    if (k > 1 || f >= end) return false;
    const int tu = static_cast<int>(f / t.T_c), j0 = static_cast<int>(f - static_cast<long long>(tu) * t.T_c);
    const long long left = end - f;
    out = {t.u_full + tu, j0, left < t.T_c - j0 ? static_cast<int>(left) : t.T_c - j0, 2 * b + k};
    return true;
}

}  // namespace sim::tail
