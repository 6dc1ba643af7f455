#include "report/results.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace report {

namespace fs = std::filesystem;

std::string results_dir() {
    if (const char* env = std::getenv("FLASHSIM_RESULTS"); env && *env) return env;
    std::error_code ec;
    if (fs::is_directory("results", ec)) return "results";
#ifdef FLASHSIM_SOURCE_DIR
    return std::string(FLASHSIM_SOURCE_DIR) + "/results";
#else
    return "results";
#endif
}

std::string results_dir_beside(const std::string& sibling_dir) {
    if (const char* env = std::getenv("FLASHSIM_RESULTS"); env && *env) return env;
    const fs::path dir = sibling_dir.empty() ? fs::path(".") : fs::path(sibling_dir);
    return (dir / ".." / "results").lexically_normal().string();
}

std::string card_folder(const std::string& preset) {
    if (preset == "H200") return "h200";
    if (preset == "H100-SXM") return "h100";
    return "";
}

std::string current_file(const std::string& card, const std::string& kind) {
    return (fs::path(results_dir()) / card / kind).string();
}

bool is_current_name(const std::string& name) {
    const auto slash = name.find('/');
    if (slash == std::string::npos || slash == 0 || name.find('/', slash + 1) != std::string::npos) return false;
    const auto dot = name.rfind('.');
    if (dot == std::string::npos || dot < slash + 2 || dot + 1 == name.size()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || i == slash || i == dot;
        if (!ok) return false;
    }
    return name.substr(0, slash) != "archive";
}

std::vector<std::string> run_days(const nlohmann::json& doc) {
    std::vector<std::string> days;
    if (!doc.is_object()) return days;
    const auto runs = doc.find("runs");
    if (runs == doc.end() || !runs->is_array()) return days;
    for (const auto& run : *runs) {
        if (!run.is_object()) continue;
        const auto date = run.find("date");
        if (date == run.end() || !date->is_string()) continue;
        const std::string day = date->get<std::string>().substr(0, 10);
        if (std::find(days.begin(), days.end(), day) == days.end()) days.push_back(day);
    }
    return days;
}

std::string run_dates(const nlohmann::json& doc) {
    const std::vector<std::string> days = run_days(doc);
    if (days.empty()) {
        if (doc.is_object())
            if (const auto d = doc.find("date"); d != doc.end() && d->is_string())
                return d->get<std::string>().substr(0, 10);
        return "?";
    }
    std::string dates;
    for (const auto& day : days) {
        if (!dates.empty()) dates += " and ";
        dates += day;
    }
    return dates;
}

std::string run_span(const nlohmann::json& doc) {
    std::vector<std::string> days = run_days(doc);
    if (days.empty()) return run_dates(doc);
    std::sort(days.begin(), days.end());  // YYYY-MM-DD sorts as time does
    return days.front() == days.back() ? days.front() : days.front() + " to " + days.back();
}

}  // namespace report
