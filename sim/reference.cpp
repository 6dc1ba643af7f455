#include "sim/reference.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/mask.hpp"

namespace sim {

namespace {
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapD = Eigen::Map<MatD>;  // a head of a TensorD (row-major N x d), written in place

MatD head_matrix(const TensorF& t, int64_t bh) {
    MatD m(t.rows, t.cols);
    const float* src = t.head(bh);
    for (int64_t i = 0; i < t.rows * t.cols; ++i) m.data()[i] = src[i];
    return m;
}

void check_shapes(const Problem& p, const TensorF& Q, const TensorF& K, const TensorF* V) {
    auto same = [&](const TensorF& t) {
        return t.batch == p.batch && t.heads == p.heads && t.rows == p.seq && t.cols == p.head_dim;
    };
    if (!same(Q) || !same(K) || (V && !same(*V)))
        throw Error("reference: Q, K, V must all have shape (B, H, N, d) of the problem");
    p.require_mask_blocks();
}

// Rows of one head's float64 work at a time: the reference never holds an N x N matrix, only this
// many rows of it (256 x N doubles, 32 MiB at N = 16,384), so long checks stay in memory and cache.
constexpr int64_t kRefRows = 256;

// Scaled, masked scores of query rows [r0, r0 + rows) of one head into s (resized, reused between
// calls so that no N-wide buffer is allocated again), float64; masked entries are -inf.
void scores(const Problem& p, const MatD& q, const MatD& k, int64_t r0, int64_t rows, MatD& s) {
    s.resize(rows, p.seq);
    s.noalias() = q.middleRows(r0, rows) * k.transpose();
    s *= p.softmax_scale();
    if (p.causal || p.window > 0 || p.pad_left > 0 || p.block_sparse())
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < p.seq; ++j)
                if (!key_visible(p, r0 + r, j)) s(r, j) = -std::numeric_limits<double>::infinity();
}

// Softmax of each row of s in place (a row with no visible key becomes all 0).
void softmax_rows(MatD& s) {
    constexpr double kNegInf = -std::numeric_limits<double>::infinity();
    for (int64_t n = 0; n < s.rows(); ++n) {
        const double m = s.row(n).maxCoeff();
        if (!std::isfinite(m)) {
            s.row(n).setZero();
            continue;
        }
        s.row(n) = (s.row(n).array() == kNegInf).select(0.0, (s.row(n).array() - m).exp()).matrix();
        s.row(n) /= s.row(n).sum();
    }
}
}  // namespace

TensorD attention_reference(const Problem& p, const TensorF& Q, const TensorF& K, const TensorF& V) {
    check_shapes(p, Q, K, &V);
    TensorD out(p.batch, p.heads, p.seq, p.head_dim);
    for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
        const MatD q = head_matrix(Q, bh), k = head_matrix(K, bh), v = head_matrix(V, bh);
        MapD o(out.head(bh), p.seq, p.head_dim);
        MatD prob;
        for (int64_t r0 = 0; r0 < p.seq; r0 += kRefRows) {
            const int64_t rows = std::min(kRefRows, p.seq - r0);
            scores(p, q, k, r0, rows, prob);
            softmax_rows(prob);
            o.middleRows(r0, rows).noalias() = prob * v;
        }
    }
    return out;
}

Gradients attention_backward_reference(const Problem& p, const TensorF& Q, const TensorF& K, const TensorF& V,
                                       const TensorF& dO) {
    check_shapes(p, Q, K, &V);
    check_shapes(p, dO, dO, nullptr);
    Gradients g{TensorD(p.batch, p.heads, p.seq, p.head_dim), TensorD(p.batch, p.heads, p.seq, p.head_dim),
                TensorD(p.batch, p.heads, p.seq, p.head_dim)};
    const double scale = p.softmax_scale();
    for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
        const MatD q = head_matrix(Q, bh), k = head_matrix(K, bh), v = head_matrix(V, bh), dout = head_matrix(dO, bh);
        MapD dq(g.dQ.head(bh), p.seq, p.head_dim), dk(g.dK.head(bh), p.seq, p.head_dim),
            dv(g.dV.head(bh), p.seq, p.head_dim);  // dK, dV accumulate over the row blocks from 0
        MatD prob, dp;
        Eigen::VectorXd D;
        for (int64_t r0 = 0; r0 < p.seq; r0 += kRefRows) {
            const int64_t rows = std::min(kRefRows, p.seq - r0);
            scores(p, q, k, r0, rows, prob);
            softmax_rows(prob);
            const auto dout_r = dout.middleRows(r0, rows);
            dv.noalias() += prob.transpose() * dout_r;  // dV = P^T dO
            dp.resize(rows, p.seq);
            dp.noalias() = dout_r * v.transpose();                            // dP = dO V^T
            D = (prob.array() * dp.array()).rowwise().sum();                  // D_n = sum_k P_nk dP_nk
            dp.array() = prob.array() * (dp.colwise() - D).array();           // now dS = P o (dP - D)
            dq.middleRows(r0, rows).noalias() = scale * dp * k;               // dQ = scale dS K
            dk.noalias() += scale * dp.transpose() * q.middleRows(r0, rows);  // dK = scale dS^T Q
        }
    }
    return g;
}

std::vector<double> lse_reference(const Problem& p, const TensorF& Q, const TensorF& K) {
    check_shapes(p, Q, K, nullptr);
    std::vector<double> lse(static_cast<size_t>(p.heads_total() * p.seq));
    for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
        const MatD q = head_matrix(Q, bh), k = head_matrix(K, bh);
        MatD s;
        for (int64_t r0 = 0; r0 < p.seq; r0 += kRefRows) {
            const int64_t rows = std::min(kRefRows, p.seq - r0);
            scores(p, q, k, r0, rows, s);
            for (int64_t r = 0; r < rows; ++r) {
                const double m = s.row(r).maxCoeff();
                lse[static_cast<size_t>(bh * p.seq + r0 + r)] = std::isfinite(m)
                                                                    ? m + std::log((s.row(r).array() - m).exp().sum())
                                                                    : -std::numeric_limits<double>::infinity();
            }
        }
    }
    return lse;
}

ErrorStats validate(const float* actual, const double* expected, int64_t count, int64_t rows, int64_t cols,
                    DType dtype) {
    ErrorStats st;
    st.count = count;
    double diff2 = 0, ref2 = 0;
    int64_t worst = -1, first_nonfinite = -1;
    for (int64_t i = 0; i < count; ++i) {
        const float a = actual[i];
        const double e = expected[i];
        if (!std::isfinite(a)) {
            if (first_nonfinite < 0) first_nonfinite = i;
            ++st.nonfinite;
            continue;
        }
        const double d = std::abs(static_cast<double>(a) - e);
        diff2 += d * d;
        ref2 += e * e;
        if (d > st.max_abs) {
            st.max_abs = d;
            worst = i;
        }
        const int64_t u = ulp_distance(dtype, a, static_cast<float>(e));
        if (u > st.max_ulp) st.max_ulp = u;
        if (u == 0) ++st.identical;
    }
    st.first_bad = first_nonfinite >= 0 ? first_nonfinite : worst;
    st.rel_frobenius = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    if (st.nonfinite > 0) {
        st.max_abs = std::numeric_limits<double>::infinity();
        st.max_ulp = std::numeric_limits<int64_t>::max();
    }
    if (st.first_bad >= 0 && rows > 0 && cols > 0) {
        const int64_t per_head = rows * cols;
        st.where = "(bh=" + std::to_string(st.first_bad / per_head) +
                   ", n=" + std::to_string((st.first_bad % per_head) / cols) +
                   ", k=" + std::to_string(st.first_bad % cols) + ")";
    }
    return st;
}

ErrorStats validate(const TensorF& actual, const TensorD& expected, DType dtype) {
    if (actual.size() != expected.size()) throw Error("validate: tensors differ in size");
    return validate(actual.data.data(), expected.data.data(), actual.size(), actual.rows, actual.cols, dtype);
}

ErrorStats validate(const TensorF& actual, const TensorF& expected, DType dtype) {
    if (actual.size() != expected.size()) throw Error("validate: tensors differ in size");
    std::vector<double> e(expected.data.begin(), expected.data.end());
    return validate(actual.data.data(), e.data(), actual.size(), actual.rows, actual.cols, dtype);
}

}  // namespace sim
