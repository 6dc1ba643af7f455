// Lesson 5's last step walks the paper's Algorithm 1 (FA1: key/value blocks outside, query blocks
// inside) on the toy problem. Its account of which tiles each step loads and stores is checked here
// against the simulator's trace, and its byte counts against the algorithm's lines, counted by hand.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <string_view>

#include "lessons/lib/lesson.hpp"
#include "sim/trace.hpp"

using namespace lessons;

namespace {
// "K1": a tensor's name and the block index (one digit here). Built with += (GCC 12 warns falsely
// on std::string(...) + std::to_string(...) under -O3).
std::string name(std::string_view tensor, int block) {
    std::string s(tensor);
    s += static_cast<char>('0' + block);
    return s;
}
std::string tile(const sim::Event& e) { return name(sim::tensor_name(e.tensor), e.row_tile); }
}  // namespace

TEST_CASE("5.6: Algorithm 1's order on the toy problem, step by step") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/05-flash-forward.toml");
    const Step* step = nullptr;
    for (const auto& s : l.steps)
        if (s.title.find("Algorithm 1") != std::string::npos) step = &s;
    REQUIRE(step);
    const sim::Result r = simulate_config(l, "tiny_fa1");
    // N = 8, d = 4, blocks of 4: T_r = T_c = 2, four inner steps.
    const int Tr = 2, Tc = 2;
    REQUIRE(r.trace.steps_per_head == Tr * Tc);

    // What Algorithm 1 does, written out from its lines: [2] O, l, m initialised in HBM (stored once
    // before the loops); [5]-[6] for each key block j load K_j, V_j; [7]-[8] for each query block i load
    // Q_i, O_i, l_i, m_i; [12]-[13] store O_i, l_i, m_i. Step index = j * T_r + i.
    std::vector<std::set<std::string>> want_loads(Tr * Tc), want_stores(Tr * Tc);
    for (int i = 0; i < Tr; ++i)
        for (const char* t : {"O", "l", "m"}) want_stores[0].insert(name(t, i));  // [2]
    for (int j = 0; j < Tc; ++j)
        for (int i = 0; i < Tr; ++i) {
            auto& ld = want_loads[j * Tr + i];
            if (i == 0) {
                ld.insert(name("K", j));
                ld.insert(name("V", j));
            }
            for (const char* t : {"Q", "O", "l", "m"}) ld.insert(name(t, i));
            for (const char* t : {"O", "l", "m"}) want_stores[j * Tr + i].insert(name(t, i));
        }
    std::vector<std::set<std::string>> loads(Tr * Tc), stores(Tr * Tc);
    for (const auto& e : r.trace.events) {
        if (e.kind == sim::EventKind::load) loads.at(e.step).insert(tile(e));
        if (e.kind == sim::EventKind::store) stores.at(e.step).insert(tile(e));
    }
    for (int s = 0; s < Tr * Tc; ++s) {
        INFO("step " << s);
        CHECK(loads[s] == want_loads[s]);
        CHECK(stores[s] == want_stores[s]);
    }

    // Bytes, from the same lines: fp32 (4 bytes), N d = 32 numbers a tensor, N = 8 statistics.
    const double Nd = 8 * 4 * 4, Nst = 8 * 4;
    CHECK(evaluate(l, "tiny_fa1.tensors.K.read_bytes") == Nd);       // [6] once
    CHECK(evaluate(l, "tiny_fa1.tensors.Q.read_bytes") == Tc * Nd);  // [8] once per key block
    CHECK(evaluate(l, "tiny_fa1.tensors.O.read_bytes") == Tc * Nd);
    CHECK(evaluate(l, "tiny_fa1.tensors.O.write_bytes") == (1 + Tc) * Nd);  // [2] and [12]
    CHECK(evaluate(l, "tiny_fa1.tensors.l.read_bytes") == Tc * Nst);
    CHECK(evaluate(l, "tiny_fa1.tensors.m.write_bytes") == (1 + Tc) * Nst);  // [2] and [13]
    const double total = 2 * Nd + Tc * Nd + Tc * Nd + (1 + Tc) * Nd + 2 * (Tc * Nst + (1 + Tc) * Nst);
    CHECK(total == 1472);
    CHECK(evaluate(l, "tiny_fa1.hbm.total") == total);
    CHECK(step->text.find("1,472 bytes in all") != std::string::npos);
    // The FA2 order of steps 0-3: Q, O once, K and V T_r times, the LSE once: 128 + 128 + 2 x 256 + 32.
    CHECK(evaluate(l, "tiny.hbm.total") == 800);
    CHECK(step->text.find("against 800") != std::string::npos);
}
