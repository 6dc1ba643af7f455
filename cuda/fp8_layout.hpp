// cuda/fp8_layout.hpp — where P's values sit when flash2h's FP8 forward (cuda/flash2h_fp8.cu) feeds
// P from registers into O += P V, and the order of keys that makes that right. Plain C++ (constexpr,
// callable on the device too): the kernel, the V transpose and a CPU test (tests/cuda/
// test_fp8_layout.cpp) all read this one definition.
//
// Within one warp of a warpgroup, lane = 4 g + t (g = lane / 4, t = lane % 4).
//   The fp32 accumulator of S (wgmma m64nN, PTX ISA "wgmma D fragment"): for each group of 8 columns
//   nb, the thread holds 4 values, (row g, columns 8 nb + 2 t, 8 nb + 2 t + 1) then (row g + 8, the
//   same two columns). Over a group of 32 keys (4 column groups) that is 16 values, accumulator
//   index a = 4 nb' + 2 half + e (nb' = 0..3 the column group inside the 32, half 0: row g, 1: row
//   g + 8, e the column of the pair).
//   The 8-bit A operand of wgmma m64nNk32 (PTX ISA "wgmma A fragment", .e4m3): 4 registers of 4
//   bytes; register r, byte b holds row g + 8 (r % 2), reduction index k = 16 (r / 2) + 4 t + b.
// The two do not match: the thread has columns 2t, 2t+1, 8+2t, 8+2t+1 of each 16, the fragment wants
// k = 4t .. 4t+3. Instead of moving values between threads, each thread packs its own values as they
// come (register r, byte b takes accumulator index pack_source(r, b)), so A's slot k of a 32-key group
// holds the P of key key_of_slot(k). A sum over k is the same sum over keys in another order if V's
// row at slot k is that same key: the V transpose writes key key_of_slot(k) at position k of each
// 32-key group (V^T is stored (d, keys), the reduction index contiguous, as FP8 wgmma requires).
#pragma once

#if defined(__CUDACC__)
#define FCUDA_HD __host__ __device__
#else
#define FCUDA_HD
#endif

namespace fcuda::fp8 {

constexpr int kGroup = 32;  // keys a k32 step reduces over

// The accumulator index (0..15 within a 32-key group, a = 4 nb' + 2 half + e) that goes to A's
// register r (0..3), byte b (0..3): register r takes row half r % 2, column groups 2 (r / 2) and
// 2 (r / 2) + 1, both columns of each, in that order.
FCUDA_HD constexpr int pack_source(int r, int b) { return 4 * (2 * (r / 2) + b / 2) + 2 * (r % 2) + b % 2; }

// The key (0..31 within its group) whose P sits at A's reduction slot k (0..31), for every thread
// alike: slot k = 16 h + 4 t + i carries column group 2 h + i / 2, column 2 t + i % 2 of it.
FCUDA_HD constexpr int key_of_slot(int k) {
    const int h = k / 16, t = (k % 16) / 4, i = k % 4;
    return 16 * h + 8 * (i / 2) + 2 * t + i % 2;
}

// The S accumulator's column (0..31 in the group) and row half (0: g, 1: g + 8) of accumulator
// index a for thread t; and A's slot k and row half for register r, byte b, thread t.
FCUDA_HD constexpr int acc_column(int a, int t) { return 8 * (a / 4) + 2 * t + a % 2; }
FCUDA_HD constexpr int acc_half(int a) { return (a % 4) / 2; }
FCUDA_HD constexpr int frag_slot(int r, int b, int t) { return 16 * (r / 2) + 4 * t + b; }
FCUDA_HD constexpr int frag_half(int r) { return r % 2; }

}  // namespace fcuda::fp8
