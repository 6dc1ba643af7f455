// sim/ring.cpp — ring attention: the schedule, the layouts, bytes per link and step, the overlap
// model and the break-even search; and the ring run on real numbers (forward with the LSE merge,
// backward with travelling dK/dV). See ring.hpp and docs/simulator.md, "Ring attention".
#include "sim/ring.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace sim {

void RingProblem::validate() const {
    if (gpus < 1) throw Error("--gpus must be >= 1, got " + std::to_string(gpus));
    // the schedule is P steps of P GPUs, each walked: bounded so that a command answers in seconds
    if (gpus > 1024)
        throw Error("--gpus must be at most 1024 (the schedule walks P x P GPU-steps), got " + std::to_string(gpus));
    attn.validate();
    // bytes are int64: B·H·N·d·8 must stay far below 2^63
    if (double(attn.batch) * double(attn.heads) * double(attn.seq) * double(attn.head_dim) > 0x1p50)
        throw Error("B x H x N x d is above 2^50 elements; the ring is simulated for smaller problems");
    if (attn.window > 0 || attn.pad_left > 0)
        throw Error("ring attention is simulated without a window or left padding (causal or no mask)");
    const int64_t parts = gpus * chunks_per_gpu();
    if (attn.seq % parts != 0) {
        const int64_t up = (attn.seq + parts - 1) / parts * parts;
        throw Error("N = " + std::to_string(attn.seq) + " is not a multiple of " +
                    (layout == RingLayout::balanced ? "2P = " : "P = ") + std::to_string(parts) + " (the " +
                    std::string(name_of(layout)) + " layout cuts N into " + std::to_string(parts) +
                    " equal chunks); pad the sequence to N = " + std::to_string(up) +
                    " (padding is not simulated: the padded keys would be masked, the padded queries dropped)");
    }
}

std::vector<int64_t> ring_chunks(const RingProblem& p, int64_t device) {
    if (p.layout == RingLayout::balanced) return {device, 2 * p.gpus - 1 - device};
    return {device};
}

BlockKind block_kind(bool causal, int64_t a, int64_t b) {
    if (!causal || b < a) return BlockKind::full;
    return b == a ? BlockKind::diagonal : BlockKind::none;
}

namespace {

int64_t pairs_of(bool causal, int64_t n) { return causal ? n * (n + 1) / 2 : n * n; }

// Times blocks of c queries x c keys, full or diagonal, forward or backward; cached.
class BlockTimer {
public:
    BlockTimer(const RingProblem& p, const Machine& m, const RingConfig& c) : p_(p), m_(m), c_(c) {
        rate_ = c.flops_rate > 0                                                    ? c.flops_rate
                : (c.ceilings == Ceilings::measured && m.measured_matmul_flops > 0) ? m.measured_matmul_flops
                                                                                    : m.matmul_flops;
    }
    double rate() const { return rate_; }
    // Seconds for one square sub-problem of n tokens (causal: the triangle) in the given pass.
    double square(int64_t n, bool causal, int pass) {
        const auto key = std::make_tuple(n, causal, pass);
        if (auto it = cache_.find(key); it != cache_.end()) return it->second;
        double t = 0;
        const double bh = double(p_.attn.batch * p_.attn.heads), d = double(p_.attn.head_dim);
        if (c_.compute == RingCompute::kernel) {
            Problem q = p_.attn;
            q.seq = n;
            q.causal = causal;
            const KernelProfile k =
                kernel_profile(c_.kernel, pass == 0 ? Pass::forward : Pass::backward, q.head_dim, q.causal);
            t = predict_kernel(q, k, c_.rates.hbm > 0 ? c_.rates : datasheet_rates(m_), m_).predicted_ms * 1e-3;
        } else if (c_.compute == RingCompute::flops) {
            const double fwd = 4.0 * bh * d * double(pairs_of(causal, n));  // QK^T and PV, 2 FLOPs a MAC
            t = (pass == 0 ? fwd : 2.5 * fwd) / rate_;                      // the backward: 5 products of the same size
        } else {
            Problem q = p_.attn;
            q.seq = n;
            q.causal = causal;
            Config cfg;
            cfg.algo = Algo::flash2;
            cfg.numerics = Numerics::off;
            cfg.pass = pass == 0 ? Pass::forward : Pass::backward;
            cfg.l2 = c_.l2;
            cfg.ceilings = c_.ceilings;
            cfg.record_row = -1;
            cfg.event_cap = 0;
            cfg.timeline_sms = 0;
            const Result r = simulate(q, m_, cfg);
            t = r.timing.predicted_ms * 1e-3;
        }
        cache_.emplace(key, t);
        return t;
    }

private:
    const RingProblem& p_;
    const Machine& m_;
    const RingConfig& c_;
    double rate_ = 0;
    std::map<std::tuple<int64_t, bool, int>, double> cache_;
};

// Merge and accumulation bytes of one block of `rows` query rows (or key rows), beside its kernel
// call, as cuda/ring.cu moves them through HBM (bh heads, d columns, e bytes an element; LSE 4 B a row).
// Forward: a query chunk whose output takes `total` > 1 blocks merges each block's output O_b (e) and
// LSE_b into a running fp32 O and LSE: the first block copies them in (O_b read, O written: e + 4 a
// value; LSE 4 + 4 a row), a middle one merges (O and O_b read, O written: 8 + e; 8 + 4), the last
// merges into the chunk's output (O and O_b read, the output written: 4 + 2e; 8 + 4). A chunk of one
// block is written by the kernel itself. Backward: every block's dQ_b, dK_b and dV_b (e) are added
// into fp32 accumulators (each read, added to and written: 8 + e a value, three of them).
int64_t block_merge_bytes(int pass, int64_t done, int64_t total, int64_t rows, int64_t d, int64_t bh, int64_t e) {
    const int64_t values = bh * rows * d, lse = bh * rows * 4;
    if (pass == 1) return 3 * values * (8 + e);
    if (total <= 1) return 0;
    if (done == 0) return values * (e + 4) + 2 * lse;
    return values * (done + 1 == total ? 4 + 2 * e : 8 + e) + 3 * lse;
}

// The backward's accumulators zeroed on each device before its first step: dQ (fp32, its n query rows)
// and the dK, dV that travel with its slice (fp32).
int64_t zeroed_bytes(int64_t n, int64_t d, int64_t bh) { return 3 * n * d * 4 * bh; }

}  // namespace

RingResult simulate_ring(const RingProblem& p, const Machine& m, const RingConfig& c) {
    p.validate();
    RingResult r;
    r.problem = p;
    r.machine = m;
    r.config = c;
    if (c.compute == RingCompute::flops && c.flops_rate < 0) throw Error("the flops rate must be > 0");
    r.link_bandwidth = c.link_bandwidth > 0 ? c.link_bandwidth : m.link_bandwidth;
    r.link_latency_s = c.link_latency_s >= 0 ? c.link_latency_s : m.link_latency_s;
    if (!(r.link_bandwidth > 0))
        throw Error("the preset " + m.name + " has no interconnect figures; give a link bandwidth");
    r.hbm_bandwidth =
        (c.ceilings == Ceilings::measured && m.measured_hbm_bandwidth > 0) ? m.measured_hbm_bandwidth : m.hbm_bandwidth;
    BlockTimer timer(p, m, c);
    r.compute_note =
        c.compute == RingCompute::flops
            ? "a block's matmul FLOPs (4 d per (query, key) pair forward, 2.5x that backward) at " +
                  std::to_string(timer.rate() / 1e12) + " TFLOP/s"
        : c.compute == RingCompute::kernel
            ? "the kernel model of " + c.kernel + " (" + (c.rates.hbm > 0 ? c.rates.source : "datasheet rates") +
                  ") on a c x c sub-problem per block, full or causal triangle"
            : std::string("sim::simulate (flash2, ") + (c.ceilings == Ceilings::measured ? "measured" : "datasheet") +
                  " ceilings) on a c x c sub-problem per block, full or causal triangle";

    const int64_t P = p.gpus, n = p.tokens_per_gpu(), d = p.attn.head_dim;
    const int64_t bh = p.attn.batch * p.attn.heads, e = p.attn.elem_bytes();
    const bool causal = p.attn.causal;
    for (int64_t i = 0; i < P; ++i)
        for (int64_t ch : ring_chunks(p, i)) r.chunks_of_device.push_back(ch);
    const int64_t kv_bytes = 2 * n * d * e * bh;    // K and V slices of one device
    const int64_t grad_bytes = 2 * n * d * 4 * bh;  // dK and dV accumulators, float32

    auto transfer = [&](int64_t bytes) {
        return bytes > 0 ? r.link_latency_s + double(bytes) / r.link_bandwidth : 0.0;
    };
    // blocks of query chunk a over a whole pass, one a key chunk it sees: causal, chunks 0..a; else all
    auto chunk_total = [&](int64_t a) { return causal ? a + 1 : P * p.chunks_per_gpu(); };
    // the compute of device i in a step of a pass, for a problem of this layout (any N); `seen` holds,
    // for each of its query chunks, the blocks of the pass before this step, and is advanced by this
    // step's (the forward's merges depend on a block's place in its chunk's sequence)
    auto device_step = [&](const RingProblem& pp, int pass, int64_t step, int64_t i, std::vector<int64_t>& seen) {
        RingDeviceStep ds;
        ds.device = i;
        ds.kv_from = ring_source(P, i, step);
        const int64_t cc = pp.chunk();
        const auto qs = ring_chunks(pp, i), ks = ring_chunks(pp, ds.kv_from);
        int64_t merge = pass == 1 && step == 0 ? zeroed_bytes(pp.tokens_per_gpu(), d, bh) : 0;
        for (size_t x = 0; x < qs.size(); ++x) {
            const int64_t total = chunk_total(qs[x]);
            for (int64_t b : ks) {
                const BlockKind k = block_kind(causal, qs[x], b);
                if (k == BlockKind::none) continue;
                if (k == BlockKind::full) ++ds.full_blocks, ds.pairs += cc * cc;
                if (k == BlockKind::diagonal) ++ds.diagonal_blocks, ds.pairs += pairs_of(true, cc);
                merge += block_merge_bytes(pass, seen[x]++, total, cc, d, bh, e);
            }
        }
        if (ds.full_blocks) ds.compute_s += double(ds.full_blocks) * timer.square(cc, false, pass);
        if (ds.diagonal_blocks) ds.compute_s += double(ds.diagonal_blocks) * timer.square(cc, true, pass);
        if (c.merge_cost) ds.merge_s = double(merge) / r.hbm_bandwidth;
        return ds;
    };

    std::vector<int> passes;
    if (p.pass != Pass::backward) passes.push_back(0);
    if (p.pass != Pass::forward) passes.push_back(1);
    for (int pass : passes) {
        RingPassResult pr;
        pr.pass = pass;
        pr.pairs_per_device.assign(size_t(P), 0);
        double all_compute = 0;
        std::vector<std::vector<int64_t>> seen(size_t(P), std::vector<int64_t>(size_t(p.chunks_per_gpu()), 0));
        for (int64_t s = 0; s < P; ++s) {
            RingStep st;
            st.pass = pass;
            st.step = s;
            for (int64_t i = 0; i < P; ++i) {
                RingDeviceStep ds = device_step(p, pass, s, i, seen[size_t(i)]);
                st.compute_s = std::max(st.compute_s, ds.compute_s + ds.merge_s);
                all_compute += ds.compute_s + ds.merge_s;
                pr.pairs_per_device[size_t(i)] += ds.pairs;
                st.devices.push_back(ds);
            }
            st.kv_bytes = s < P - 1 ? kv_bytes : 0;                  // the next slice
            st.grad_bytes = (pass == 1 && s >= 1) ? grad_bytes : 0;  // the previous step's dK, dV
            st.send_bytes = st.kv_bytes + st.grad_bytes;
            st.transfer_s = transfer(st.send_bytes);
            st.time_s = std::max(st.compute_s, st.transfer_s);
            st.exposed_s = st.time_s - st.compute_s;
            pr.link_bytes += st.send_bytes;
            pr.time_s += st.time_s;
            pr.compute_only_s += st.compute_s;
            pr.steps.push_back(std::move(st));
        }
        if (pass == 1 && P > 1) {  // the accumulators of the last step go home
            pr.tail_s = transfer(grad_bytes);
            pr.link_bytes += grad_bytes;
            pr.time_s += pr.tail_s;
        }
        pr.busy_s = all_compute / double(P);
        pr.one_gpu_s = all_compute;
        int64_t mx = 0, sum = 0;
        for (int64_t w : pr.pairs_per_device) mx = std::max(mx, w), sum += w;
        pr.balance = mx > 0 ? double(sum) / double(P) / double(mx) : 1.0;
        // the ideal: P GPUs at the throughput one GPU reaches on its share alone
        pr.single_gpu_s = timer.square(n, causal, pass);
        const double throughput = double(pairs_of(causal, n)) / pr.single_gpu_s;  // pairs / s
        pr.ideal_s = double(pairs_of(causal, p.attn.seq)) / (double(P) * throughput);
        pr.efficiency = pr.ideal_s / pr.time_s;
        // break-even: the smallest chunk c whose steady step (s = 1: no diagonal) covers its transfer
        if (c.break_even && P > 1) {
            const int64_t per = p.chunks_per_gpu();
            // step 1 of the same layout at chunk cc: its slowest device against the step's send
            auto covers = [&](int64_t cc) {
                RingProblem q = p;
                q.attn.seq = cc * per * P;
                const int64_t nn = cc * per;
                double comp = 0;
                for (int64_t i = 0; i < P; ++i) {
                    std::vector<int64_t> seen_q(size_t(q.chunks_per_gpu()), 0);
                    (void)device_step(q, pass, 0, i, seen_q);  // step 0's blocks come before step 1's
                    const RingDeviceStep ds = device_step(q, pass, 1, i, seen_q);
                    comp = std::max(comp, ds.compute_s + ds.merge_s);
                }
                const int64_t send = 2 * nn * d * e * bh + (pass == 1 ? 2 * nn * d * 4 * bh : 0);
                return comp >= transfer(send);
            };
            // Fixed costs (a launch, the link's latency) can make a tiny chunk "cover" its send while a
            // larger one does not: the last crossing is the break-even. Past c_top it cannot fail:
            // there even the peak FLOP rate's time for the step, b c^2, exceeds latency + k c.
            const int64_t fulls = causal ? (p.layout == RingLayout::balanced ? 2 : 1) : per * per;
            const double peak = std::max({m.matmul_flops, m.measured_matmul_flops, c.flops_rate, timer.rate()});
            const double b = double(fulls) * (pass == 0 ? 4.0 : 10.0) * double(d * bh) / peak;
            const double k = double(2 * per * d * e * bh + (pass == 1 ? 2 * per * d * 4 * bh : 0)) / r.link_bandwidth;
            const double c_top = (k + std::sqrt(k * k + 4 * b * r.link_latency_s)) / (2 * b);
            // the bandwidth-only break-even: seconds per pair of a full c x c block at this chunk
            const double t_pair = timer.square(p.chunk(), false, pass) / double(p.chunk() * p.chunk());
            pr.break_even_bandwidth_tokens = double(per) * k / (double(fulls) * t_pair);
            const int64_t cap = int64_t{1} << 21;
            int64_t cc = 1, last_fail = 0;
            int run = 0;  // doublings in a row that cover, ending at the last one tried
            for (; cc <= cap; cc *= 2) {
                if (covers(cc))
                    ++run;
                else
                    run = 0, last_fail = cc;
                if (double(cc) > 2 * c_top) break;
            }
            if (run == 0) {
                pr.break_even_tokens = -1;
                pr.break_even_note =
                    "the transfer stays exposed up to " + std::to_string(cap * per) + " tokens per GPU";
            } else {
                int64_t lo = last_fail, hi = last_fail == 0 ? 1 : 2 * last_fail;  // lo fails (0: none), hi covers
                while (hi - lo > 1) {
                    const int64_t mid = lo + (hi - lo) / 2;
                    (covers(mid) ? hi : lo) = mid;
                }
                pr.break_even_tokens = hi * per;
                pr.break_even_note =
                    "from here a steady step (no diagonal block) computes at least as long as it sends";
            }
        }
        r.time_s += pr.time_s;
        r.ideal_s += pr.ideal_s;
        r.passes.push_back(std::move(pr));
    }
    r.efficiency = r.ideal_s / r.time_s;
    return r;
}

// ---------------------------------------------------------------------------------------------
// The ring on real numbers.

namespace {

// The token indices of device i's chunks, ascending.
std::vector<int64_t> device_tokens(const RingProblem& p, int64_t device) {
    std::vector<int64_t> t;
    const int64_t c = p.chunk();
    for (int64_t ch : ring_chunks(p, device))
        for (int64_t x = 0; x < c; ++x) t.push_back(ch * c + x);
    return t;
}

// A K/V slice in flight: whose it is, its rows (tokens x d per head), and in the backward the
// dK, dV accumulators that travel with it.
struct Slice {
    int64_t owner = 0;
    std::vector<int64_t> tokens;
    std::vector<float> K, V;     // (B·H, tokens, d)
    std::vector<double> dK, dV;  // (B·H, tokens, d), backward only
};

Slice make_slice(const RingProblem& p, const Inputs& in, int64_t owner, bool grads) {
    Slice s;
    s.owner = owner;
    s.tokens = device_tokens(p, owner);
    const int64_t d = p.attn.head_dim, bh = p.attn.batch * p.attn.heads, t = int64_t(s.tokens.size());
    s.K.resize(size_t(bh * t * d));
    s.V.resize(size_t(bh * t * d));
    for (int64_t h = 0; h < bh; ++h)
        for (int64_t r = 0; r < t; ++r)
            for (int64_t x = 0; x < d; ++x) {
                s.K[size_t((h * t + r) * d + x)] = in.K.at(h, s.tokens[size_t(r)], x);
                s.V[size_t((h * t + r) * d + x)] = in.V.at(h, s.tokens[size_t(r)], x);
            }
    if (grads) s.dK.assign(s.K.size(), 0.0), s.dV.assign(s.V.size(), 0.0);
    return s;
}

// Every device sends the slice it holds to the next: device i+1 gets device i's.
void pass_along(std::vector<Slice>& held) { std::rotate(held.rbegin(), held.rbegin() + 1, held.rend()); }

}  // namespace

RingNumerics run_ring(const RingProblem& p, const Inputs& in, int64_t tile_keys) {
    p.validate();
    if (tile_keys < 1) throw Error("tile_keys must be >= 1");
    const int64_t P = p.gpus, N = p.attn.seq, d = p.attn.head_dim, bh = p.attn.batch * p.attn.heads;
    const bool causal = p.attn.causal;
    const float scale = float(p.attn.softmax_scale()), ninf = -std::numeric_limits<float>::infinity();
    RingNumerics out;
    out.O = TensorF(p.attn.batch, p.attn.heads, N, d);
    out.lse.assign(size_t(bh * N), -std::numeric_limits<double>::infinity());
    std::vector<Slice> held;
    for (int64_t i = 0; i < P; ++i) held.push_back(make_slice(p, in, i, false));
    std::vector<std::vector<int64_t>> mine;
    for (int64_t i = 0; i < P; ++i) mine.push_back(device_tokens(p, i));
    // each device's running output (float32) and LSE for its rows
    std::vector<std::vector<float>> O(static_cast<size_t>(P)), L(static_cast<size_t>(P));
    const int64_t n = p.tokens_per_gpu();
    for (auto& o : O) o.assign(size_t(bh * n * d), 0.0f);
    for (auto& l : L) l.assign(size_t(bh * n), ninf);
    std::vector<float> acc(static_cast<size_t>(d));
    for (int64_t s = 0; s < P; ++s) {
        for (int64_t i = 0; i < P; ++i) {
            const Slice& sl = held[size_t(i)];
            if (sl.owner != ring_source(P, i, s)) throw Error("ring schedule: slice out of place");  // cannot happen
            const int64_t t = int64_t(sl.tokens.size());
            for (int64_t h = 0; h < bh; ++h)
                for (int64_t r = 0; r < n; ++r) {
                    const int64_t q = mine[size_t(i)][size_t(r)];
                    // the step's partial: online softmax over the slice, tile by tile
                    float m = ninf, l = 0;
                    std::fill(acc.begin(), acc.end(), 0.0f);
                    for (int64_t t0 = 0; t0 < t; t0 += tile_keys) {
                        const int64_t t1 = std::min(t, t0 + tile_keys);
                        for (int64_t k = t0; k < t1; ++k) {
                            if (causal && sl.tokens[size_t(k)] > q) continue;
                            float sc = 0;
                            for (int64_t x = 0; x < d; ++x) sc += in.Q.at(h, q, x) * sl.K[size_t((h * t + k) * d + x)];
                            sc *= scale;
                            const float mn = std::max(m, sc);
                            const float alpha = m == ninf ? 0.0f : std::exp(m - mn), pk = std::exp(sc - mn);
                            l = l * alpha + pk;
                            for (int64_t x = 0; x < d; ++x)
                                acc[size_t(x)] = acc[size_t(x)] * alpha + pk * sl.V[size_t((h * t + k) * d + x)];
                            m = mn;
                        }
                    }
                    if (l == 0) continue;  // no key of this slice is visible: nothing to merge
                    const float lse_s = m + std::log(l);
                    float* o = &O[size_t(i)][size_t((h * n + r) * d)];
                    float& lr = L[size_t(i)][size_t(h * n + r)];
                    if (lr == ninf) {  // the first partial is the running output
                        for (int64_t x = 0; x < d; ++x) o[x] = acc[size_t(x)] / l;
                        lr = lse_s;
                        continue;
                    }
                    // LSE merge: LSE = log(e^LSE_run + e^LSE_s), O = w_run O_run + w_s O_s
                    const float mx = std::max(lr, lse_s);
                    const float lse = mx + std::log(std::exp(lr - mx) + std::exp(lse_s - mx));
                    const float w_run = std::exp(lr - lse), w_s = std::exp(lse_s - lse);
                    for (int64_t x = 0; x < d; ++x) o[x] = w_run * o[x] + w_s * (acc[size_t(x)] / l);
                    lr = lse;
                    ++out.merges;
                }
        }
        if (s < P - 1) pass_along(held);
    }
    for (int64_t i = 0; i < P; ++i)
        for (int64_t h = 0; h < bh; ++h)
            for (int64_t r = 0; r < n; ++r) {
                const int64_t q = mine[size_t(i)][size_t(r)];
                for (int64_t x = 0; x < d; ++x) out.O.at(h, q, x) = O[size_t(i)][size_t((h * n + r) * d + x)];
                out.lse[size_t(h * N + q)] = L[size_t(i)][size_t(h * n + r)];
            }
    return out;
}

RingGradients run_ring_backward(const RingProblem& p, const Inputs& in, const RingNumerics& fwd) {
    p.validate();
    if (in.dO.size() != in.Q.size()) throw Error("the ring backward needs dO");
    const int64_t P = p.gpus, N = p.attn.seq, d = p.attn.head_dim, bh = p.attn.batch * p.attn.heads;
    const bool causal = p.attn.causal;
    const double scale = p.attn.softmax_scale();
    RingGradients g;
    g.dQ = TensorD(p.attn.batch, p.attn.heads, N, d);
    g.dK = TensorD(p.attn.batch, p.attn.heads, N, d);
    g.dV = TensorD(p.attn.batch, p.attn.heads, N, d);
    // D_i = rowsum(dO_i o O_i), on each device for its own rows
    std::vector<double> D(size_t(bh * N), 0.0);
    for (int64_t h = 0; h < bh; ++h)
        for (int64_t q = 0; q < N; ++q)
            for (int64_t x = 0; x < d; ++x)
                D[size_t(h * N + q)] += double(in.dO.at(h, q, x)) * double(fwd.O.at(h, q, x));
    std::vector<Slice> held;
    for (int64_t i = 0; i < P; ++i) held.push_back(make_slice(p, in, i, true));

    for (int64_t s = 0; s < P; ++s) {
        for (int64_t i = 0; i < P; ++i) {
            Slice& sl = held[size_t(i)];
            const int64_t t = int64_t(sl.tokens.size());
            for (int64_t q : device_tokens(p, i))
                for (int64_t h = 0; h < bh; ++h) {
                    const double lse = fwd.lse[size_t(h * N + q)];
                    if (!std::isfinite(lse)) continue;
                    for (int64_t k = 0; k < t; ++k) {
                        if (causal && sl.tokens[size_t(k)] > q) continue;
                        double sc = 0;
                        for (int64_t x = 0; x < d; ++x)
                            sc += double(in.Q.at(h, q, x)) * double(sl.K[size_t((h * t + k) * d + x)]);
                        const double pk = std::exp(sc * scale - lse);
                        double dp = 0;
                        for (int64_t x = 0; x < d; ++x)
                            dp += double(in.dO.at(h, q, x)) * double(sl.V[size_t((h * t + k) * d + x)]);
                        const double ds = pk * (dp - D[size_t(h * N + q)]);
                        for (int64_t x = 0; x < d; ++x) {
                            const size_t kx = size_t((h * t + k) * d + x);
                            sl.dV[kx] += pk * double(in.dO.at(h, q, x));
                            sl.dK[kx] += scale * ds * double(in.Q.at(h, q, x));
                            g.dQ.at(h, q, x) += scale * ds * double(sl.K[kx]);
                        }
                    }
                }
        }
        // K/V move on to the next step (P-1 times); the accumulators move every time (P times:
        // the last send takes them home)
        if (s < P - 1) g.kv_sends += P;
        if (P > 1) g.grad_sends += P, pass_along(held);
    }
    for (int64_t i = 0; i < P; ++i) {
        const Slice& sl = held[size_t(i)];
        if (sl.owner != i) throw Error("ring backward: the dK, dV accumulators did not come home");  // cannot happen
        const int64_t t = int64_t(sl.tokens.size());
        for (int64_t h = 0; h < bh; ++h)
            for (int64_t k = 0; k < t; ++k)
                for (int64_t x = 0; x < d; ++x) {
                    g.dK.at(h, sl.tokens[size_t(k)], x) = sl.dK[size_t((h * t + k) * d + x)];
                    g.dV.at(h, sl.tokens[size_t(k)], x) = sl.dV[size_t((h * t + k) * d + x)];
                }
    }
    return g;
}

}  // namespace sim
