#include "sim/reference.hpp"

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "sim/mask.hpp"

namespace sim {

namespace {
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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
}

// Scaled, masked scores of one head, float64; masked entries are -inf.
MatD scores(const Problem& p, const MatD& q, const MatD& k) {
    MatD s = (q * k.transpose()) * p.softmax_scale();
    if (p.causal || p.window > 0 || p.pad_left > 0)
        for (int64_t n = 0; n < p.seq; ++n)
            for (int64_t j = 0; j < p.seq; ++j)
                if (!key_visible(p, n, j)) s(n, j) = -std::numeric_limits<double>::infinity();
    return s;
}
}  // namespace

TensorD attention_reference(const Problem& p, const TensorF& Q, const TensorF& K, const TensorF& V) {
    check_shapes(p, Q, K, &V);
    TensorD out(p.batch, p.heads, p.seq, p.head_dim);
    for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
        const MatD s = scores(p, head_matrix(Q, bh), head_matrix(K, bh));
        MatD prob(p.seq, p.seq);
        for (int64_t n = 0; n < p.seq; ++n) {
            const double m = s.row(n).maxCoeff();
            if (!std::isfinite(m)) {  // no visible key: output 0
                prob.row(n).setZero();
                continue;
            }
            prob.row(n) = (s.row(n).array() == -std::numeric_limits<double>::infinity())
                              .select(0.0, (s.row(n).array() - m).exp())
                              .matrix();
            prob.row(n) /= prob.row(n).sum();
        }
        const MatD o = prob * head_matrix(V, bh);
        for (int64_t i = 0; i < p.seq * p.head_dim; ++i) out.head(bh)[i] = o.data()[i];
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
        const MatD s = scores(p, q, k);
        MatD prob(p.seq, p.seq);
        for (int64_t n = 0; n < p.seq; ++n) {
            const double m = s.row(n).maxCoeff();
            if (!std::isfinite(m)) {
                prob.row(n).setZero();
                continue;
            }
            prob.row(n) = (s.row(n).array() == -std::numeric_limits<double>::infinity())
                              .select(0.0, (s.row(n).array() - m).exp())
                              .matrix();
            prob.row(n) /= prob.row(n).sum();
        }
        const MatD dv = prob.transpose() * dout;                                // dV = P^T dO
        const MatD dp = dout * v.transpose();                                   // dP = dO V^T
        const Eigen::VectorXd D = (prob.array() * dp.array()).rowwise().sum();  // D_n = sum_k P_nk dP_nk
        const MatD ds = (prob.array() * (dp.colwise() - D).array()).matrix();   // dS = P o (dP - D)
        const MatD dq = scale * ds * k, dk = scale * ds.transpose() * q;
        for (int64_t i = 0; i < p.seq * p.head_dim; ++i) {
            g.dQ.head(bh)[i] = dq.data()[i];
            g.dK.head(bh)[i] = dk.data()[i];
            g.dV.head(bh)[i] = dv.data()[i];
        }
    }
    return g;
}

std::vector<double> lse_reference(const Problem& p, const TensorF& Q, const TensorF& K) {
    check_shapes(p, Q, K, nullptr);
    std::vector<double> lse(static_cast<size_t>(p.heads_total() * p.seq));
    for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
        const MatD s = scores(p, head_matrix(Q, bh), head_matrix(K, bh));
        for (int64_t n = 0; n < p.seq; ++n) {
            const double m = s.row(n).maxCoeff();
            lse[static_cast<size_t>(bh * p.seq + n)] = std::isfinite(m)
                                                           ? m + std::log((s.row(n).array() - m).exp().sum())
                                                           : -std::numeric_limits<double>::infinity();
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
