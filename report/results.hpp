// report/results.hpp — where the recorded results live, and what a results file says about itself,
// as the command, the lessons and the app all read it.
//
// The one place in code that names the results folder. Its layout (results/README.md is the index):
// results/<card>/<kind>.json is the current measurement of one kind on one card (h200/bench.json,
// h100/decode.json, ...); results/archive/<date>/ keeps history, which no code reads.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace report {

// The results folder: $FLASHSIM_RESULTS when set; else `results` in the working directory when it is
// a folder; else the source tree's (compiled in).
std::string results_dir();

// The results folder of the source tree that holds `sibling_dir` (lessons/ -> lessons/../results);
// $FLASHSIM_RESULTS when set.
std::string results_dir_beside(const std::string& sibling_dir);

// The folder of a GPU preset's measurements ("H200" -> "h200", "H100-SXM" -> "h100"); "" for a
// preset no card of which has been measured here.
std::string card_folder(const std::string& preset);

// The current file of one kind on one card, under results_dir(): current_file("h200", "ceilings.json").
std::string current_file(const std::string& card, const std::string& kind);

// Whether `name` names a current file relative to the results folder: "<card>/<kind>.<ext>", both
// parts lower-case letters, digits and _ (no "..", no archive).
bool is_current_name(const std::string& name);

// The days (YYYY-MM-DD) of the bench calls a results file's rows come from: its "runs" list (rows
// merged from several calls by tools/results/merge.py), each day once, in the order the file lists
// them. Empty when the file has no runs. Entries that are not objects or have no date are skipped.
std::vector<std::string> run_days(const nlohmann::json& doc);

// Those days joined with " and " ("2026-11-29 and 2026-12-01"); without runs, the day of the file's
// own "date"; "?" when it has neither.
std::string run_dates(const nlohmann::json& doc);

// The same days as one span, first to last ("2026-11-29 to 2026-12-06"; one day alone when the
// calls fell on one day), so a lesson prints one date line per results file, never a list of days;
// without runs, the file's own day; "?" when it has neither.
std::string run_span(const nlohmann::json& doc);

}  // namespace report
