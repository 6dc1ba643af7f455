#include "sim/fp8_attention.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>

#include "sim/generator.hpp"
#include "sim/problem.hpp"

namespace sim {

namespace {
using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr float kPScale = 256.0f;  // P x 2^8 before its conversion to e4m3 (header, step 4)

// A uniform on (0, 1] and one on [0, 1) from one 64-bit hash: 24 bits each.
double gaussian(uint64_t seed, InputTensor t, uint64_t index) {
    const uint64_t h = mix64(mix64(seed ^ (0x5851f42d4c957f2dULL * static_cast<uint64_t>(t))) ^ index);
    const double u1 = static_cast<double>((h >> 40) + 1) * 0x1p-24;
    const double u2 = static_cast<double>((h >> 16) & 0xffffffu) * 0x1p-24;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

// Scales for groups of `rows` consecutive rows (rows = all: one for the tensor): amax / 448, 1 for a
// group of zeros.
std::vector<float> scales_of(const MatF& X, int64_t rows) {
    std::vector<float> s;
    for (int64_t r0 = 0; r0 < X.rows(); r0 += rows) {
        const int64_t r = std::min<int64_t>(rows, X.rows() - r0);
        const float amax = X.middleRows(r0, r).cwiseAbs().maxCoeff();
        s.push_back(amax > 0 ? amax / kE4m3Max : 1.0f);
    }
    return s;
}

// X in storage: e4m3(x / s) for fp8 (the scale of the row's group), plain rounding otherwise.
MatF quantize(const MatF& X, DType t, const std::vector<float>& s, int64_t rows) {
    MatF q(X.rows(), X.cols());
    for (int64_t r = 0; r < X.rows(); ++r) {
        const float sc = t == DType::fp8 ? s[static_cast<size_t>(r / rows)] : 1.0f;
        for (int64_t c = 0; c < X.cols(); ++c) q(r, c) = round_to(t, X(r, c) / sc);
    }
    return q;
}

struct Quantized {
    MatF Q, K, V;
    std::vector<float> sq, sk, sv;
    int64_t q_rows = 1, kv_rows = 1;  // rows a scale covers
};

Quantized quantize_inputs(const Fp8Inputs& in, DType t, const Fp8Options& o) {
    Eigen::MatrixXd Q = in.Q, K = in.K;
    if (t == DType::fp8 && o.incoherent) {
        const Eigen::MatrixXd M = hadamard_rotation(o.head_dim, o.seed);
        Q = in.Q * M;
        K = in.K * M;
    }
    Quantized z;
    const int64_t n = in.Q.rows();
    const bool block = o.scales == Fp8Scales::block;
    z.q_rows = block ? o.block_rows : n;
    z.kv_rows = block ? o.block_cols : n;
    const MatF Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = in.V.cast<float>();
    z.sq = scales_of(Qf, z.q_rows);
    z.sk = scales_of(Kf, z.kv_rows);
    z.sv = scales_of(Vf, z.kv_rows);
    z.Q = quantize(Qf, t, z.sq, z.q_rows);
    z.K = quantize(Kf, t, z.sk, z.kv_rows);
    z.V = quantize(Vf, t, z.sv, z.kv_rows);
    return z;
}

// One query block i against every key block: the online softmax in float32 (header, steps 2-5).
void forward_block(const Quantized& z, DType t, int64_t r0, int64_t r, int64_t bc, float scale, MatF& O) {
    const int64_t n = z.K.rows(), d = z.Q.cols();
    const bool fp8 = t == DType::fp8;
    const float sq = fp8 ? z.sq[static_cast<size_t>(r0 / z.q_rows)] : 1.0f;
    const float p_scale = fp8 ? kPScale : 1.0f;
    Eigen::VectorXf m = Eigen::VectorXf::Constant(r, -std::numeric_limits<float>::infinity());
    Eigen::VectorXf l = Eigen::VectorXf::Zero(r);
    MatF acc = MatF::Zero(r, d);
    for (int64_t c0 = 0; c0 < n; c0 += bc) {
        const int64_t c = std::min(bc, n - c0);
        const float sk = fp8 ? z.sk[static_cast<size_t>(c0 / z.kv_rows)] : 1.0f;
        const float sv = fp8 ? z.sv[static_cast<size_t>(c0 / z.kv_rows)] : 1.0f;
        MatF S = z.Q.middleRows(r0, r) * z.K.middleRows(c0, c).transpose();  // (B_r, B_c), float32 sums
        S *= sq * sk * scale;
        MatF P(r, c);
        for (int64_t a = 0; a < r; ++a) {
            const float m_new = std::max(m(a), S.row(a).maxCoeff());
            const float alpha = std::exp(m(a) - m_new);
            float sum = 0;
            for (int64_t b = 0; b < c; ++b) {
                const float p = std::exp(S(a, b) - m_new);
                sum += p;
                P(a, b) = round_to(t, p * p_scale);
            }
            l(a) = l(a) * alpha + sum;
            m(a) = m_new;
            acc.row(a) *= alpha;
        }
        const MatF PV = P * z.V.middleRows(c0, c);  // (B_r, d), float32 sums
        acc += PV * (sv / p_scale);
    }
    const DType out = t == DType::fp16 ? DType::fp16 : DType::bf16;
    for (int64_t a = 0; a < r; ++a)
        for (int64_t k = 0; k < d; ++k) O(r0 + a, k) = round_to(out, acc(a, k) / l(a));
}
}  // namespace

void Fp8Options::validate() const {
    if (seq <= 0)
        throw Error("sequence length N must be a positive integer, got " + std::to_string(seq) + " (set it with -n)");
    if (head_dim <= 0)
        throw Error("head dimension d must be a positive integer, got " + std::to_string(head_dim) +
                    " (set it with -d)");
    if (double(seq) * double(seq) * double(head_dim) > double(int64_t{1} << 34))
        throw Error("N^2 d = " + std::to_string(seq) + "^2 x " + std::to_string(head_dim) +
                    " would take minutes on the CPU (the float64 reference and two emulated forwards); keep N^2 d "
                    "at most 2^34, e.g. N = 8192 at d = 256 or N = 16384 at d = 64");
    if (incoherent && !std::has_single_bit(static_cast<uint64_t>(head_dim)))
        throw Error("--incoherent needs d a power of two (a Hadamard matrix of order d); d = " +
                    std::to_string(head_dim) + " is not: use d = 64, 128 or 256");
    if (block_rows <= 0 || block_cols <= 0) throw Error("the tiles B_r and B_c must be positive");
    if (outliers < 0 || outliers > head_dim)
        throw Error("--outliers is a number of channels of Q and K, from 0 to d = " + std::to_string(head_dim) +
                    "; got " + std::to_string(outliers));
    if (!(outlier_scale > 0) || !std::isfinite(outlier_scale) || outlier_scale > 1e3)
        throw Error(
            "--outlier-scale must be a positive factor up to 1,000 (real models' outlier channels are about "
            "10-100x the others)");
}

Fp8Inputs fp8_inputs(const Fp8Options& o) {
    o.validate();
    const int64_t n = o.seq, d = o.head_dim;
    Fp8Inputs in{Eigen::MatrixXd(n, d), Eigen::MatrixXd(n, d), Eigen::MatrixXd(n, d), {}};
    for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < d; ++c) {
            const uint64_t i = static_cast<uint64_t>(r * d + c);
            in.Q(r, c) = gaussian(o.seed, InputTensor::Q, i);
            in.K(r, c) = gaussian(o.seed, InputTensor::K, i);
            in.V(r, c) = gaussian(o.seed, InputTensor::V, i);
        }
    // The outlier channels: the first `outliers` of a seeded shuffle of 0..d-1 (Fisher-Yates on the hash)
    std::vector<int64_t> ch(static_cast<size_t>(d));
    for (int64_t c = 0; c < d; ++c) ch[static_cast<size_t>(c)] = c;
    for (int64_t c = d - 1; c > 0; --c)
        std::swap(ch[static_cast<size_t>(c)],
                  ch[static_cast<size_t>(mix64(o.seed ^ 0x0ddc0ffeeULL ^ static_cast<uint64_t>(c)) %
                                         static_cast<uint64_t>(c + 1))]);
    in.outlier_channels.assign(ch.begin(), ch.begin() + o.outliers);
    std::sort(in.outlier_channels.begin(), in.outlier_channels.end());
    for (const int64_t c : in.outlier_channels) {
        in.Q.col(c) = (in.Q.col(c) * o.outlier_scale).cast<float>().cast<double>();
        in.K.col(c) = (in.K.col(c) * o.outlier_scale).cast<float>().cast<double>();
    }
    return in;
}

Eigen::MatrixXd hadamard_rotation(int64_t d, uint64_t seed) {
    if (d <= 0 || !std::has_single_bit(static_cast<uint64_t>(d)))
        throw Error("a Hadamard matrix needs d a power of two; d = " + std::to_string(d) + " is not");
    // Sylvester: H_1 = [1], H_2k = [[H, H], [H, -H]]; entry (a, b) = (-1)^popcount(a & b)
    Eigen::MatrixXd M(d, d);
    const double inv = 1.0 / std::sqrt(static_cast<double>(d));
    for (int64_t a = 0; a < d; ++a) {
        const double sign = (mix64(seed ^ 0x4ad4ad4adULL ^ static_cast<uint64_t>(a)) >> 63) ? -1.0 : 1.0;
        for (int64_t b = 0; b < d; ++b)
            M(a, b) = sign * ((std::popcount(static_cast<uint64_t>(a & b)) & 1) ? -inv : inv);
    }
    return M;  // D H / sqrt(d): row a of H times sign a
}

Eigen::MatrixXd attention_reference64(const Eigen::MatrixXd& Q, const Eigen::MatrixXd& K, const Eigen::MatrixXd& V) {
    Eigen::MatrixXd S = (Q * K.transpose()) / std::sqrt(static_cast<double>(Q.cols()));
    for (int64_t a = 0; a < S.rows(); ++a) {
        const double mx = S.row(a).maxCoeff();
        S.row(a) = (S.row(a).array() - mx).exp().matrix();
        S.row(a) /= S.row(a).sum();
    }
    return S * V;
}

Eigen::MatrixXd lowp_forward(const Fp8Inputs& in, DType storage, const Fp8Options& o) {
    o.validate();
    if (storage == DType::fp32) throw Error("the low-precision forward stores fp8, bf16 or fp16, not fp32");
    const Quantized z = quantize_inputs(in, storage, o);
    const int64_t n = in.Q.rows(), d = in.Q.cols();
    MatF O(n, d);
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
    for (int64_t r0 = 0; r0 < n; r0 += o.block_rows)
        forward_block(z, storage, r0, std::min(o.block_rows, n - r0), o.block_cols, scale, O);
    return O.cast<double>();
}

Fp8Error fp8_error(const Eigen::MatrixXd& O, const Eigen::MatrixXd& ref) {
    const Eigen::MatrixXd diff = O - ref;
    Fp8Error e;
    const double count = static_cast<double>(std::max<Eigen::Index>(1, diff.size()));
    e.max_abs = diff.cwiseAbs().maxCoeff();
    e.rms = std::sqrt(diff.squaredNorm() / count);
    const double ref_rms = std::sqrt(ref.squaredNorm() / count);
    e.rel_rms = ref_rms > 0 ? e.rms / ref_rms : 0;
    return e;
}

Fp8Study fp8_study(const Fp8Options& o) {
    const Fp8Inputs in = fp8_inputs(o);
    Fp8Study st;
    st.options = o;
    st.outlier_channels = in.outlier_channels;
    Eigen::MatrixXd Q = in.Q, K = in.K;
    if (o.incoherent) {
        const Eigen::MatrixXd M = hadamard_rotation(o.head_dim, o.seed);
        Q = in.Q * M;
        K = in.K * M;
    }
    st.amax_q = Q.cwiseAbs().maxCoeff();
    st.amax_k = K.cwiseAbs().maxCoeff();
    st.amax_v = in.V.cwiseAbs().maxCoeff();
    const Eigen::MatrixXd ref = attention_reference64(in.Q, in.K, in.V);
    st.fp8 = fp8_error(lowp_forward(in, DType::fp8, o), ref);
    st.bf16 = fp8_error(lowp_forward(in, DType::bf16, o), ref);
    return st;
}

}  // namespace sim
