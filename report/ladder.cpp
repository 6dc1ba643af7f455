// report/ladder.cpp — the ladder printers.
#include "report/ladder.hpp"

#include <cmath>
#include <cstdio>

namespace report {

std::string ladder_text(const sim::Ladder& l, bool charges) {
    std::string s = "time, the ladder of models (docs/timing.md):\n";
    const sim::RungTime& head = l.headline();
    for (const auto& r : l.rungs) {
        if (!r.present) continue;
        const std::string label = "predicted, " + std::string(sim::rung_name(r.rung)) + ":";
        std::string what = r.rates;
        if (r.rung == sim::Rung::this_kernel) what = l.kernel_name + "'s kernel model; " + what;
        char buf[512];
        std::snprintf(buf, sizeof buf, "  %d. %-26s %10.4f ms%s  (%s)\n", static_cast<int>(r.rung) + 1, label.c_str(),
                      r.ms, &r == &head ? " <- headline" : "", what.c_str());
        s += buf;
        if (charges) s += "       charges " + std::string(sim::rung_charges(r.rung)) + "\n";
    }
    if (l.at(sim::Rung::this_kernel).present) s += "  where the time goes: this kernel's components, above\n";
    return s;
}

void add_ladder_json(nlohmann::json& j, const sim::Ladder& l) {
    const sim::RungTime& head = l.headline();
    auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
    j["predicted_ms"] = head.present ? num(head.ms) : nlohmann::json(nullptr);
    j["predicted_rung"] =
        head.present ? nlohmann::json(std::string(sim::rung_name(head.rung))) : nlohmann::json(nullptr);
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : l.rungs) {
        if (!r.present) continue;
        j[std::string(sim::rung_key(r.rung)) + "_ms"] = num(r.ms);
        a.push_back({{"rung", static_cast<int>(r.rung) + 1},
                     {"name", sim::rung_name(r.rung)},
                     {"key", sim::rung_key(r.rung)},
                     {"ms", num(r.ms)},
                     {"charges", sim::rung_charges(r.rung)},
                     {"rates", r.rates}});
    }
    j["ladder"] = a;
}

std::string rung_column(sim::Rung r) { return std::string(sim::rung_name(r)) + " ms"; }

}  // namespace report
