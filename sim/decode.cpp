// sim/decode.cpp — split-KV decoding: the split choice, the loops that count bytes, the time model,
// and the numerics (split-and-merge in float32 beside a float64 reference). See decode.hpp.
#include "sim/decode.hpp"

#include <algorithm>
#include <limits>

namespace sim {

double DecodeProblem::softmax_scale() const {
    return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

void DecodeProblem::validate() const {
    auto pos = [](int64_t v, const char* what) {
        if (v <= 0) throw Error(std::string(what) + " must be >= 1, got " + std::to_string(v));
    };
    pos(batch, "batch");
    pos(q_heads, "query heads");
    pos(kv_heads, "KV heads");
    pos(q_len, "q_len (new tokens)");
    pos(kv_len, "the KV cache length L");
    pos(head_dim, "head_dim");
    if (head_dim > 1024) throw Error("head dimension d = " + std::to_string(head_dim) + " is above the supported 1024");
    if (q_heads > 65536) throw Error("query heads H_q = " + std::to_string(q_heads) + " is above the supported 65,536");
    if (scale > std::numeric_limits<float>::max())
        throw Error("the softmax scale is beyond float32's range (3.4e38), where the scores are computed");
    if (q_heads % kv_heads != 0)
        throw Error("the KV heads (" + std::to_string(kv_heads) + ") must divide the query heads (" +
                    std::to_string(q_heads) + ")");
    if (q_len > kv_len)
        throw Error("q_len (" + std::to_string(q_len) + ") cannot exceed the cache length L (" +
                    std::to_string(kv_len) + "): the new tokens are part of the cache");
    if (!(scale >= 0) || !std::isfinite(scale)) throw Error("scale must be >= 0 (0: 1/sqrt(d))");
    // the counts are int64 bytes: the cache (B H_kv L d, K and V, fp32 at most) under 2^60
    if (static_cast<double>(batch) * static_cast<double>(kv_heads) * static_cast<double>(kv_len) *
            static_cast<double>(head_dim) * 8.0 >
        static_cast<double>(int64_t{1} << 60))
        throw Error("a KV cache of B x H_kv x L x d = " + std::to_string(batch) + " x " + std::to_string(kv_heads) +
                    " x " + std::to_string(kv_len) + " x " + std::to_string(head_dim) +
                    " is above what flashsim counts (1 EiB); lower --batch, --kv-heads or --kv-len");
    if (static_cast<double>(q_heads) * static_cast<double>(q_len) * static_cast<double>(batch) >
        static_cast<double>(int64_t{1} << 40))
        throw Error("B x H_q x q_len = " + std::to_string(batch) + " x " + std::to_string(q_heads) + " x " +
                    std::to_string(q_len) + " query rows is above what flashsim counts (2^40)");
}

Problem DecodeProblem::q_shape() const {
    Problem p;
    p.batch = batch;
    p.heads = q_heads;
    p.seq = q_len;
    p.head_dim = head_dim;
    p.dtype = dtype;
    p.seed = seed;
    p.scale = scale;
    return p;
}

Problem DecodeProblem::kv_shape() const {
    Problem p = q_shape();
    p.heads = kv_heads;
    p.seq = kv_len;
    return p;
}

DecodeSplit choose_splits(const DecodeProblem& p, const Machine& m, const DecodeConfig& c) {
    p.validate();
    if (c.tile_keys <= 0 || c.tile_keys > (int64_t{1} << 20))
        throw Error("tile_keys (--tile-keys) must be between 1 and 1,048,576, got " + std::to_string(c.tile_keys));
    if (c.min_tiles_per_split <= 0) throw Error("min_tiles_per_split must be >= 1");
    if (c.blocks_per_sm <= 0 || c.blocks_per_sm > 64)
        throw Error("blocks_per_sm (--blocks-per-sm) must be between 1 and 64, got " + std::to_string(c.blocks_per_sm));
    if (c.fused_merge_max_splits < 0) throw Error("fused_merge_max_splits must be >= 0 (0: a separate merge)");
    if (c.splits < 0) throw Error("splits must be >= 1 (0: choose)");
    DecodeSplit s;
    s.tiles = (p.kv_len + c.tile_keys - 1) / c.tile_keys;
    s.target_blocks = int64_t(m.sm_count) * c.blocks_per_sm;
    const int64_t base = p.batch * p.kv_heads;
    int64_t want = 1;
    if (c.splits > 0) {
        want = std::min(c.splits, s.tiles);
        s.why = "splits given (" + std::to_string(c.splits) + ")" +
                (c.splits > s.tiles ? ", capped at one tile each (" + std::to_string(s.tiles) + " tiles)" : "");
    } else {
        const int64_t fill = (s.target_blocks + base - 1) / base;
        const int64_t by_len = std::max<int64_t>(1, s.tiles / c.min_tiles_per_split);
        want = std::max<int64_t>(1, std::min(fill, by_len));
        s.why = std::to_string(base) + " (batch x KV head) blocks; " + std::to_string(m.sm_count) + " SMs x " +
                std::to_string(c.blocks_per_sm) + " blocks = " + std::to_string(s.target_blocks) + " wanted: " +
                (fill <= 1 ? std::string("already filled without splitting")
                           : std::to_string(fill) + " splits would fill them") +
                (by_len < fill ? "; the cache (" + std::to_string(s.tiles) + " tiles of " +
                                     std::to_string(c.tile_keys) + " keys) allows " + std::to_string(by_len) +
                                     " splits of >= " + std::to_string(c.min_tiles_per_split) + " tiles"
                               : std::string());
        // With `fill` splits the last wave of blocks may run nearly empty (B = 8, H_kv = 8: 5 splits
        // make 320 blocks for 264 slots, a full wave and one of 56). One wave first: when the splits
        // that still fit one wave (all blocks running at once) keep at least 90% of the slots busy,
        // take them, since a second wave pays the ramp of its first tiles again (measured on the
        // H200: B = 8, L = 32,768, 4 splits 2% faster than 8; docs/kernel-notes/decode.md, "one wave of
        // longer blocks"). Otherwise whole waves: add splits, while the cache allows, until the waves
        // keep at least 90% of the slots busy (measured: 8 splits read B = 8 at 3.13 TB/s against 2.43
        // with 5; the sweep of split counts in docs/kernel-notes/decode.md).
        if (want == fill && fill > 1) {
            auto busy = [&](int64_t S) {  // blocks over the slots of the waves they take
                const int64_t blocks = base * S, waves = (blocks + s.target_blocks - 1) / s.target_blocks;
                return double(blocks) / double(waves * s.target_blocks);
            };
            auto pct = [](double x) { return std::to_string(static_cast<int>(100 * x + 0.5)) + "%"; };
            const int64_t one = s.target_blocks / base;  // the most splits whose blocks fit one wave
            if (one >= 1 && one < fill && busy(one) >= 0.9) {
                s.why += "; " + std::to_string(one) + " splits (" + std::to_string(base * one) + " blocks) keep " +
                         pct(busy(one)) + " of the slots busy in one wave: no second wave";
                want = one;
            } else {
                int64_t S = want;
                while (busy(S) < 0.9 && S + 1 <= by_len) ++S;
                if (S != want && busy(S) >= 0.9) {
                    s.why += "; " + std::to_string(want) + " splits would keep " + pct(busy(want)) +
                             " of the slots busy over their waves, " + std::to_string(S) + " keep " + pct(busy(S));
                    want = S;
                }
            }
        }
    }
    s.tiles_per_split = (s.tiles + want - 1) / want;
    s.splits = (s.tiles + s.tiles_per_split - 1) / s.tiles_per_split;  // no empty split
    if (s.splits != want)
        s.why +=
            "; " + std::to_string(want) + " splits of whole tiles leave " + std::to_string(s.splits) + " non-empty";
    s.keys_per_split = s.tiles_per_split * c.tile_keys;
    s.blocks = base * s.splits;
    return s;
}

DecodeResult simulate_decode(const DecodeProblem& p, const Machine& m, const DecodeConfig& c) {
    DecodeResult r;
    r.problem = p;
    r.split = choose_splits(p, m, c);
    const int64_t e = dtype_bytes(p.dtype), d = p.head_dim, g = p.group(), S = r.split.splits;
    const int64_t rows = g * p.q_len;  // query rows a block carries
    // the split kernel, one block per (b, KV head, split): every (b, KV head) moves the same bytes,
    // counted once over its splits and tiles and multiplied
    const int64_t groups = p.batch * p.kv_heads;
    for (int64_t s = 0; s < S; ++s) {
        r.q_read_bytes += rows * d * e;  // the group's Q rows, once
        const int64_t t0 = s * r.split.tiles_per_split, t1 = std::min(r.split.tiles, t0 + r.split.tiles_per_split);
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t keys = std::min(p.kv_len, (t + 1) * c.tile_keys) - t * c.tile_keys;
            r.kv_read_bytes += 2 * keys * d * e;  // K_j and V_j
        }
        if (S > 1)
            r.partial_write_bytes += rows * (d * 4 + 4);  // O_s (fp32) and LSE_s
        else
            r.o_write_bytes += rows * d * e;
    }
    r.q_read_bytes *= groups;
    r.kv_read_bytes *= groups;
    r.partial_write_bytes *= groups;
    r.o_write_bytes *= groups;
    // the merge, one block per (b, query head)
    if (S > 1) {
        r.merge_read_bytes = p.batch * p.q_heads * S * p.q_len * (d * 4 + 4);
        r.o_write_bytes += p.batch * p.q_heads * p.q_len * d * e;
    }
    r.kv_bytes_per_query_head = r.kv_read_bytes * g;
    // time
    const bool measured = c.measured_bandwidth && m.measured_hbm_bandwidth > 0;
    r.bandwidth = measured ? m.measured_hbm_bandwidth : m.hbm_bandwidth;
    r.bandwidth_source = measured ? "measured copy bandwidth of the preset" : "datasheet HBM bandwidth";
    r.fill = std::min(1.0, double(r.split.blocks) / double(r.split.target_blocks));
    r.split_kernel_s =
        double(r.kv_read_bytes + r.q_read_bytes + r.partial_write_bytes + (S > 1 ? 0 : r.o_write_bytes)) /
        (r.bandwidth * r.fill);
    if (S > 1) r.merge_s = double(r.merge_read_bytes + r.o_write_bytes) / r.bandwidth;
    r.merge_fused = S > 1 && S <= c.fused_merge_max_splits;
    r.launch_s = c.launch_s * (S > 1 && !r.merge_fused ? 2 : 1);
    r.total_s = r.split_kernel_s + r.merge_s + r.launch_s;
    if (c.numerics) {
        const DecodeInputs in = generate_decode_inputs(p);
        r.output = decode_split_merge(p, in, S, c.tile_keys, &r.lse);
    }
    return r;
}

DecodeInputs generate_decode_inputs(const DecodeProblem& p) {
    p.validate();
    DecodeInputs in;
    in.Q = generate_input(p.q_shape(), InputTensor::Q);
    in.K = generate_input(p.kv_shape(), InputTensor::K);
    in.V = generate_input(p.kv_shape(), InputTensor::V);
    return in;
}

namespace {
// Keys query row i of the new tokens sees: 0 .. visible-1.
int64_t visible_keys(const DecodeProblem& p, int64_t i) { return p.kv_len - p.q_len + i + 1; }
}  // namespace

TensorD decode_reference(const DecodeProblem& p, const DecodeInputs& in, std::vector<double>* lse) {
    p.validate();
    const int64_t d = p.head_dim, g = p.group();
    const double scale = p.softmax_scale();
    TensorD O(p.batch, p.q_heads, p.q_len, d);
    if (lse) lse->assign(static_cast<size_t>(p.batch * p.q_heads * p.q_len), 0.0);
    std::vector<double> sc(static_cast<size_t>(p.kv_len));
    for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.q_heads; ++h) {
            const int64_t qbh = b * p.q_heads + h, kbh = b * p.kv_heads + h / g;
            for (int64_t i = 0; i < p.q_len; ++i) {
                const int64_t n = visible_keys(p, i);
                double mx = -std::numeric_limits<double>::infinity();
                for (int64_t k = 0; k < n; ++k) {
                    double s = 0;
                    for (int64_t x = 0; x < d; ++x) s += double(in.Q.at(qbh, i, x)) * double(in.K.at(kbh, k, x));
                    sc[size_t(k)] = s * scale;
                    mx = std::max(mx, sc[size_t(k)]);
                }
                double l = 0;
                for (int64_t k = 0; k < n; ++k) l += (sc[size_t(k)] = std::exp(sc[size_t(k)] - mx));
                for (int64_t x = 0; x < d; ++x) {
                    double o = 0;
                    for (int64_t k = 0; k < n; ++k) o += sc[size_t(k)] * double(in.V.at(kbh, k, x));
                    O.at(qbh, i, x) = o / l;
                }
                if (lse) (*lse)[size_t(qbh * p.q_len + i)] = mx + std::log(l);
            }
        }
    return O;
}

TensorF decode_split_merge(const DecodeProblem& p, const DecodeInputs& in, int64_t splits, int64_t tile_keys,
                           std::vector<double>* lse) {
    p.validate();
    if (splits <= 0 || tile_keys <= 0) throw Error("splits and tile_keys must be >= 1");
    const int64_t d = p.head_dim, g = p.group();
    const int64_t tiles = (p.kv_len + tile_keys - 1) / tile_keys;
    const int64_t per = (tiles + splits - 1) / splits;
    const float scale = static_cast<float>(p.softmax_scale());
    const float ninf = -std::numeric_limits<float>::infinity();
    TensorF O(p.batch, p.q_heads, p.q_len, d);
    if (lse) lse->assign(static_cast<size_t>(p.batch * p.q_heads * p.q_len), 0.0);
    std::vector<float> Os(static_cast<size_t>(splits * d)), L(static_cast<size_t>(splits)), acc(static_cast<size_t>(d));
    for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.q_heads; ++h) {
            const int64_t qbh = b * p.q_heads + h, kbh = b * p.kv_heads + h / g;
            for (int64_t i = 0; i < p.q_len; ++i) {
                const int64_t n = visible_keys(p, i);
                // each split: the online softmax over its tiles, then O_s = acc / l and LSE_s
                for (int64_t s = 0; s < splits; ++s) {
                    const int64_t k0 = s * per * tile_keys, k1 = std::min(n, (s + 1) * per * tile_keys);
                    float m = ninf, l = 0;
                    std::fill(acc.begin(), acc.end(), 0.0f);
                    for (int64_t t0 = k0; t0 < k1; t0 += tile_keys) {
                        const int64_t t1 = std::min(k1, t0 + tile_keys);
                        for (int64_t k = t0; k < t1; ++k) {
                            float sc = 0;
                            for (int64_t x = 0; x < d; ++x) sc += in.Q.at(qbh, i, x) * in.K.at(kbh, k, x);
                            sc *= scale;
                            const float mn = std::max(m, sc);
                            const float alpha = m == ninf ? 0.0f : std::exp(m - mn), pk = std::exp(sc - mn);
                            l = l * alpha + pk;
                            for (int64_t x = 0; x < d; ++x)
                                acc[size_t(x)] = acc[size_t(x)] * alpha + pk * in.V.at(kbh, k, x);
                            m = mn;
                        }
                    }
                    L[size_t(s)] = l > 0 ? m + std::log(l) : ninf;  // an empty (fully masked) split: -inf
                    for (int64_t x = 0; x < d; ++x) Os[size_t(s * d + x)] = l > 0 ? acc[size_t(x)] / l : 0.0f;
                }
                // merge: LSE = log sum exp(LSE_s), O = sum exp(LSE_s - LSE) O_s
                float mx = ninf;
                for (float v : L) mx = std::max(mx, v);
                float sum = 0;
                for (float v : L) sum += v == ninf ? 0.0f : std::exp(v - mx);
                const float total = mx + std::log(sum);
                for (int64_t x = 0; x < d; ++x) {
                    float o = 0;
                    for (int64_t s = 0; s < splits; ++s)
                        if (L[size_t(s)] != ninf) o += std::exp(L[size_t(s)] - total) * Os[size_t(s * d + x)];
                    O.at(qbh, i, x) = round_to(p.dtype, o);
                }
                if (lse) (*lse)[size_t(qbh * p.q_len + i)] = total;
            }
        }
    return O;
}

SoftmaxPartial softmax_partial(const std::vector<double>& scores) {
    SoftmaxPartial r;
    for (double s : scores) r.m = std::max(r.m, s);
    for (double s : scores) r.l += std::exp(s - r.m);
    return r;
}

SoftmaxPartial merge_partials(SoftmaxPartial a, SoftmaxPartial b) {
    if (a.l == 0) return b;
    if (b.l == 0) return a;
    SoftmaxPartial r;
    r.m = std::max(a.m, b.m);
    r.l = a.l * std::exp(a.m - r.m) + b.l * std::exp(b.m - r.m);
    return r;
}

RowSplitMerge split_merge_row(const std::vector<double>& scores, const std::vector<std::vector<double>>& values,
                              int64_t split_len) {
    if (scores.empty()) throw Error("split_merge_row: no scores");
    if (split_len < 1) throw Error("split_merge_row: the split length must be >= 1");
    if (values.size() != scores.size()) throw Error("split_merge_row: one row of values per score is needed");
    const size_t dv = values.front().size();
    for (const auto& v : values)
        if (v.size() != dv || dv == 0) throw Error("split_merge_row: every row of values must have the same length");
    RowSplitMerge r;
    SoftmaxPartial all;
    const auto n = static_cast<int64_t>(scores.size());
    for (int64_t first = 0; first < n; first += split_len) {
        RowSplit sp;
        sp.first = first;
        sp.count = std::min(split_len, n - first);
        const std::vector<double> part(scores.begin() + first, scores.begin() + first + sp.count);
        sp.state = softmax_partial(part);
        sp.lse = sp.state.lse();
        sp.out.assign(dv, 0.0);
        for (int64_t j = first; j < first + sp.count; ++j) {
            const double p = std::exp(scores[static_cast<size_t>(j)] - sp.state.m) / sp.state.l;
            for (size_t k = 0; k < dv; ++k) sp.out[k] += p * values[static_cast<size_t>(j)][k];
        }
        all = merge_partials(all, sp.state);
        r.splits.push_back(std::move(sp));
    }
    r.lse = all.lse();
    r.out.assign(dv, 0.0);
    for (auto& sp : r.splits) {
        sp.weight = std::exp(sp.lse - r.lse);
        for (size_t k = 0; k < dv; ++k) r.out[k] += sp.weight * sp.out[k];
    }
    return r;
}

}  // namespace sim
