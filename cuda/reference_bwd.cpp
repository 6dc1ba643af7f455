// cuda/reference_bwd.cpp — see reference_bwd.hpp. Independent of the kernels: straight loops in double.
#include "cuda/reference_bwd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace fcuda {

GradsD attention_backward_reference(const sim::Problem& p, const sim::TensorF& Q, const sim::TensorF& K,
                                    const sim::TensorF& V, const sim::TensorF& dO) {
    const int64_t BH = p.heads_total(), N = p.seq, d = p.head_dim;
    const double scale = p.softmax_scale();
    GradsD g{sim::TensorD(p.batch, p.heads, N, d), sim::TensorD(p.batch, p.heads, N, d),
             sim::TensorD(p.batch, p.heads, N, d)};
    std::vector<double> prob(static_cast<size_t>(N)), dprob(static_cast<size_t>(N));
    for (int64_t bh = 0; bh < BH; ++bh) {
        for (int64_t n = 0; n < N; ++n) {
            // keys visible to query n (the same rule as sim::attention_reference)
            int64_t first = 0, last = N;  // [first, last)
            if (p.causal || p.window > 0) last = n + 1;
            if (p.window > 0) first = std::max<int64_t>(0, n - p.window + 1);
            double mx = -std::numeric_limits<double>::infinity();
            for (int64_t k = first; k < last; ++k) {
                double s = 0;
                for (int64_t c = 0; c < d; ++c) s += double(Q.at(bh, n, c)) * double(K.at(bh, k, c));
                prob[k] = s * scale;
                mx = std::max(mx, prob[k]);
            }
            double sum = 0;
            for (int64_t k = first; k < last; ++k) {
                prob[k] = std::exp(prob[k] - mx);
                sum += prob[k];
            }
            double D = 0;
            for (int64_t k = first; k < last; ++k) {
                prob[k] /= sum;
                double dp = 0;
                for (int64_t c = 0; c < d; ++c) dp += double(dO.at(bh, n, c)) * double(V.at(bh, k, c));
                dprob[k] = dp;
                D += prob[k] * dp;
            }
            for (int64_t k = first; k < last; ++k) {
                const double ds = prob[k] * (dprob[k] - D);
                for (int64_t c = 0; c < d; ++c) {
                    g.dQ.at(bh, n, c) += scale * ds * double(K.at(bh, k, c));
                    g.dK.at(bh, k, c) += scale * ds * double(Q.at(bh, n, c));
                    g.dV.at(bh, k, c) += prob[k] * double(dO.at(bh, n, c));
                }
            }
        }
    }
    return g;
}

}  // namespace fcuda
