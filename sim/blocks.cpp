// sim/blocks.cpp — the block sizes B_r, B_c an algorithm uses and the SRAM buffers they need:
// the paper's rule (B_c = ceil(M/4d), B_r = min(B_c, d)) or the requested sizes, halved until
// every buffer fits the budget M, or refused with the buffers itemised; the backward's likewise.
#include <algorithm>
#include <sstream>

#include "sim/program.hpp"

namespace sim {

using detail::ceil_div;
using detail::kF32;

namespace {

std::string group(int64_t v) {  // 232448 -> "232,448"
    std::string s = std::to_string(v < 0 ? -v : v), out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
        out += s[i];
    }
    return v < 0 ? "-" + out : out;
}

std::vector<SramBuffer> buffers_for(const Problem& p, Algo a, int64_t br, int64_t bc, int64_t* total) {
    const int64_t d = p.head_dim, e = p.elem_bytes();
    const std::string dt(dtype_name(p.dtype));
    std::vector<SramBuffer> b;
    if (a == Algo::standard) {
        const int64_t gemm1 = br * d * e + bc * d * e + br * bc * kF32;
        const int64_t gemm2 = br * bc * e + bc * d * e + br * d * kF32;
        b = {{"S = QK^T: Q_i (B_r x d, " + dt + ")", br * d * e},
             {"S = QK^T: K_j (B_c x d, " + dt + ")", bc * d * e},
             {"S = QK^T: S_ij accumulator (B_r x B_c, fp32)", br * bc * kF32},
             {"O = PV: P_ij (B_r x B_c, " + dt + ")", br * bc * e},
             {"O = PV: V_j (B_c x d, " + dt + ")", bc * d * e},
             {"O = PV: O_i accumulator (B_r x d, fp32)", br * d * kF32}};
        *total = std::max(gemm1, gemm2);  // the two GEMMs run one after the other
    } else {
        b = {{"Q_i (B_r x d, " + dt + ")", br * d * e},         {"K_j (B_c x d, " + dt + ")", bc * d * e},
             {"V_j (B_c x d, " + dt + ")", bc * d * e},         {"O_i accumulator (B_r x d, fp32)", br * d * kF32},
             {"S_ij / P_ij (B_r x B_c, fp32)", br * bc * kF32}, {"m_i, l_i (2 x B_r, fp32)", 2 * br * kF32}};
        *total = 0;
        for (const auto& x : b) *total += x.bytes;
    }
    return b;
}

// The backward's buffers (the largest kernel's, for standard: its kernels run one after another).
std::vector<SramBuffer> backward_buffers_for(const Problem& p, Algo a, int64_t br, int64_t bc, int64_t* total) {
    const int64_t d = p.head_dim, e = p.elem_bytes();
    const std::string dt(dtype_name(p.dtype));
    std::vector<SramBuffer> b;
    if (a == Algo::standard) {
        const int64_t dv = br * bc * e + br * d * e + bc * d * kF32;  // dV = P^T dO (dK = dS^T Q alike)
        const int64_t dp = br * d * e + bc * d * e + br * bc * kF32;  // dP = dO V^T
        const int64_t dq = br * bc * e + bc * d * e + br * d * kF32;  // dQ = dS K
        b = {{"dV = P^T dO: P_ij (B_r x B_c, " + dt + ")", br * bc * e},
             {"dV = P^T dO: dO_i (B_r x d, " + dt + ")", br * d * e},
             {"dV = P^T dO: dV_j accumulator (B_c x d, fp32)", bc * d * kF32},
             {"dP = dO V^T: dP_ij accumulator (B_r x B_c, fp32)", br * bc * kF32},
             {"dQ = dS K: dQ_i accumulator (B_r x d, fp32)", br * d * kF32}};
        *total = std::max({dv, dp, dq});
        return b;
    }
    b = {{"K_j, V_j (2 x B_c x d, " + dt + ")", 2 * bc * d * e},
         {"dK_j, dV_j accumulators (2 x B_c x d, fp32)", 2 * bc * d * kF32},
         {"Q_i, dO_i (2 x B_r x d, " + dt + ")", 2 * br * d * e},
         {"S_ij / P_ij (B_r x B_c, fp32)", br * bc * kF32},
         {"dP_ij / dS_ij (B_r x B_c, fp32)", br * bc * kF32},
         {"dQ_i update (B_r x d, fp32)", br * d * kF32}};
    if (a == Algo::flash1) {
        b.push_back({"O_i (B_r x d, fp32, as Algorithm 1 stores it)", br * d * kF32});
        b.push_back({"l_i, m_i, D_i (3 x B_r, fp32)", 3 * br * kF32});
    } else {
        b.push_back({"LSE_i, D_i (2 x B_r, fp32)", 2 * br * kF32});
    }
    *total = 0;
    for (const auto& x : b) *total += x.bytes;
    return b;
}

std::string describe_overflow(const std::vector<SramBuffer>& b, int64_t total, int64_t sram) {
    std::ostringstream o;
    for (size_t i = 0; i < b.size(); ++i) o << (i ? " + " : "") << b[i].name << " " << group(b[i].bytes) << " B";
    o << " = " << group(total) << " B needed, but the SRAM budget M is " << group(sram) << " B";
    return o.str();
}

// Halve the blocks the caller did not fix (B_c first while it is the larger) until every buffer
// fits the SRAM budget; a fixed size that does not fit is refused with the itemised buffers.
// `what` names the tiles in messages ("tiles", "backward tiles"), `flags` the options to change.
// Returns whether anything was halved; `bufs` and `total` describe the final blocks.
template <typename BuffersFor>
bool fit_by_halving(BuffersFor buffers_for_blocks, int64_t br_in, int64_t bc_in, int64_t sram, const std::string& what,
                    const std::string& flags, int64_t& br, int64_t& bc, std::vector<SramBuffer>& bufs, int64_t& total) {
    bufs = buffers_for_blocks(br, bc, &total);
    if (total > sram && br_in && bc_in)
        throw Error(what + " do not fit in SRAM: " + describe_overflow(bufs, total, sram) + ". Use smaller " + flags +
                    " or a larger --sram.");
    bool halved = false;
    while (total > sram) {
        const bool can_cols = !bc_in && bc > 1, can_rows = !br_in && br > 1;
        if (!can_cols && !can_rows)
            throw Error(what + " do not fit in SRAM: " + describe_overflow(bufs, total, sram) +
                        ". Use a larger --sram or smaller " + flags + ".");
        if (can_cols && (bc >= br || !can_rows))
            bc = ceil_div(bc, 2);
        else
            br = ceil_div(br, 2);
        halved = true;
        bufs = buffers_for_blocks(br, bc, &total);
    }
    return halved;
}

}  // namespace

bool standard_rows_fit(int64_t n, int64_t sram_bytes, int64_t floats_per_elem) {
    return detail::row_kernel_shape(n, sram_bytes, floats_per_elem, 0).whole_rows;
}

BlockChoice choose_blocks(const Problem& p, Algo a, int64_t sram, int64_t br_in, int64_t bc_in) {
    p.validate();
    if (sram <= 0) throw Error("SRAM budget must be positive (set --sram BYTES)");
    if (br_in < 0 || bc_in < 0) throw Error("block sizes must be positive (--block-rows, --block-cols)");
    const int64_t d = p.head_dim, e = p.elem_bytes();
    BlockChoice choice;
    int64_t br = br_in, bc = bc_in;
    std::ostringstream note;
    if (a == Algo::standard) {
        if (!bc) bc = 128;
        if (!br) br = 128;
        note << "standard: GEMM tiles of B_r x B_c = " << br << " x " << bc;
    } else {
        const int64_t m_elems = sram / e;
        const int64_t rule =
            std::max<int64_t>(1, ceil_div(m_elems, 4 * d));  // M under one element: 1 x 1, refused below
        if (!bc) bc = rule;
        if (!br) br = std::min(rule, d);
        if (br_in && bc_in) {
            note << "given: B_r = " << br_in << ", B_c = " << bc_in;
        } else {
            note << "paper rule with M = " << group(sram) << " B / " << e << " B = " << group(m_elems)
                 << " elements: B_c = ceil(M/4d) = " << rule << ", B_r = min(B_c, d) = " << std::min(rule, d);
            if (br_in) note << "; B_r = " << br_in << " given";
            if (bc_in) note << "; B_c = " << bc_in << " given";
        }
    }
    // The paper's rule sizes Q_i, K_j, V_j, O_i to a quarter of M each and leaves out the score
    // tile and the float32 accumulator; when that overflows, halve the rule-chosen blocks until
    // everything fits, and say so.
    int64_t total = 0;
    std::vector<SramBuffer> bufs;
    const bool halved =
        fit_by_halving([&](int64_t r, int64_t cols, int64_t* t) { return buffers_for(p, a, r, cols, t); }, br_in, bc_in,
                       sram, "tiles", "--block-rows/--block-cols", br, bc, bufs, total);
    if (halved)
        note << "; that leaves no room for the fp32 score tile and accumulator, so the blocks were halved to B_r = "
             << br << ", B_c = " << bc;
    note << " (" << group(total) << " of " << group(sram) << " B SRAM)";
    choice.block_rows = br;
    choice.block_cols = bc;
    choice.buffers = std::move(bufs);
    choice.bytes = total;
    choice.note = note.str();
    return choice;
}

BlockChoice choose_backward_blocks(const Problem& p, Algo a, int64_t sram, int64_t fwd_rows, int64_t fwd_cols,
                                   int64_t br_in, int64_t bc_in) {
    if (br_in < 0 || bc_in < 0)
        throw Error("backward block sizes must be positive (--bwd-block-rows, --bwd-block-cols)");
    int64_t br = br_in ? br_in : fwd_rows, bc = bc_in ? bc_in : fwd_cols;
    std::ostringstream note;
    note << "backward: " << (br_in || bc_in ? "requested" : "the forward's") << " B_r x B_c = " << br << " x " << bc;
    int64_t total = 0;
    std::vector<SramBuffer> bufs;
    const bool halved =
        fit_by_halving([&](int64_t r, int64_t cols, int64_t* t) { return backward_buffers_for(p, a, r, cols, t); },
                       br_in, bc_in, sram, "backward tiles", "--bwd-block-rows/--bwd-block-cols", br, bc, bufs, total);
    if (halved) note << "; the backward keeps more in SRAM (dK_j, dV_j, dS_ij), so halved to " << br << " x " << bc;
    note << " (" << group(total) << " of " << group(sram) << " B SRAM)";
    BlockChoice choice;
    choice.block_rows = br;
    choice.block_cols = bc;
    choice.buffers = std::move(bufs);
    choice.bytes = total;
    choice.note = note.str();
    return choice;
}

}  // namespace sim
