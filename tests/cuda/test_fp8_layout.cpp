// tests/cuda/test_fp8_layout.cpp — the key order of flash2h's FP8 forward (cuda/fp8_layout.hpp), on
// the CPU: P's accumulators packed where they sit into the e4m3 A fragment of wgmma k32, and V's
// rows written in the matching key order, give exactly P V.
//
// The two fragment layouts are restated here from the PTX ISA's figures, independently of the header's
// acc_column / frag_slot:
//   D (fp32 accumulator, m64nN): thread lane = 4 g + t of warp w holds, for column group nb, d[4 nb + 0,
//     1] = row 16 w + g, columns 8 nb + 2 t + {0, 1}; d[4 nb + 2, 3] = row 16 w + g + 8, the same columns.
//   A (8-bit, m64nNk32): register r, byte b = row 16 w + g + 8 (r % 2), k = 16 (r / 2) + 4 t + b.
#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/fp8_layout.hpp"

namespace {

using namespace fcuda::fp8;

// The PTX ISA's D fragment, restated: accumulator d (0..63 of m64n128) of thread (w, g, t).
struct RowCol {
    int row, col;
};
RowCol d_place(int w, int g, int t, int d) {
    const int nb = d / 4, half = (d % 4) / 2, e = d % 2;
    return {16 * w + g + 8 * half, 8 * nb + 2 * t + e};
}
// The PTX ISA's 8-bit A fragment, restated: register r, byte b of thread (w, g, t) in k-step kk.
RowCol a_place(int w, int g, int t, int kk, int r, int b) {
    return {16 * w + g + 8 * (r % 2), 32 * kk + 16 * (r / 2) + 4 * t + b};
}

}  // namespace

TEST_CASE("fp8 key order: key_of_slot is a bijection on each 32-key group, pack_source on a thread's 16 values") {
    std::array<int, kGroup> hits{};
    for (int k = 0; k < kGroup; ++k) {
        const int key = key_of_slot(k);
        REQUIRE(key >= 0);
        REQUIRE(key < kGroup);
        ++hits[static_cast<size_t>(key)];
    }
    for (int key = 0; key < kGroup; ++key) CHECK(hits[static_cast<size_t>(key)] == 1);
    std::array<int, 16> used{};
    for (int r = 0; r < 4; ++r)
        for (int b = 0; b < 4; ++b) ++used[static_cast<size_t>(pack_source(r, b))];
    for (int a = 0; a < 16; ++a) CHECK(used[static_cast<size_t>(a)] == 1);
}

TEST_CASE("fp8 key order: each packed byte lands at the A slot whose key is its accumulator's column, same row") {
    for (int t = 0; t < 4; ++t)
        for (int r = 0; r < 4; ++r)
            for (int b = 0; b < 4; ++b) {
                const int a = pack_source(r, b);  // index within the 32-key group's 16 accumulators
                // the accumulator's place by the restated D fragment (group 0: d = a)
                const RowCol acc = d_place(0, 0, t, a);
                const RowCol slot = a_place(0, 0, t, 0, r, b);
                CAPTURE(t);
                CAPTURE(r);
                CAPTURE(b);
                CHECK(acc.row == slot.row);               // the same query row
                CHECK(key_of_slot(slot.col) == acc.col);  // slot k carries key key_of_slot(k)
                CHECK(acc_column(a, t) == acc.col);       // the header's statement of D agrees
                CHECK(frag_slot(r, b, t) == slot.col);    // and of A
                CHECK(acc_half(a) == frag_half(r));
            }
}

TEST_CASE("fp8 key order: P V through the packed fragments and the permuted V^T equals P V, exactly") {
    // S (64 x 128, one warpgroup's block) and V (128 keys x 8 channels): small integers, so every sum is exact
    constexpr int R = 64, C = 128, NV = 8;
    std::vector<int> S(R * C), V(C * NV);
    uint32_t h = 12345;
    auto next = [&] {
        h = h * 1664525u + 1013904223u;
        return static_cast<int>((h >> 24) % 15) - 7;
    };
    for (int& x : S) x = next();
    for (int& x : V) x = next();
    // A (64 x 128) filled from the threads' accumulators as the kernel's to_p packs them
    std::vector<int> A(R * C, 0), filled(R * C, 0);
    for (int w = 0; w < 4; ++w)
        for (int g = 0; g < 8; ++g)
            for (int t = 0; t < 4; ++t)
                for (int kk = 0; kk < C / kGroup; ++kk)
                    for (int r = 0; r < 4; ++r)
                        for (int b = 0; b < 4; ++b) {
                            const RowCol src = d_place(w, g, t, 16 * kk + pack_source(r, b));
                            const RowCol dst = a_place(w, g, t, kk, r, b);
                            A[dst.row * C + dst.col] = S[src.row * C + src.col];
                            ++filled[dst.row * C + dst.col];
                        }
    for (int f : filled) REQUIRE(f == 1);
    // B (128 x 8): the V^T the preparation writes, read back along k: slot k of group q holds key
    // 32 q + key_of_slot(k)
    std::vector<int> B(C * NV);
    for (int k = 0; k < C; ++k)
        for (int n = 0; n < NV; ++n) B[k * NV + n] = V[(k / kGroup * kGroup + key_of_slot(k % kGroup)) * NV + n];
    for (int row = 0; row < R; ++row)
        for (int n = 0; n < NV; ++n) {
            long got = 0, want = 0;
            for (int k = 0; k < C; ++k) got += long{A[row * C + k]} * B[k * NV + n];
            for (int c = 0; c < C; ++c) want += long{S[row * C + c]} * V[c * NV + n];
            CHECK(got == want);
        }
}
