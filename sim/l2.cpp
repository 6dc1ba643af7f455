// sim/l2.cpp — the L2 level: the thread blocks of each kernel replayed as a GPU runs them, their
// tile loads and stores looked up in an LRU cache of the preset's L2 capacity.
//
// Policy (docs/simulator.md): entries are whole tiles, keyed (tensor, head, first row, first column),
// of the tile's byte size; standard attention's N x N tensors (S, P, dP, dS) are keyed by row
// segments (tensor, head, row, column tile) since they are written in tiles and read in rows.
// Loads: hit, or miss (HBM read of the entry, inserted clean). Stores: write-allocate without a read,
// the entry becomes dirty; a dirty entry costs an HBM write when evicted and at the end (flush).
// Least recently used entries are evicted first. O(1) per lookup: an open-addressing hash table
// and an intrusive doubly-linked list.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "sim/generator.hpp"
#include "sim/program.hpp"

namespace sim::detail {
namespace {

class Lru {
public:
    explicit Lru(int64_t capacity) : cap_(capacity) { table_.assign(1024, -1); }

    std::array<Traffic, kTensorCount> hbm{};
    int64_t wb_bytes = 0;  // write-back bytes since last read of this counter

    // Returns true on a hit.
    bool read(uint64_t k1, uint64_t k2, int64_t bytes, Tensor t) {
        int32_t n = recent(k1, k2);
        if (n >= 0) {
            touch(n);
            return true;
        }
        const uint64_t h = hash(k1, k2);
        n = find(k1, k2, h);
        if (n >= 0) {
            touch(n);
            return true;
        }
        hbm[static_cast<size_t>(t)].read_bytes += bytes;
        if (bytes <= cap_) insert(k1, k2, h, bytes, t, false);
        return false;
    }
    // Returns true when the entry was resident and already dirty (the write stays in L2).
    bool write(uint64_t k1, uint64_t k2, int64_t bytes, Tensor t) {
        int32_t n = recent(k1, k2);
        const uint64_t h = n >= 0 ? 0 : hash(k1, k2);
        if (n < 0) n = find(k1, k2, h);
        if (n >= 0) {
            const bool was_dirty = nodes_[n].dirty;
            nodes_[n].dirty = true;
            touch(n);
            return was_dirty;
        }
        if (bytes > cap_) {  // larger than the cache: straight through
            hbm[static_cast<size_t>(t)].write_bytes += bytes;
            wb_bytes += bytes;
            return false;
        }
        insert(k1, k2, h, bytes, t, true);
        return false;
    }
    // A new capacity (the sample's share of L2 changes between kernels): least recently used
    // entries are evicted (dirty ones written back) until the rest fits.
    void set_capacity(int64_t capacity) {
        cap_ = capacity;
        while (used_ > cap_ && tail_ >= 0) evict();
    }
    // Fills the free capacity with clean entries that no lookup asks for (the lines of heads not
    // walked), most recently used: new entries evict the older ones first, then these, at no cost.
    void fill_with_others(int64_t chunk) {
        while (cap_ - used_ >= chunk) {
            const uint64_t k1 = ~uint64_t{0}, k2 = others_++;
            insert(k1, k2, hash(k1, k2), chunk, Tensor::Q, false);
        }
    }
    // Writes back every dirty entry; returns their bytes.
    int64_t flush() {
        int64_t dirty = 0;
        for (int32_t n = head_; n >= 0; n = nodes_[n].next)
            if (nodes_[n].dirty) {
                hbm[nodes_[n].tensor].write_bytes += nodes_[n].bytes;
                dirty += nodes_[n].bytes;
            }
        return dirty;
    }
    int64_t capacity() const { return cap_; }

private:
    struct Node {
        uint64_t k1, k2, h;
        int64_t bytes;
        int32_t prev, next;
        uint8_t tensor;
        bool dirty;
    };
    int64_t cap_, used_ = 0, count_ = 0;
    uint64_t others_ = 0;
    std::vector<Node> nodes_;
    std::vector<int32_t> free_;
    std::vector<int32_t> table_;
    int32_t head_ = -1, tail_ = -1;  // most / least recently used

    static uint64_t hash(uint64_t a, uint64_t b) { return mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL)); }
    size_t mask() const { return table_.size() - 1; }

    // The two most recently used entries, checked before hashing: blocks that run side by side ask
    // for the same K_j, V_j one after another.
    int32_t recent(uint64_t k1, uint64_t k2) const {
        int32_t n = head_;
        for (int i = 0; i < 2 && n >= 0; ++i, n = nodes_[n].next)
            if (nodes_[n].k1 == k1 && nodes_[n].k2 == k2) return n;
        return -1;
    }
    int32_t find(uint64_t k1, uint64_t k2, uint64_t h) const {
        for (size_t i = h & mask();; i = (i + 1) & mask()) {
            const int32_t n = table_[i];
            if (n < 0) return -1;
            if (nodes_[n].h == h && nodes_[n].k1 == k1 && nodes_[n].k2 == k2) return n;
        }
    }
    void unlink(int32_t n) {
        Node& x = nodes_[n];
        if (x.prev >= 0)
            nodes_[x.prev].next = x.next;
        else
            head_ = x.next;
        if (x.next >= 0)
            nodes_[x.next].prev = x.prev;
        else
            tail_ = x.prev;
    }
    void push_front(int32_t n) {
        nodes_[n].prev = -1;
        nodes_[n].next = head_;
        if (head_ >= 0) nodes_[head_].prev = n;
        head_ = n;
        if (tail_ < 0) tail_ = n;
    }
    void touch(int32_t n) {
        if (head_ == n) return;
        unlink(n);
        push_front(n);
    }
    void table_put(int32_t n) {
        size_t i = nodes_[n].h & mask();
        while (table_[i] >= 0) i = (i + 1) & mask();
        table_[i] = n;
    }
    void table_erase(int32_t n) {
        size_t i = nodes_[n].h & mask();
        while (table_[i] != n) i = (i + 1) & mask();
        // backward-shift deletion keeps every probe chain unbroken
        size_t j = i;
        for (;;) {
            j = (j + 1) & mask();
            const int32_t m = table_[j];
            if (m < 0) break;
            const size_t k = nodes_[m].h & mask();
            const bool move = i <= j ? (k <= i || k > j) : (k <= i && k > j);
            if (move) {
                table_[i] = m;
                i = j;
            }
        }
        table_[i] = -1;
    }
    void evict() {
        const int32_t n = tail_;
        Node& x = nodes_[n];
        if (x.dirty) {
            hbm[x.tensor].write_bytes += x.bytes;
            wb_bytes += x.bytes;
        }
        used_ -= x.bytes;
        unlink(n);
        table_erase(n);
        free_.push_back(n);
        --count_;
    }
    void insert(uint64_t k1, uint64_t k2, uint64_t h, int64_t bytes, Tensor t, bool dirty) {
        while (used_ + bytes > cap_ && tail_ >= 0) evict();
        if (static_cast<size_t>(count_ + 1) * 2 > table_.size()) {
            std::vector<int32_t> old;
            old.swap(table_);
            table_.assign(old.size() * 2, -1);
            for (int32_t n : old)
                if (n >= 0) table_put(n);
        }
        int32_t n;
        if (!free_.empty()) {
            n = free_.back();
            free_.pop_back();
        } else {
            n = static_cast<int32_t>(nodes_.size());
            nodes_.push_back({});
        }
        nodes_[n] = {k1, k2, h, bytes, -1, -1, static_cast<uint8_t>(t), dirty};
        push_front(n);
        table_put(n);
        used_ += bytes;
        ++count_;
    }
};

struct Slot {
    BlockLog log;
    size_t step = 0;
    BlockTimer timer;
    int64_t id = -1;
    int64_t head = 0;
    bool active = false;
    int64_t unit = -1;  // the static order: the unit this slot runs, and how many of its blocks it took
    int part = 0;
};

// The bytes of one step's loads and stores, by where they were served: HBM (a miss) or L2 (a hit).
struct StepBytes {
    double hbm = 0, l2 = 0;
};

// Play one step of a block of head `head` through L2, counting its lookups and hits in `st`: the N x N
// tensors by row segments of W columns (of N), the others by whole tiles.
StepBytes play_step(Lru& l2, L2Stats& st, const BlockLog& log, const StepRec& sr, int64_t head, int64_t n, int64_t W) {
    StepBytes out;
    l2.wb_bytes = 0;
    // one lookup of `bytes` under key (k1, k2): a hit is served by L2, a miss by HBM
    auto access = [&](uint64_t k1, uint64_t k2, int64_t bytes, const Access& x) {
        ++st.lookups;
        if (x.store) {
            if (l2.write(k1, k2, bytes, x.tensor)) {
                ++st.hits;
                out.l2 += bytes;
            } else {
                out.hbm += bytes;
            }
        } else {
            st.load_bytes += bytes;
            if (l2.read(k1, k2, bytes, x.tensor)) {
                ++st.hits;
                st.hit_bytes += bytes;
                out.l2 += bytes;
            } else {
                out.hbm += bytes;
            }
        }
    };
    const uint64_t hk = static_cast<uint64_t>(head) << 8;
    for (uint32_t a = sr.first; a < sr.first + sr.count; ++a) {
        const Access& x = log.acc[a];
        const uint64_t tk = static_cast<uint64_t>(x.tensor) | hk;
        if (square_tensor(x.tensor)) {
            const int64_t e = x.elem;
            const int64_t ct0 = x.c0 / W, ct1 = (x.c0 + x.cols - 1) / W;
            for (int64_t row = x.r0; row < x.r0 + x.rows; ++row)
                for (int64_t ct = ct0; ct <= ct1; ++ct) {
                    const int64_t seg = (std::min(n, (ct + 1) * W) - ct * W) * e;
                    access(tk, (static_cast<uint64_t>(row) << 32) | static_cast<uint64_t>(ct), seg, x);
                }
        } else {
            // the element size is part of the key: dQ's float32 accumulator and dQ
            // in the storage type are different buffers
            const uint64_t elem = x.elem;
            const int64_t bytes = x.bytes();
            const uint64_t k1 = tk | (uint64_t{1} << 63) | (elem << 48);
            access(k1, (static_cast<uint64_t>(x.r0) << 32) | static_cast<uint64_t>(x.c0), bytes, x);
        }
    }
    return out;
}

}  // namespace

L2Replay replay_l2(const Ctx& proto, const std::vector<KernelDef>& kernels, const Machine& m, int64_t heads_walked,
                   int64_t heads_total, const std::vector<int64_t>& kernel_slots, const std::vector<SlotRates>& krates,
                   int timeline_blocks, int timeline_steps, int64_t seg_cols, size_t timeline_kernel) {
    const auto t_start = std::chrono::steady_clock::now();
    L2Replay out;
    L2Stats& st = out.stats;
    st.capacity_bytes = m.l2_walk_bytes();
    st.concurrent_blocks = kernel_slots.empty() ? 0 : *std::max_element(kernel_slots.begin(), kernel_slots.end());
    st.heads_walked = heads_walked;
    st.exact = heads_walked >= heads_total;
    // The walked heads stand for all of them with their share of the slots and of L2 (frac), so that
    // each resident block keeps the full run's L2 capacity per block. But the blocks of one head that
    // the full run keeps resident together share that head's tiles as they stream past (standard's
    // O = P V: a head's 64 row blocks at N = 8192 read each V_j at about the same time, so V_j comes
    // from HBM once however large V is). So each kernel runs at least as many blocks of a head at once
    // as the full run does (min(blocks a head, slots)), with L2 in proportion to its resident blocks.
    // What a kernel finds in L2 from the one before stays the walked heads' share (frac of L2, the
    // most recent of it: in the full run the rest holds the other heads' lines); the capacity beyond
    // that share starts filled with lines no walked block asks for.
    const double frac = std::min(1.0, static_cast<double>(heads_walked) / static_cast<double>(heads_total));
    Lru l2(static_cast<int64_t>(m.l2_walk_bytes() * frac));
    const int64_t n = proto.p.seq;
    const int64_t W = std::max<int64_t>(1, seg_cols);
    out.timeline.resize(static_cast<size_t>(std::max(0, timeline_blocks)));

    for (size_t ki = 0; ki < kernels.size(); ++ki) {
        const KernelDef& k = kernels[ki];
        const SlotRates& rates = krates[ki];
        const int64_t nb = k.info.blocks_per_head, total = heads_walked * nb;
        const int64_t full_slots = std::max<int64_t>(1, ki < kernel_slots.size() ? kernel_slots[ki] : 1);
        int64_t slots =
            std::max({int64_t{1}, static_cast<int64_t>(std::llround(static_cast<double>(full_slots) * frac)),
                      std::min(std::max<int64_t>(1, nb), full_slots)});
        slots = std::min(slots, full_slots);
        const auto share = static_cast<int64_t>(m.l2_walk_bytes() * frac);
        const auto capacity = std::max(share, static_cast<int64_t>(m.l2_walk_bytes() * static_cast<double>(slots) /
                                                                   static_cast<double>(full_slots)));
        l2.set_capacity(share);
        if (capacity > share) {
            l2.set_capacity(capacity);
            if (ki > 0) l2.fill_with_others(int64_t{256} << 10);
        }
        std::vector<BlockTime> times(static_cast<size_t>(total));
        // Launch order: a slot that frees takes the next block. The static order (a persistent grid):
        // slot s takes the blocks of units s, s + G, s + 2G, ... (StaticUnits), however long they run.
        const bool in_turn = k.info.static_units;
        const StaticUnits su{nb, heads_walked, k.info.unit_pairs, k.info.lone_middles};
        const int64_t G = std::min<int64_t>(slots, in_turn ? su.count() : total);
        std::vector<Slot> sl(static_cast<size_t>(G));
        int64_t next = 0, active = 0;
        auto take = [&](int64_t si, Slot& s) -> int64_t {
            if (!in_turn) return next < total ? next++ : -1;
            if (s.unit < 0) s.unit = si;
            int64_t b[2];
            while (s.unit < su.count()) {
                if (s.part < su.blocks(s.unit, b)) return b[s.part++];
                s.unit += G;
                s.part = 0;
            }
            return -1;
        };
        auto launch = [&](int64_t si) {
            Slot& s = sl[static_cast<size_t>(si)];
            for (int64_t id = take(si, s); id >= 0; id = take(si, s)) {
                s.id = id;
                s.head = s.id / nb;
                const int64_t b = s.id % nb;
                s.log.clear();
                s.step = 0;
                Walker w;
                w.log = &s.log;
                Ctx ctx(proto.p, proto.t, proto.tb, proto.sram);
                ctx.launch = k.launch;
                k.body(ctx, b, w);
                const bool keep = ki == timeline_kernel && s.head == 0 && b < timeline_blocks;
                s.timer.keep = keep;
                s.timer.kept = keep ? &out.timeline[static_cast<size_t>(b)] : nullptr;
                s.timer.keep_max = static_cast<size_t>(std::max(0, timeline_steps));
                if (!s.log.steps.empty()) {
                    s.active = true;
                    return true;
                }
                times[static_cast<size_t>(s.id)] = {};
            }
            s.active = false;
            return false;
        };
        for (int64_t si = 0; si < G; ++si)
            if (launch(si)) ++active;
        // dQ in block order: how many blocks of a head have added into the dQ_i at a row (key: head,
        // first row); block b's step there waits until that count is b. A step adds where it stores
        // into the fp32 accumulator.
        const bool in_order = k.info.dq_in_order;
        std::unordered_map<uint64_t, int64_t> added;
        auto dq_row = [&](const Slot& s, const StepRec& sr) -> int64_t {
            for (uint32_t a = sr.first; a < sr.first + sr.count; ++a) {
                const Access& x = s.log.acc[a];
                if (x.tensor == Tensor::dQ && x.store) return x.r0;
            }
            return -1;
        };
        auto dq_key = [](const Slot& s, int64_t row) {
            return (static_cast<uint64_t>(s.head) << 32) | static_cast<uint64_t>(row);
        };
        std::vector<uint64_t> done_adding;
        bool moved = true;  // a round in which no waiting block may go lets them all go (never expected)
        while (active > 0) {
            const bool force = !moved;
            moved = false;
            for (uint64_t key : done_adding) ++added[key];
            done_adding.clear();
            for (int64_t si = 0; si < G; ++si) {
                Slot& s = sl[static_cast<size_t>(si)];
                if (!s.active) continue;
                const StepRec& sr = s.log.steps[s.step];
                if (in_order) {
                    const int64_t row = dq_row(s, sr);
                    if (row >= 0) {
                        const uint64_t key = dq_key(s, row);
                        if (added[key] < s.id % nb && !force) continue;  // the blocks before it have not added yet
                        done_adding.push_back(key);  // seen by the next block from the next round on
                    }
                }
                moved = true;
                const StepBytes sb = play_step(l2, st, s.log, sr, s.head, n, W);
                s.timer.step({sb.hbm * rates.s_per_hbm_byte + sb.l2 * rates.s_per_l2_byte,
                              static_cast<double>(sr.matmul) * rates.s_per_matmul,
                              static_cast<double>(sr.scalar) * rates.s_per_scalar});
                if (++s.step == s.log.steps.size()) {
                    times[static_cast<size_t>(s.id)] = s.timer.finish();
                    if (!launch(si)) --active;
                }
            }
        }
        out.kernel_blocks.push_back(std::move(times));
    }
    // The dirty share of the cache at the end stands for the same share of the whole L2 (the walked
    // heads may hold more than their share of it: see the capacity above).
    const int64_t dirty = l2.flush();
    st.end_dirty_bytes =
        l2.capacity() > 0 ? static_cast<double>(dirty) / static_cast<double>(l2.capacity()) * m.l2_walk_bytes() : 0.0;
    const double scale = static_cast<double>(heads_total) / static_cast<double>(heads_walked);
    for (int i = 0; i < kTensorCount; ++i) {
        st.hbm[i].read_bytes = std::llround(l2.hbm[i].read_bytes * scale);
        st.hbm[i].write_bytes = std::llround(l2.hbm[i].write_bytes * scale);
    }
    if (!st.exact) {
        st.lookups = std::llround(st.lookups * scale);
        st.hits = std::llround(st.hits * scale);
        st.load_bytes = std::llround(st.load_bytes * scale);
        st.hit_bytes = std::llround(st.hit_bytes * scale);
    }
    st.hit_rate = st.load_bytes > 0 ? static_cast<double>(st.hit_bytes) / static_cast<double>(st.load_bytes) : 0.0;
    st.simulated = true;
    st.policy =
        "LRU over whole tiles keyed (tensor, head, tile), N x N tensors by row segments of B_c columns; "
        "write-allocate, write-back (dirty tiles reach HBM when evicted or at the end); blocks in launch order "
        "(a persistent grid's static order: each slot its own units in turn), SMs x blocks-per-SM at once, "
        "round-robin one step each; L2 starts empty";
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    return out;
}

}  // namespace sim::detail
