// sim/knobs.hpp — every FLASHSIM_* environment variable the code reads, as one table.
//
//   sim::knobs()          ──► the table: name, values, default, constraints, what it teaches, who reads it
//   sim::knob("NAME")     ──► getenv("NAME"), for a name in the table only (any other is a programming
//                             error and throws std::logic_error, so a new variable cannot skip the table)
//   sim::knob_settings()  ──► the knobs set in this process, name -> value (what a results row records)
//
// The kernels (cuda/), the command (cli/), the app (viz/) and the lessons read their variables
// through knob(); `flashsim bench knobs` and docs/knobs.md print the table. Each reader still checks
// its own values and their dependencies (flash2h's grid refuses a changed schedule, ...) and says
// what to unset. It lives in sim/ only because every layer can include sim/: it reads no file.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sim {

struct Knob {
    std::string_view name;
    std::string_view values;       // what it takes, e.g. "overlapped | plain"
    std::string_view fallback;     // what runs when it is unset
    std::string_view constraints;  // what it needs of the others; empty: none
    std::string_view teaches;      // what turning it shows
    std::string_view reader;       // the file that reads it
};

const std::vector<Knob>& knobs();
// The table's row for `name`, or nullptr.
const Knob* find_knob(std::string_view name);
// getenv(name) for a knob of the table (nullptr when unset); throws std::logic_error for any other name.
const char* knob(std::string_view name);
// Knobs set (non-empty) in this process's environment, name -> value.
std::map<std::string, std::string> knob_settings();
// The table as Markdown (docs/knobs.md) or as text for a terminal (`flashsim bench knobs`).
std::string knobs_markdown();
std::string knobs_text();

}  // namespace sim
