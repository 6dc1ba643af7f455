// report::read_eager_rates (report/figure2.hpp): a scripts/eager_pytorch.py file read into the
// fraction of an HBM rate each of the model's eager kernels ran at, and each bad file named.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "report/figure2.hpp"
#include "sim/machine.hpp"

using nlohmann::json;

namespace {
// A file as the script writes it for the authors' program: the profiler's kernels (a memset among
// them, as cuBLAS issues), ncu's DRAM bytes for each kernel, and a 0-byte fill ncu sees too. The bytes
// are the model's own count scaled by 1.01 (a measurement near it); the times are chosen here.
json synthetic(std::vector<double>& bytes, std::vector<double>& ms) {
    sim::KernelRates any;
    any.hbm = any.gemm = any.exp = 1;
    const sim::Fig2Column model = sim::eager_attention(sim::figure2_problem(), any);
    json doc = {{"program", "authors"}, {"device", "NVIDIA H100 80GB HBM3"},
                {"batch", 64},          {"heads", 16},
                {"seq", 1024},          {"head_dim", 64},
                {"copy_tbps", 3.0},     {"date", "2026-12-06T16:30:20Z"},
                {"torch", "test"}};
    json kernels = json::array(), ncu = json::array();
    kernels.push_back({{"name", "Memset (Device)"}, {"ms_median", 0.001}});
    for (size_t i = 0; i < model.kernels.size(); ++i) {
        const bool gemm = model.kernels[i].name.find("GEMM") != std::string::npos;
        const std::string name =
            gemm ? "nvjet_sm90_test_" + std::to_string(i) : "elementwise_test_" + std::to_string(i);
        bytes.push_back(1.01 * static_cast<double>(model.kernels[i].bytes()));
        ms.push_back(0.5 + 0.25 * static_cast<double>(i));
        kernels.push_back({{"name", name}, {"ms_median", ms.back()}});
        ncu.push_back({{"name", name}, {"dram_read_bytes", bytes.back() / 2}, {"dram_write_bytes", bytes.back() / 2}});
    }
    kernels.push_back({{"name", "fill_test"}, {"ms_median", 0.002}});
    ncu.push_back({{"name", "fill_test"}, {"dram_read_bytes", 0}, {"dram_write_bytes", 512}});
    doc["kernels"] = kernels;
    doc["ncu_kernels"] = ncu;
    double total_bytes = 512, total_ms = 0.003;
    for (size_t i = 0; i < bytes.size(); ++i) total_bytes += bytes[i], total_ms += ms[i];
    doc["dram_bytes"] = total_bytes;
    doc["step_ms_median"] = total_ms;
    return doc;
}

std::string write(const std::string& name, const json& doc) {
    const auto path = (std::filesystem::temp_directory_path() / name).string();
    std::ofstream(path) << doc.dump();
    return path;
}
}  // namespace

TEST_CASE("read_eager_rates: each kernel's bytes over its time, over the datasheet rate or the copy rate") {
    std::vector<double> bytes, ms;
    const json doc = synthetic(bytes, ms);
    const std::string path = write("flashsim_eager_ok.json", doc);
    sim::KernelRates any;
    any.hbm = any.gemm = any.exp = 1;
    const sim::Fig2Column model = sim::eager_attention(sim::figure2_problem(), any);
    for (const char* basis : {"datasheet", "copy"}) {
        const sim::EagerRates r = report::read_eager_rates({path}, basis);
        const double rate = std::string(basis) == "copy" ? 3.0e12 : sim::find_machine("H100-SXM").hbm_bandwidth;
        REQUIRE(r.fraction.size() == model.kernels.size());
        for (size_t i = 0; i < model.kernels.size(); ++i)
            CHECK(r.fraction.at(model.kernels[i].name) == doctest::Approx(bytes[i] / (ms[i] * 1e-3) / rate));
        CHECK(r.source.find(path) != std::string::npos);
        CHECK(r.basis == basis);
        CHECK(r.device == "NVIDIA H100 80GB HBM3");  // the authors' program's totals, to print beside the model
        CHECK(r.dram_bytes == doctest::Approx(doc["dram_bytes"].get<double>()));
        CHECK(r.step_ms == doctest::Approx(doc["step_ms_median"].get<double>()));
    }
    CHECK_THROWS_WITH_AS(report::read_eager_rates({path}, "guess"), doctest::Contains("not 'guess'"), sim::Error);
}

TEST_CASE("read_eager_rates: a file that does not pair with the model's sequence is an error that says why") {
    auto fails = [](const json& doc, const std::string& says) {
        const std::string path = write("flashsim_eager_bad.json", doc);
        CHECK_THROWS_WITH_AS(report::read_eager_rates({path}, "datasheet"), doctest::Contains(says.c_str()),
                             sim::Error);
    };
    std::vector<double> bytes, ms;
    const json good = synthetic(bytes, ms);
    {
        json d = good;
        d["ncu_kernels"].erase(d["ncu_kernels"].begin() + 3);
        fails(d, "cannot be paired");
    }
    {
        json d = good;  // the first two kernels swapped: a GEMM where the model has the mask's sum
        std::swap(d["kernels"][1], d["kernels"][2]);
        std::swap(d["ncu_kernels"][0], d["ncu_kernels"][1]);
        fails(d, "one is a GEMM, the other not");
    }
    {
        json d = good;
        d["ncu_kernels"][2]["dram_read_bytes"] = 3 * d["ncu_kernels"][2]["dram_read_bytes"].get<double>();
        fails(d, "measured / modelled bytes 2.0");
    }
    {
        json d = good;
        d["seq"] = 2048;
        fails(d, "another shape than Figure 2's");
    }
    {
        json d = good;
        d["device"] = "Some Other GPU";
        fails(d, "no datasheet rate for the card");
    }
    {
        json d = good;
        d.erase("ncu_kernels");
        fails(d, "has no \"ncu_kernels\"");
    }
    {
        json d = good;
        d["program"] = "megatron";
        fails(d, "neither authors nor hf");
    }
    CHECK_THROWS_WITH_AS(report::read_eager_rates({"/nonexistent/eager.json"}, "copy"),
                         doctest::Contains("cannot be read"), sim::Error);
}

TEST_CASE("the recorded H100 files pair with the model kernel by kernel, and the model's bytes agree with ncu's") {
    const std::string dir = std::string(FLASHSIM_SOURCE_DIR) + "/results";
    const auto files = report::default_eager_files({dir});
    REQUIRE(!files.empty());
    const sim::EagerRates r = report::read_eager_rates(files, "datasheet");
    // every kernel of both programs has a fraction, and every fraction is a rate below the datasheet's
    sim::KernelRates any;
    any.hbm = any.gemm = any.exp = 1;
    for (const auto& o : {sim::EagerOptions{}, sim::hf_gpt2_eager()})
        for (const auto& k : sim::eager_attention(sim::figure2_problem(), any, o).kernels) {
            REQUIRE(r.fraction.count(k.name) == 1);
            CHECK(r.fraction.at(k.name) > 0.3);
            CHECK(r.fraction.at(k.name) < 1.0);
        }
    // the whole program's bytes: the model's count against ncu's sum (an independent measurement)
    for (const auto& f : files) {
        std::ifstream in(f);
        const json doc = json::parse(in);
        const double model = static_cast<double>(
            sim::eager_attention(sim::figure2_problem(), any,
                                 doc["program"] == "hf" ? sim::hf_gpt2_eager() : sim::EagerOptions{})
                .hbm_bytes());
        CHECK(model / doc["dram_bytes"].get<double>() == doctest::Approx(1.0).epsilon(0.02));
    }
}
