// sim/gradient_walk.cpp — see gradient_walk.hpp. Plain loops over std::vector<double>: the point is
// a computation a reader can follow line by line against the formulas, at sizes where speed is moot.
#include "sim/gradient_walk.hpp"

#include <algorithm>
#include <cmath>

namespace sim {

namespace {

struct Head {
    int64_t n = 0, d = 0;
    double scale = 0;
    std::vector<double> Q, K, V, dO;  // N x d each
};

std::vector<double> to_double(const TensorF& t, int64_t count) {
    return std::vector<double>(t.data.begin(), t.data.begin() + count);
}

// P = softmax(scale Q K^T), row by row with the row's maximum subtracted.
std::vector<double> softmax_of_scores(const Head& h) {
    std::vector<double> P(static_cast<size_t>(h.n * h.n));
    for (int64_t i = 0; i < h.n; ++i) {
        double m = -INFINITY;
        for (int64_t j = 0; j < h.n; ++j) {
            double s = 0;
            for (int64_t k = 0; k < h.d; ++k) s += h.Q[i * h.d + k] * h.K[j * h.d + k];
            P[i * h.n + j] = h.scale * s;
            m = std::max(m, P[i * h.n + j]);
        }
        double l = 0;
        for (int64_t j = 0; j < h.n; ++j) l += (P[i * h.n + j] = std::exp(P[i * h.n + j] - m));
        for (int64_t j = 0; j < h.n; ++j) P[i * h.n + j] /= l;
    }
    return P;
}

// C (rows x cols) = A B, with A rows x inner and B inner x cols, either transposed as asked.
std::vector<double> product(const std::vector<double>& A, bool at, const std::vector<double>& B, bool bt, int64_t rows,
                            int64_t inner, int64_t cols) {
    std::vector<double> C(static_cast<size_t>(rows * cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            double s = 0;
            for (int64_t k = 0; k < inner; ++k)
                s += (at ? A[k * rows + r] : A[r * inner + k]) * (bt ? B[c * inner + k] : B[k * cols + c]);
            C[r * cols + c] = s;
        }
    return C;
}

// The loss L = sum(O o dO) with O = softmax(scale Q K^T) V.
double loss(const Head& h) {
    const std::vector<double> O = product(softmax_of_scores(h), false, h.V, false, h.n, h.n, h.d);
    double L = 0;
    for (size_t i = 0; i < O.size(); ++i) L += O[i] * h.dO[i];
    return L;
}

// Central differences of L for every entry of one input.
std::vector<double> finite_differences(Head h, std::vector<double> Head::*input, double step) {
    std::vector<double>& x = h.*input;
    std::vector<double> g(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + step;
        const double up = loss(h);
        x[i] = keep - step;
        const double down = loss(h);
        x[i] = keep;
        g[i] = (up - down) / (2 * step);
    }
    return g;
}

}  // namespace

GradientWalk gradient_walk(const Problem& p, double step) {
    p.validate();
    if (p.seq * p.seq * p.head_dim > (int64_t{1} << 16))
        throw Error("the gradient walk is for problems a reader can follow: N x N x d at most 65,536 (got N = " +
                    std::to_string(p.seq) + ", d = " + std::to_string(p.head_dim) + "); use a smaller seq or head_dim");
    if (p.causal || p.window > 0 || p.pad_left > 0)
        throw Error("the gradient walk covers unmasked attention only; drop causal, window and padding");
    if (!(step > 0) || !std::isfinite(step)) throw Error("the finite-difference step must be a positive number");
    Head h;
    h.n = p.seq;
    h.d = p.head_dim;
    h.scale = p.softmax_scale();
    const int64_t count = h.n * h.d;  // head 0 of batch 0 comes first in (B, H, N, d)
    h.Q = to_double(generate_input(p, InputTensor::Q), count);
    h.K = to_double(generate_input(p, InputTensor::K), count);
    h.V = to_double(generate_input(p, InputTensor::V), count);
    h.dO = to_double(generate_input(p, InputTensor::dO), count);

    GradientWalk w;
    w.seq = h.n;
    w.head_dim = h.d;
    w.scale = h.scale;
    w.step = step;
    w.P = softmax_of_scores(h);
    w.O = product(w.P, false, h.V, false, h.n, h.n, h.d);
    w.dV = product(w.P, true, h.dO, false, h.n, h.n, h.d);  // P^T dO
    w.dP = product(h.dO, false, h.V, true, h.n, h.d, h.n);  // dO V^T
    w.D.assign(static_cast<size_t>(h.n), 0.0);
    w.D_from_P.assign(static_cast<size_t>(h.n), 0.0);
    w.dS.resize(w.P.size());
    for (int64_t i = 0; i < h.n; ++i) {
        for (int64_t k = 0; k < h.d; ++k) w.D[i] += h.dO[i * h.d + k] * w.O[i * h.d + k];
        for (int64_t j = 0; j < h.n; ++j) w.D_from_P[i] += w.P[i * h.n + j] * w.dP[i * h.n + j];
        for (int64_t j = 0; j < h.n; ++j) w.dS[i * h.n + j] = w.P[i * h.n + j] * (w.dP[i * h.n + j] - w.D[i]);
    }
    w.dQ = product(w.dS, false, h.K, false, h.n, h.n, h.d);  // dS K
    w.dK = product(w.dS, true, h.Q, false, h.n, h.n, h.d);   // dS^T Q
    for (auto* g : {&w.dQ, &w.dK})
        for (double& x : *g) x *= h.scale;  // S = scale Q K^T, so the chain rule brings the scale in

    w.fd_dQ = finite_differences(h, &Head::Q, step);
    w.fd_dK = finite_differences(h, &Head::K, step);
    w.fd_dV = finite_differences(h, &Head::V, step);
    const std::pair<const std::vector<double>*, const std::vector<double>*> pairs[] = {
        {&w.dQ, &w.fd_dQ}, {&w.dK, &w.fd_dK}, {&w.dV, &w.fd_dV}};
    for (const auto& [a, f] : pairs)
        for (size_t i = 0; i < a->size(); ++i) {
            w.max_abs_diff = std::max(w.max_abs_diff, std::abs((*a)[i] - (*f)[i]));
            w.max_abs_gradient = std::max(w.max_abs_gradient, std::abs((*a)[i]));
        }
    return w;
}

}  // namespace sim
