#include "sim/softmax.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

namespace sim {

namespace {

template <typename T>
int64_t ulps(T a, T b) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    using I = std::conditional_t<sizeof(T) == 4, int64_t, __int128>;
    auto ord = [](T x) {
        const U u = std::bit_cast<U>(x);
        const U sign = U{1} << (sizeof(T) * 8 - 1);
        return (u & sign) ? -static_cast<I>(u & ~sign) : static_cast<I>(u);
    };
    I d = ord(a) - ord(b);
    if (d < 0) d = -d;
    return d > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(d);
}

template <typename T>
StreamedSoftmax run(const std::vector<double>& s_in, int64_t block, const std::vector<std::vector<double>>& v_in) {
    const size_t n = s_in.size();
    const bool with_values = !v_in.empty();
    const size_t dv = with_values ? v_in[0].size() : n;
    auto value = [&](size_t j, size_t k) -> T {
        return with_values ? static_cast<T>(v_in[j][k]) : static_cast<T>(j == k ? 1 : 0);
    };
    std::vector<T> s(n);
    for (size_t j = 0; j < n; ++j) s[j] = static_cast<T>(s_in[j]);

    StreamedSoftmax out;
    out.with_values = with_values;
    // Plain: max and sum over the whole row first, then weights, then the weighted sum.
    T m = -std::numeric_limits<T>::infinity();
    for (T x : s) m = std::max(m, x);
    T l = 0;
    for (T x : s) l += std::exp(x - m);
    std::vector<T> plain(dv, T(0));
    for (size_t j = 0; j < n; ++j) {
        const T p = std::exp(s[j] - m) / l;
        for (size_t k = 0; k < dv; ++k) plain[k] += p * value(j, k);
    }
    // Streamed: running max and sum; the carried accumulator is rescaled when the max grows.
    T rm = -std::numeric_limits<T>::infinity(), rl = 0;
    std::vector<T> acc(dv, T(0));
    for (size_t j0 = 0, b = 0; j0 < n; j0 += static_cast<size_t>(block), ++b) {
        const size_t j1 = std::min(n, j0 + static_cast<size_t>(block));
        SoftmaxBlockState st;
        st.block = static_cast<int64_t>(b);
        st.first_key = static_cast<int64_t>(j0);
        T bm = -std::numeric_limits<T>::infinity();
        for (size_t j = j0; j < j1; ++j) {
            st.scores.push_back(static_cast<double>(s[j]));
            bm = std::max(bm, s[j]);
        }
        const T m_new = std::max(rm, bm);
        const T alpha = std::exp(rm - m_new);  // e^(m_old - m_new); 0 at the first block
        st.block_max = bm;
        st.running_max_before = rm;
        st.running_max_after = m_new;
        st.rescale = alpha;
        st.running_sum_before = rl;
        st.acc_before.assign(acc.begin(), acc.end());
        for (auto& a : acc) a *= alpha;
        st.acc_rescaled.assign(acc.begin(), acc.end());
        T block_sum = 0;
        for (size_t j = j0; j < j1; ++j) {
            const T p = std::exp(s[j] - m_new);
            block_sum += p;
            for (size_t k = 0; k < dv; ++k) acc[k] += p * value(j, k);
        }
        rl = alpha * rl + block_sum;
        rm = m_new;
        st.running_sum_after = rl;
        st.acc_after.assign(acc.begin(), acc.end());
        out.record.blocks.push_back(std::move(st));
    }
    for (size_t k = 0; k < dv; ++k) {
        const T streamed = acc[k] / rl;
        out.plain.push_back(static_cast<double>(plain[k]));
        out.streamed.push_back(static_cast<double>(streamed));
        out.max_abs_diff = std::max(out.max_abs_diff, std::abs(static_cast<double>(plain[k] - streamed)));
        out.max_ulp = std::max(out.max_ulp, ulps(plain[k], streamed));
    }
    out.record.output = out.streamed;
    return out;
}

}  // namespace

StreamedSoftmax stream_softmax(const std::vector<double>& scores, int64_t block,
                               const std::vector<std::vector<double>>& values, Precision precision) {
    if (scores.empty()) throw Error("softmax: give at least one score (--scores 1.4,3.9,...)");
    if (block < 1) throw Error("softmax: --block must be at least 1, got " + std::to_string(block));
    for (size_t j = 0; j < scores.size(); ++j)
        if (!std::isfinite(scores[j]))
            throw Error("softmax: score " + std::to_string(j + 1) + " is not a finite number");
    if (!values.empty()) {
        if (values.size() != scores.size())
            throw Error("softmax: " + std::to_string(values.size()) + " value rows given for " +
                        std::to_string(scores.size()) + " scores; give one row of V per score");
        for (size_t j = 0; j < values.size(); ++j) {
            if (values[j].size() != values[0].size() || values[j].empty())
                throw Error("softmax: value row " + std::to_string(j + 1) + " has " + std::to_string(values[j].size()) +
                            " entries, row 1 has " + std::to_string(values[0].size()) +
                            "; all rows need the same length");
            for (double x : values[j])
                if (!std::isfinite(x))
                    throw Error("softmax: value row " + std::to_string(j + 1) + " has a non-finite entry");
        }
    }
    // fp32 arithmetic: a score or value beyond float's range would round to infinity and the sums to NaN
    if (precision == Precision::fp32) {
        const double fmax = std::numeric_limits<float>::max();
        for (size_t j = 0; j < scores.size(); ++j)
            if (std::abs(scores[j]) > fmax)
                throw Error("softmax: score " + std::to_string(j + 1) +
                            " is beyond float32's range (magnitude above 3.4e38); give smaller scores or "
                            "--precision fp64");
        for (size_t j = 0; j < values.size(); ++j)
            for (double x : values[j])
                if (std::abs(x) > fmax)
                    throw Error("softmax: value row " + std::to_string(j + 1) +
                                " has an entry beyond float32's range (magnitude above 3.4e38); give smaller "
                                "values or --precision fp64");
    }
    StreamedSoftmax r =
        precision == Precision::fp32 ? run<float>(scores, block, values) : run<double>(scores, block, values);
    r.precision = precision;
    return r;
}

}  // namespace sim
