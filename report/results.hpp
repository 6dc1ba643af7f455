// report/results.hpp — what the recorded bench results files (cuda/results/*.json) say about
// themselves, as the lessons and the app both print it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace report {

// The days (YYYY-MM-DD) of the bench calls a results file's rows come from: its "runs" list (rows
// merged from several calls by cuda/results/merge.py), each day once, in the order the file lists
// them. Empty when the file has no runs. Entries that are not objects or have no date are skipped.
std::vector<std::string> run_days(const nlohmann::json& doc);

// Those days joined with " and " ("2026-11-29 and 2026-12-01"); without runs, the day of the file's
// own "date"; "?" when it has neither.
std::string run_dates(const nlohmann::json& doc);

}  // namespace report
