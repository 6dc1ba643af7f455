// cuda/study.cpp — the GPU numerics study (flashsim bench --study) and the scale checks
// (flashsim bench --scale): many random shapes, and shapes past 2^31 elements and a million
// tokens, each kernel's outputs compared with float64 on the same inputs.
//
// The study's bar, the one the field uses: on every output tensor, a kernel's largest error
// against float64 is at most twice the largest error of a standard implementation in the same
// dtype (our cuBLAS "standard", which stores S and P in that dtype) plus an absolute term: one
// unit in the last place of the dtype at the reference's largest magnitude (the rounding of the
// final store alone can cost that much).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <stdexcept>
#include <thread>

#include "cuda/api.hpp"
#include "cuda/reference64.hpp"
#include "cuda/reference_bwd.hpp"
#include "sim/dtype.hpp"
#include "sim/generator.hpp"
#include "sim/reference.hpp"

namespace fcuda {

namespace {

bool is_prime(int64_t n) {
    if (n < 2) return false;
    for (int64_t k = 2; k * k <= n; ++k)
        if (n % k == 0) return false;
    return true;
}

// The generator's value scaled by amp and rounded to the dtype, as the kernels receive it.
sim::TensorF make_input(const sim::Problem& p, sim::InputTensor which, double amp) {
    sim::TensorF t(p.batch, p.heads, p.seq, p.head_dim);
    for (size_t k = 0; k < t.data.size(); ++k)
        t.data[k] = sim::round_to(p.dtype, static_cast<float>(amp * sim::input_value(p.seed, which, k)));
    return t;
}

std::vector<double> head_of(const sim::TensorF& t, int64_t bh) {
    const int64_t n = t.rows * t.cols;
    return {t.data.begin() + bh * n, t.data.begin() + (bh + 1) * n};
}

}  // namespace

std::vector<StudyShape> study_shapes(int count, uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
    auto pick = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
    std::vector<StudyShape> v;
    for (int k = 0; k < count; ++k) {
        StudyShape s;
        const double kind = uni(0, 1);
        if (kind < 0.15) {
            s.N = pick(1, 63);  // shorter than any kernel's block
        } else if (kind < 0.30) {
            do s.N = pick(2, 20000);
            while (!is_prime(s.N));
        } else {
            s.N = static_cast<int64_t>(std::exp(uni(std::log(16.0), std::log(20000.0))));
        }
        s.N = std::clamp<int64_t>(s.N, 1, 20000);
        s.d = pick(0, 1) ? 128 : 64;
        s.dtype = pick(0, 1) ? sim::DType::bf16 : sim::DType::fp16;
        s.causal = pick(0, 1) == 1;
        s.B = pick(1, 4);
        s.H = pick(1, 8);
        // keep standard's N x N buffers and the reference's work small: B*H*N^2 <= 4e8
        while (s.B * s.H > 1 && double(s.B * s.H) * double(s.N) * double(s.N) > 4e8) (s.H > 1 ? s.H : s.B) /= 2;
        s.score_target = uni(0, 1) < 0.2 ? 30.0 : std::exp(uni(0, std::log(30.0)));
        s.seed = rng();
        v.push_back(s);
    }
    return v;
}

StudyResult study_one(const StudyShape& s, bool check_reference_on_cpu) {
    sim::Problem p;
    p.batch = s.B;
    p.heads = s.H;
    p.seq = s.N;
    p.head_dim = s.d;
    p.dtype = s.dtype;
    p.causal = s.causal;
    p.seed = s.seed;
    p.validate();
    StudyResult r;
    r.shape = s;
    // Uniform [-a, a) entries give scores of standard deviation a^2/3 (with scale 1/sqrt(d)); the
    // largest of many is about 4.5 of those, so a^2 = score_target / 1.5.
    const double amp = std::sqrt(s.score_target / 1.5);
    const sim::TensorF Q = make_input(p, sim::InputTensor::Q, amp), K = make_input(p, sim::InputTensor::K, amp),
                       V = make_input(p, sim::InputTensor::V, 1.0), dO = make_input(p, sim::InputTensor::dO, 1.0);

    // float64 reference on the GPU, head by head, every row
    const auto t0 = std::chrono::steady_clock::now();
    sim::TensorD O(p.batch, p.heads, p.seq, p.head_dim), dQ = O, dK = O, dV = O;
    std::vector<int64_t> all(static_cast<size_t>(p.seq));
    for (int64_t i = 0; i < p.seq; ++i) all[static_cast<size_t>(i)] = i;
    for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
        HeadInputs64 in;
        in.N = p.seq;
        in.d = s.d;
        in.scale = p.softmax_scale();
        in.causal = s.causal;
        in.Q = head_of(Q, bh);
        in.K = head_of(K, bh);
        in.V = head_of(V, bh);
        in.dO = head_of(dO, bh);
        const Reference64 ref = reference64_head(in, all, all);
        const auto off = static_cast<std::ptrdiff_t>(bh * p.seq * s.d);
        std::copy(ref.O.begin(), ref.O.end(), O.data.begin() + off);
        std::copy(ref.dQ.begin(), ref.dQ.end(), dQ.data.begin() + off);
        std::copy(ref.dK.begin(), ref.dK.end(), dK.data.begin() + off);
        std::copy(ref.dV.begin(), ref.dV.end(), dV.data.begin() + off);
        for (double l : ref.LSE) r.lse_max = std::max(r.lse_max, l);
    }
    r.reference_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (check_reference_on_cpu) {  // the GPU's float64 against the CPU's, same inputs
        const sim::TensorD o = sim::attention_reference(p, Q, K, V);
        const GradsD g = fcuda::attention_backward_reference(p, Q, K, V, dO);
        double worst = 0;
        auto cmp = [&](const sim::TensorD& a, const sim::TensorD& b) {
            const double scale = std::max(1e-300, max_abs_of(b));
            for (size_t k = 0; k < a.data.size(); ++k) worst = std::max(worst, std::abs(a.data[k] - b.data[k]) / scale);
        };
        cmp(O, o);
        cmp(dQ, g.dQ);
        cmp(dK, g.dK);
        cmp(dV, g.dV);
        r.gpu_vs_cpu_reference = worst;
    }

    // the kernels
    struct Got {
        std::string variant;
        Pass pass;
        std::vector<std::pair<std::string, sim::ErrorStats>> errs;
    };
    std::vector<Got> got;
    const std::vector<std::pair<std::string, const sim::TensorD*>> fwd_want{{"O", &O}};
    const std::vector<std::pair<std::string, const sim::TensorD*>> bwd_want{{"dQ", &dQ}, {"dK", &dK}, {"dV", &dV}};
    for (const std::string v : {"standard", "flash1", "flash2", "flash2h"}) {
        if (!variant_available(v)) continue;
        const bool bwd = supports(v, Pass::backward);
        const Outputs out = compute(p, v, bwd ? Pass::backward : Pass::forward, Q, K, V, bwd ? &dO : nullptr);
        Got f{v, Pass::forward, {}};
        f.errs.emplace_back("O", sim::validate(out.O, O, p.dtype));
        got.push_back(f);
        if (bwd) {
            Got b{v, Pass::backward, {}};
            b.errs.emplace_back("dQ", sim::validate(out.dQ, dQ, p.dtype));
            b.errs.emplace_back("dK", sim::validate(out.dK, dK, p.dtype));
            b.errs.emplace_back("dV", sim::validate(out.dV, dV, p.dtype));
            got.push_back(b);
        }
    }
    auto standard_err = [&](Pass pass, const std::string& tensor) -> const sim::ErrorStats* {
        for (const auto& g : got)
            if (g.variant == "standard" && g.pass == pass)
                for (const auto& [name, e] : g.errs)
                    if (name == tensor) return &e;
        return nullptr;
    };
    auto want_of = [&](const std::string& tensor) {
        return tensor == "O" ? &O : tensor == "dQ" ? &dQ : tensor == "dK" ? &dK : &dV;
    };
    for (const auto& g : got)
        for (const auto& [name, e] : g.errs) {
            StudyEntry en;
            en.variant = g.variant;
            en.pass = g.pass;
            en.tensor = name;
            en.err = e.max_abs;
            en.max_ulp = e.max_ulp;
            en.identical = e.identical;
            en.count = e.count;
            en.nonfinite = e.nonfinite;
            en.where = e.where;
            const sim::ErrorStats* st = standard_err(g.pass, name);
            en.err_standard = st ? st->max_abs : NAN;
            en.ref_max = max_abs_of(*want_of(name));
            en.atol = ulp_at(p.dtype, en.ref_max);
            en.bound = 2 * en.err_standard + en.atol;
            en.ok = e.nonfinite == 0 && std::isfinite(en.bound) && en.err <= en.bound;
            r.entries.push_back(en);
        }
    return r;
}

// ---- scale ---------------------------------------------------------------------------------------

namespace {
// One head's generator inputs in double (the values the device generator stores, rounded).
std::vector<double> gen_head(const sim::Problem& p, sim::InputTensor which, int64_t bh) {
    const int64_t n = p.seq * p.head_dim;
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
        v[static_cast<size_t>(k)] =
            sim::round_to(p.dtype, sim::input_value(p.seed, which, static_cast<uint64_t>(bh * n + k)));
    return v;
}
}  // namespace

ScaleCheck scale_check(const sim::Problem& p, const std::string& variant, Pass pass,
                       const std::vector<std::pair<int64_t, int64_t>>& heads_rows, int64_t key_tail) {
    ScaleCheck c;
    c.variant = variant;
    c.pass = pass;
    c.elements_per_tensor = p.heads_total() * p.seq * p.head_dim;
    const bool bwd = pass != Pass::forward;
    // rows to sample: the listed (head, row) pairs as queries; for a backward also key rows, the
    // last `key_tail` rows of each listed head when causal (only they are cheap to check exactly
    // at a million tokens), else the listed rows
    std::vector<int64_t> flat;
    std::vector<int64_t> heads;
    for (const auto& [bh, row] : heads_rows) {
        flat.push_back(bh * p.seq + row);
        if (std::find(heads.begin(), heads.end(), bh) == heads.end()) heads.push_back(bh);
    }
    std::vector<std::pair<int64_t, int64_t>> key_rows;  // (bh, row)
    if (bwd) {
        for (int64_t bh : heads) {
            if (p.causal && key_tail > 0) {
                for (int64_t j = std::max<int64_t>(0, p.seq - key_tail); j < p.seq; ++j) key_rows.emplace_back(bh, j);
            } else {
                for (const auto& hr : heads_rows)
                    if (hr.first == bh) key_rows.push_back(hr);
            }
        }
        for (const auto& [bh, j] : key_rows) flat.push_back(bh * p.seq + j);
    }
    std::sort(flat.begin(), flat.end());
    flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
    const auto t0 = std::chrono::steady_clock::now();
    const SampledRows got = compute_rows(p, variant, pass, flat);
    c.gpu_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    c.nonfinite = got.nonfinite;
    auto index_of = [&](int64_t bh, int64_t row) {
        return static_cast<size_t>(std::lower_bound(flat.begin(), flat.end(), bh * p.seq + row) - flat.begin());
    };
    const int64_t d = p.head_dim;
    auto compare = [&](const std::vector<float>& kernel, size_t at, const double* want, const char* tensor) {
        for (int64_t k = 0; k < d; ++k) {
            const double e = std::abs(double(kernel[at * d + static_cast<size_t>(k)]) - want[k]);
            double& worst = std::string(tensor) == "O"    ? c.err_O
                            : std::string(tensor) == "dQ" ? c.err_dQ
                            : std::string(tensor) == "dK" ? c.err_dK
                                                          : c.err_dV;
            worst = std::max(worst, e);
            c.ref_max = std::max(c.ref_max, std::abs(want[k]));
        }
        ++c.rows_checked;
    };
    for (int64_t bh : heads) {
        HeadInputs64 in;
        in.N = p.seq;
        in.d = static_cast<int>(d);
        in.scale = p.softmax_scale();
        in.causal = p.causal;
        in.Q = gen_head(p, sim::InputTensor::Q, bh);
        in.K = gen_head(p, sim::InputTensor::K, bh);
        in.V = gen_head(p, sim::InputTensor::V, bh);
        if (bwd) in.dO = gen_head(p, sim::InputTensor::dO, bh);
        std::vector<int64_t> q, k;
        for (const auto& [h, row] : heads_rows)
            if (h == bh) q.push_back(row);
        for (const auto& [h, row] : key_rows)
            if (h == bh) k.push_back(row);
        const Reference64 ref = reference64_head(in, q, k);
        for (size_t a = 0; a < q.size(); ++a) {
            const size_t at = index_of(bh, q[a]);
            compare(got.O, at, ref.O.data() + a * static_cast<size_t>(d), "O");
            if (!got.LSE.empty()) c.err_LSE = std::max(c.err_LSE, std::abs(double(got.LSE[at]) - ref.LSE[a]));
            if (bwd) compare(got.dQ, at, ref.dQ.data() + a * static_cast<size_t>(d), "dQ");
        }
        for (size_t a = 0; a < k.size(); ++a) {
            const size_t at = index_of(bh, k[a]);
            compare(got.dK, at, ref.dK.data() + a * static_cast<size_t>(d), "dK");
            compare(got.dV, at, ref.dV.data() + a * static_cast<size_t>(d), "dV");
        }
    }
    c.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - c.gpu_seconds;
    return c;
}

}  // namespace fcuda
