// report/ladder.hpp — the ladder of timing models (sim/ladder.hpp) as text and JSON: one line, one
// key, per rung, each named as docs/timing.md names it. Pure functions.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/ladder.hpp"

namespace report {

// "time, the ladder of models (docs/timing.md):" then one "predicted, <rung>: X ms" line a rung
// present, the headline marked; with `charges`, each rung's line is followed by what it charges.
std::string ladder_text(const sim::Ladder& l, bool charges = true);
// Sets j["predicted_ms"] (the headline), j["predicted_rung"] (its name), one "<key>_ms" a rung
// present, and j["ladder"]: [{rung, name, key, ms, charges, rates}] for every rung present.
void add_ladder_json(nlohmann::json& j, const sim::Ladder& l);
// A column head that names the rung: "ideal machine ms".
std::string rung_column(sim::Rung r);

}  // namespace report
