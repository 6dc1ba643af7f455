// sim/figure2.hpp — the FlashAttention paper's Figure 2 (left and middle) as a model, beside the
// paper's own figures (issue 12).
//
//   sim::figure2(problem, machine, options) ──► Figure2 { standard (eager PyTorch's kernel sequence),
//                                                  flash (the FA1 CUDA kernel's tiling), the block
//                                                  size sweep of the middle panel, variants }
//
// Two workloads the rest of sim/ does not model:
//   - eager_attention: attention written as PyTorch ops, each op its own kernel that reads its
//     inputs from HBM and writes its output there: by default the paper's authors' own PyTorch
//     baseline (S = scale Q K^T in one batched GEMM, the additive causal mask, softmax, dropout with
//     a bool mask, O = P V), or HuggingFace GPT-2's (a separate scale, the causal `where`), and
//     autograd's backward kernels for each. Bytes are counted op by op from the shapes.
//   - fa1_attention: the loops of FlashAttention-1's CUDA kernel (csrc/flash_attn in
//     Dao-AILab/flash-attention, 2022): one thread block per (batch, head), key blocks of B_c = 256
//     outer, query steps of 16 rows inner, the partial output kept in an fp32 buffer (o_tmp) between
//     key blocks, the backward with dQ in an fp32 buffer (dq_tmp) and S, P recomputed. Walked step by
//     step, counting each step's HBM bytes and work; timed with the kernel model's rates.
// docs/simulator.md, section 3c, has the sources, the assumptions and the comparison.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/kernel_model.hpp"
#include "sim/machine.hpp"
#include "sim/problem.hpp"

namespace sim {

// Bytes one kernel moves for one tensor (all heads).
struct TensorBytes {
    std::string tensor;
    int64_t read = 0, written = 0;
};

struct Fig2Kernel {
    std::string name;
    int pass = 0;  // 0 forward, 1 backward
    std::vector<TensorBytes> tensors;
    double matmul_flops = 0, other_flops = 0, exps = 0;  // all heads
    double seconds = 0;
    std::string bound;  // hbm, tensor, exp, compute (the FA1 steps' arithmetic)
    // The fraction of the HBM rate this kernel moves its bytes at (eager kernels: measured, see
    // EagerRates; 1 when none is known)
    double hbm_fraction = 1;
    int64_t read_bytes() const;
    int64_t written_bytes() const;
    int64_t bytes() const { return read_bytes() + written_bytes(); }
    const TensorBytes* find(const std::string& tensor) const;  // nullptr when the kernel does not touch it
};

struct Fig2Column {
    std::string name;         // "standard (eager PyTorch)" or "FlashAttention (FA1 kernel)"
    std::string description;  // what the model runs, in words
    std::vector<Fig2Kernel> kernels;
    std::vector<std::string> notes;
    int64_t hbm_bytes() const;
    double flops() const;  // matmul + other (exponentials not counted as FLOPs)
    double matmul_flops() const;
    double seconds() const;
};

// How the eager sequence applies the causal mask.
enum class EagerMask {
    none,   // no mask op
    where,  // torch.where(causal_bool, S, min): a forward kernel and a backward one (the gradient
            // zeroed where masked); the bool (1, 1, N, N) buffer read once (L2-resident)
    add,    // S + M with M an N x N tensor of the dtype (0 on and below the diagonal, -10000 above):
            // a forward kernel; the sum passes its gradient to S unchanged, so no backward kernel
};

// Which ops the eager sequence has. Defaults: the FlashAttention authors' own PyTorch baseline
// (`attention_pytorch` in the benchmarks of Dao-AILab/flash-attention): baddbmm with the scale as its
// alpha, the additive causal mask, softmax, dropout, the second product as an einsum.
struct EagerOptions {
    bool separate_scale = false;  // true: S / sqrt(d) as its own kernel (HuggingFace's GPT-2 attention)
    EagerMask mask = EagerMask::add;
    bool dropout = true;  // dropout (output and bool mask; backward reads the mask)
    bool backward = true;
    // PyTorch's CUDA softmax backward is two kernels (since 2018 at least, and in 2.11): the product
    // dP * P as its own elementwise kernel, then the row kernel dS = dPP - P rowsum(dPP). 1: one
    // fused kernel reading dP and P (three N x N passes fewer: the count the paper's 40.3 GB matches)
    int softmax_backward_kernels = 2;
    // Measured: the fraction of the HBM rate each kernel reaches, by kernel name (EagerRates); a
    // kernel not named runs at the rate. Empty: every kernel at the rate.
    std::map<std::string, double> hbm_fraction;
    std::string hbm_fraction_source;
};
// HuggingFace GPT-2's attention (transformers 4.x, GPT2Attention._attn, 2022): matmul, a separate
// division by sqrt(d), the causal `where`, softmax, dropout, matmul.
EagerOptions hf_gpt2_eager();
Fig2Column eager_attention(const Problem& p, const KernelRates& rates, const EagerOptions& o = {});

struct Fa1Options {
    int64_t block_rows = 16;  // the kernel's STEP: query rows a thread block takes at a time
    int64_t block_cols = 0;   // B_c, keys a step sees; 0: the FA1 launcher's rule (fa1_block_cols)
    int accum_bytes = 4;      // bytes of an o_tmp / dq_tmp element: 4 (the kernel's fp32 buffers)
    bool backward = true;
    int fwd_ctas_per_sm = 2;  // thread blocks resident on an SM (estimates; docs/simulator.md, 3c)
    int bwd_ctas_per_sm = 1;
};
// The key block FA1's launcher picks on an sm80 GPU with dropout (fmha_api.cpp): 128 for head
// dimensions above 64, else 256; sequences of at most 128 keys use 128.
int64_t fa1_block_cols(const Problem& p);
Fig2Column fa1_attention(const Problem& p, const Machine& m, const KernelRates& rates, const Fa1Options& o = {});

// The paper's own numbers (Dao et al. 2022, arXiv 2205.14135, Figure 2), stored as the paper's.
struct PaperFigure2 {
    double standard_gflops, flash_gflops;
    double standard_hbm_gb, flash_hbm_gb;
    double standard_ms, flash_ms;
    std::vector<int64_t> middle_block_sizes;  // the middle panel's x axis
    std::string setting;                      // the caption's configuration
    std::string middle_claim;                 // what the text says of the middle panel
    std::string source;
};
const PaperFigure2& paper_figure2();

struct SweepPoint {
    int64_t block_cols = 0;
    int64_t hbm_bytes = 0;
    double seconds = 0;
    std::string bound;
};

// A variant of one column, to show how the comparison moves with one assumption.
struct Fig2Variant {
    std::string label;
    int64_t hbm_bytes = 0;
    double seconds = 0;
};

// Eager kernels as a GPU ran them (scripts/eager_pytorch.py, read by report::read_eager_rates): the
// fraction of an HBM rate each kernel of the sequence moved its bytes at, by the model's kernel name,
// and what the fraction is of (the measuring card's datasheet rate, or its measured copy rate). The
// fractions are carried to the card the model runs on: an assumption the output states.
struct EagerRates {
    std::map<std::string, double> fraction;
    std::string basis;   // "datasheet" or "copy"
    std::string source;  // the files and the card they were measured on
    // The authors' program as measured (its file's totals), to print beside the model: the card, the
    // DRAM bytes ncu counted over the step's kernels, the step's time; 0 / empty when not read.
    std::string device;
    double dram_bytes = 0, step_ms = 0;
    bool empty() const { return fraction.empty(); }
};

struct Figure2 {
    Problem problem;
    std::string machine;
    std::string rates_source;
    EagerRates eager;  // the measured eager rates the standard column ran with (empty: none)
    Fig2Column standard, flash;
    std::vector<SweepPoint> sweep;  // the middle panel: FA1 forward only, B_c = 64..512
    std::vector<Fig2Variant> variants;
};

// The paper's configuration: GPT-2 medium's attention, B 64, H 16, N 1024, d 64, fp16, no mask on
// the flash side (every tile visited; docs say why), on the A100-40GB preset with datasheet rates.
Problem figure2_problem();
Figure2 figure2(const Problem& p, const Machine& m, const KernelRates& rates, const EagerRates& eager = {});

}  // namespace sim
