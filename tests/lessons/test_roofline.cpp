// Lesson 10's last step places every measured kernel on the roofline. Here the same placement is
// worked out from results/h200/bench.json (parsed in the test) and the H200 preset's datasheet
// rates, and compared with the table the lesson prints.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lessons/lib/lesson.hpp"
#include "sim/machine.hpp"

using namespace lessons;
using nlohmann::json;

namespace {
const json& results() {
    static const json doc = [] {
        std::ifstream f(std::string(FLASHSIM_LESSONS_DIR) + "/../results/h200/bench.json");
        REQUIRE(f);
        return json::parse(f);
    }();
    return doc;
}
// The bench row of a kernel at N = 8192, d = 128, no mask, default mode.
const json* row(const std::string& variant, const std::string& pass) {
    for (const auto& r : results()["rows"])
        if (r.value("variant", "") == variant && r.value("pass", "forward") == pass && r.value("seq", 0) == 8192 &&
            r.value("head_dim", 0) == 128 && !r.value("causal", false) && !r.contains("mode") && !r.contains("error"))
            return &r;
    return nullptr;
}
double num(const std::string& cell) {
    std::string s;
    for (char c : cell)
        if (c != ',') s += c;
    return std::stod(s);
}
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> v;
    size_t i = line.find_first_not_of(' ');
    while (i != std::string::npos && i < line.size()) {
        size_t gap = line.find("  ", i);
        v.push_back(line.substr(i, gap == std::string::npos ? std::string::npos : gap - i));
        if (gap == std::string::npos) break;
        i = line.find_first_not_of(' ', gap);
    }
    return v;
}
}  // namespace

TEST_CASE("10.8: each kernel on the roofline, from the results file and the preset") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/10-measured.toml");
    const Step* step = nullptr;
    for (const auto& s : l.steps)
        if (s.title == "Each kernel on the roofline") step = &s;
    REQUIRE(step);
    CHECK(step->text.find("flashsim bench --variant standard,flash1,flash2,flash2h --seq 8192 --head-dim 128") !=
          std::string::npos);
    // The H200 preset: the datasheet's 989.4 TFLOP/s dense bf16 and 4.8 TB/s, a ridge of 206.1 FLOP/byte.
    const sim::Machine& m = sim::find_machine("H200");
    CHECK(m.matmul_flops == doctest::Approx(989.4e12));
    CHECK(m.hbm_bandwidth == doctest::Approx(4.8e12));
    const double ridge = m.matmul_flops / m.hbm_bandwidth;
    CHECK(ridge == doctest::Approx(206.125));

    const std::vector<std::pair<std::string, std::string>> kernels = {
        {"standard", "forward"},  {"flash1", "forward"},  {"flash2", "forward"},  {"flash2h", "forward"},
        {"standard", "backward"}, {"flash2", "backward"}, {"flash2h", "backward"}};
    std::istringstream text(step->text);
    std::vector<std::string> lines;
    for (std::string ln; std::getline(text, ln);) lines.push_back(ln);
    int left = 0, right = 0;
    for (const auto& variant_pass : kernels) {
        const auto& variant =
            std::get<0>(variant_pass);  // named: CAPTURE/INFO cannot capture a structured binding (clang)
        const auto& pass = std::get<1>(variant_pass);
        INFO(variant << " " << pass);
        const json* r = row(variant, pass);
        REQUIRE(r);
        const double recorded = (*r)["flops"].get<double>();
        // 4 B H N^2 d forward (B = 2, H = 16), two and a half times that backward (the bench's count:
        // five products of 2 N^2 d, S recomputed)
        CHECK(recorded == doctest::Approx((pass == "forward" ? 1.0 : 2.5) * 4.0 * 2 * 16 * 8192.0 * 8192 * 128));
        // Standard's backward does four of those five products (dV, dP, dQ, dK; P is read, not
        // recomputed), so the roofline places it with 2 x the forward's FLOPs.
        const bool standard_bwd = variant == "standard" && pass == "backward";
        const double flops = standard_bwd ? 2.0 * 4.0 * 2 * 16 * 8192.0 * 8192 * 128 : recorded;
        const double dram = (*r)["dram_read_bytes"].get<double>() + (*r)["dram_write_bytes"].get<double>();
        const double sim_l2 =
            (*r)["sim_l2_hbm_read_bytes"].get<double>() + (*r)["sim_l2_hbm_write_bytes"].get<double>();
        const double i_meas = flops / dram, i_sim = flops / sim_l2;
        const double roof = std::min(m.matmul_flops, i_meas * m.hbm_bandwidth);
        const double attained = flops / ((*r)["ms_median"].get<double>() / 1e3);
        CHECK(attained <= roof);  // nothing runs above its roof
        // The simulated point lands on the same side of the ridge as the measured one.
        CHECK((i_meas < ridge) == (i_sim < ridge));
        (i_meas < ridge ? left : right)++;

        const std::string label = "    " + variant + " " + pass + "  ";
        auto it =
            std::find_if(lines.begin(), lines.end(), [&](const std::string& ln) { return ln.rfind(label, 0) == 0; });
        REQUIRE(it != lines.end());
        const auto c = cells(*it);
        REQUIRE(c.size() == 6);
        CHECK(std::abs(num(c[1]) - i_sim) <= 0.5 + 1e-9);  // printed to whole FLOPs per byte
        CHECK(std::abs(num(c[2]) - i_meas) <= 0.5 + 1e-9);
        CHECK(std::abs(num(c[3]) - roof / 1e12) <= 0.5 + 1e-9);
        CHECK(std::abs(num(c[4]) - attained / 1e12) <= 0.5 + 1e-9);
        CHECK(c[5] == (i_meas < ridge ? "left (memory-bound)" : "right (compute-bound)"));
    }
    // Standard (both passes) and flash1's forward are left of the ridge; the four flash2 kernels right.
    CHECK(left == 3);
    CHECK(right == 4);
    // The project has no flash1 backward, so the table has no such row; standard's backward row counts
    // four products, as the step says.
    CHECK(row("flash1", "backward") == nullptr);
    CHECK(step->text.find("four products") != std::string::npos);
}
