#include "cli/ceilings.hpp"

#include <filesystem>

#include "report/kernel_report.hpp"

std::string default_ceilings_file(const sim::Machine& m) {
    if (m.name != "H200") return "";
    const std::string rel = "cuda/results/h200_ceilings.json";
    if (std::filesystem::exists(rel)) return rel;
#ifdef FLASHSIM_SOURCE_DIR
    const std::string src = std::string(FLASHSIM_SOURCE_DIR) + "/" + rel;
    if (std::filesystem::exists(src)) return src;
#endif
    return rel;  // reading it then says that it is missing
}

std::optional<sim::KernelRates> measured_rates(const sim::Machine& m, sim::DType dtype, const std::string& file) {
    const std::string path = file.empty() ? default_ceilings_file(m) : file;
    if (path.empty()) return std::nullopt;
    return report::read_ceilings_file(path, m, dtype);
}

