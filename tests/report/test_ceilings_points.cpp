// report/kernel_report.hpp: the ceilings file's points of standard's cuBLAS calls at ragged row
// lengths (gemm_<qk|pv|ptv>_<dtype>_d<d>_n<N>, written by bench --ceilings), as the kernel model
// gets them, and a file from before them.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "report/kernel_report.hpp"
#include "sim/machine.hpp"

using nlohmann::json;

namespace {

// The ceilings every file has (ceilings_from_json requires them), at round figures.
json base_file() {
    json cs = json::array();
    for (const auto& [name, value] :
         {std::pair{"hbm_copy", 4e12}, std::pair{"l2_read", 8e12}, std::pair{"smem_read", 3e13},
          std::pair{"mma_sync_bf16", 6e14}, std::pair{"mma_sync_fp16", 6e14}, std::pair{"wgmma_bf16", 9e14},
          std::pair{"wgmma_fp16", 9e14}, std::pair{"ex2", 4e12}, std::pair{"launch", 4e-6}})
        cs.push_back({{"name", name}, {"value", value}, {"unit", "?"}, {"method", "test"}});
    return json{{"ceilings", cs}};
}

void add(json& doc, const std::string& name, double value) {
    doc["ceilings"].push_back({{"name", name}, {"value", value}, {"unit", "FLOP/s"}, {"method", "test"}});
}

}  // namespace

TEST_CASE("ceilings: standard's GEMM points of the file's dtype, by call, d and N") {
    const sim::Machine& m = sim::find_machine("H200");
    json doc = base_file();
    add(doc, "gemm_qk_bf16_d64_n1001", 1e14);
    add(doc, "gemm_pv_bf16_d128_n16004", 2e14);
    add(doc, "gemm_ptv_bf16_d64_n2002", 3e14);
    add(doc, "gemm_qk_fp16_d64_n1001", 4e14);     // another dtype: the fp16 reader's
    add(doc, "gemm_write_bf16_d64_n1001", 5e12);  // bytes of the same run: informative, not read
    const sim::KernelRates r = report::ceilings_from_json(doc, "t.json", m, sim::DType::bf16);
    REQUIRE(r.standard_gemm.size() == 3);
    auto has = [&](sim::StandardGemm g, int64_t d, int64_t n, double f) {
        for (const auto& p : r.standard_gemm)
            if (p.gemm == g && p.head_dim == d && p.n == n && p.flops == f) return true;
        return false;
    };
    CHECK(has(sim::StandardGemm::qk, 64, 1001, 1e14));
    CHECK(has(sim::StandardGemm::pv, 128, 16004, 2e14));
    CHECK(has(sim::StandardGemm::ptv, 64, 2002, 3e14));
    const sim::KernelRates h = report::ceilings_from_json(doc, "t.json", m, sim::DType::fp16);
    REQUIRE(h.standard_gemm.size() == 1);
    CHECK(h.standard_gemm[0].flops == 4e14);
}

TEST_CASE("ceilings: a GEMM point without a d or an N is refused by name") {
    const sim::Machine& m = sim::find_machine("H200");
    for (const char* bad : {"gemm_qk_bf16_d64", "gemm_pv_bf16_d_n1001", "gemm_ptv_bf16_d64_nx"}) {
        json doc = base_file();
        add(doc, bad, 1e14);
        CAPTURE(bad);
        CHECK_THROWS_WITH_AS(report::ceilings_from_json(doc, "t.json", m, sim::DType::bf16),
                             doctest::Contains("should name a head dimension and a row length"), sim::Error);
    }
}

TEST_CASE("ceilings: a file from before the points leaves standard's ragged rows uncertain; with them, certain") {
    const sim::Machine& m = sim::find_machine("H200");
    json doc = base_file();
    add(doc, "softmax_rows_fwd_n1001", 1e12);
    const sim::Problem p = [] {
        sim::Problem q;
        q.seq = 1001;
        q.head_dim = 64;
        q.dtype = sim::DType::bf16;
        return q;
    }();
    const sim::KernelProfile k = sim::kernel_profile("standard", sim::Pass::forward, 64);
    const sim::KernelRates old = report::ceilings_from_json(doc, "old.json", m, sim::DType::bf16);
    CHECK(old.standard_gemm.empty());
    const sim::KernelPrediction u = sim::predict_kernel(p, k, old, m);
    CHECK(u.uncertain);
    CHECK(u.uncertain_why.find("no ceiling measures its GEMMs there") != std::string::npos);
    add(doc, "gemm_qk_bf16_d64_n1001", 1e14);
    add(doc, "gemm_pv_bf16_d64_n1001", 1e14);
    const sim::KernelPrediction c =
        sim::predict_kernel(p, k, report::ceilings_from_json(doc, "new.json", m, sim::DType::bf16), m);
    CHECK_FALSE(c.uncertain);
}
