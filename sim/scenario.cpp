#include "sim/scenario.hpp"

#include <algorithm>
#include <cctype>

namespace sim {

namespace {
Scenario make(std::string name, std::string description, int64_t b, int64_t h, int64_t n, int64_t d, bool causal,
              std::string gpu, Pass pass) {
    Scenario s;
    s.name = std::move(name);
    s.description = std::move(description);
    s.problem.batch = b;
    s.problem.heads = h;
    s.problem.seq = n;
    s.problem.head_dim = d;
    s.problem.causal = causal;
    s.problem.dtype = DType::fp16;
    s.gpu = std::move(gpu);
    s.pass = pass;
    return s;
}
}  // namespace

const std::vector<Scenario>& scenarios() {
    static const std::vector<Scenario> list = {
        make("gpt2-medium",
             "GPT-2 medium training step (16 heads of d = 64, 1,024-token context, causal), batch 64, forward + "
             "backward, on an A100 40 GB, the setting of the FlashAttention paper's GPT-2 runs",
             64, 16, 1024, 64, true, "A100-40GB", Pass::both),
        make("gpt2-small",
             "GPT-2 small training step (12 heads of d = 64, 1,024 tokens, causal), batch 64, "
             "forward + backward, on an A100 40 GB",
             64, 12, 1024, 64, true, "A100-40GB", Pass::both),
        make("bert-large",
             "BERT-large training step (16 heads of d = 64, 512 tokens, no mask), batch 64, forward + "
             "backward, on an A100 40 GB",
             64, 16, 512, 64, false, "A100-40GB", Pass::both),
        make("llama2-7b-4k",
             "Llama-2 7B attention at its 4,096-token context (32 heads of d = 128, causal), batch 4, "
             "forward + backward, on an H100 SXM",
             4, 32, 4096, 128, true, "H100-SXM", Pass::both),
        make("long-64k", "one 65,536-token sequence, 8 heads of d = 128, causal, forward only, on an H200", 1, 8, 65536,
             128, true, "H200", Pass::forward),
    };
    return list;
}

const Scenario* scenario_named(const std::string& name) {
    auto lower = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
        return s;
    };
    for (const auto& s : scenarios())
        if (lower(s.name) == lower(name)) return &s;
    return nullptr;
}

std::string scenario_names() {
    std::string known;
    for (const auto& s : scenarios()) known += (known.empty() ? "" : ", ") + s.name;
    return known;
}

const Scenario& find_scenario(const std::string& name) {
    if (const Scenario* s = scenario_named(name)) return *s;
    throw Error("unknown scenario '" + name + "'; known scenarios: " + scenario_names() +
                " (flashsim scenario --list)");
}

}  // namespace sim
