#include "report/results.hpp"

#include <algorithm>

namespace report {

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
            if (const auto d = doc.find("date"); d != doc.end() && d->is_string()) return d->get<std::string>().substr(0, 10);
        return "?";
    }
    std::string dates;
    for (const auto& day : days) {
        if (!dates.empty()) dates += " and ";
        dates += day;
    }
    return dates;
}

}  // namespace report
