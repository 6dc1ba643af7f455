// report/kernel_report.hpp — the kernel model's inputs and outputs as text and JSON: measured
// ceilings read from a `flashsim bench --ceilings --json` file (results/h200/ceilings.json),
// and a kernel prediction with "where the time goes".
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/kernel_model.hpp"

namespace report {

// Reads a ceilings file (throws sim::Error with one line: missing file, bad JSON, a ceiling
// missing or not positive, measured on another device than the preset). dtype picks the bf16 or
// fp16 tensor-core rows. The library GEMM rate is the preset's measured one when it has one, else
// the wgmma microbenchmark's.
sim::KernelRates read_ceilings_file(const std::string& path, const sim::Machine& m, sim::DType dtype);
// The same from parsed JSON; `where` names it in errors.
sim::KernelRates ceilings_from_json(const nlohmann::json& doc, const std::string& where, const sim::Machine& m,
                                    sim::DType dtype);
// The recorded ceilings file for a preset's card (results/<card>/ceilings.json through
// report::current_file), "" when the card has none recorded (the datasheet then serves, said by the caller).
std::string default_ceilings_file(const sim::Machine& m);
// The measured rates for the preset: from `file` when given, else from its card's recorded file;
// nullopt when neither exists. Throws sim::Error when a file is named (or recorded) but missing or
// malformed. The one lookup the command (`--ceilings measured`, the bench's predictions) and the app use.
std::optional<sim::KernelRates> measured_rates(const sim::Machine& m, sim::DType dtype, const std::string& file = "");
// Ceilings for a card with no recorded file of its own, estimated (sim::estimated_rates) from the
// recorded file of another preset of the same architecture (the H200's for the H100 and the other
// way round); nullopt when no such preset has one.
std::optional<sim::KernelRates> estimated_rates(const sim::Machine& m, sim::DType dtype);
// Which ceilings the kernel model is given: "measured" (the card's own recorded file), "estimated"
// (another card's of its architecture, scaled: estimated_rates, even where the card has its own),
// "datasheet", or "auto" (measured where recorded, else estimated where possible, else datasheet).
struct ChosenRates {
    sim::KernelRates rates;
    std::string kind;  // measured, estimated or datasheet: what was given
};
// Throws sim::Error for an unknown choice, or when the one asked for cannot be had (no file recorded
// for `measured`, no measured card of the architecture for `estimated`).
ChosenRates choose_rates(const sim::Machine& m, sim::DType dtype, const std::string& choice);
// Whether `choice` is one choose_rates takes (auto, measured, estimated, datasheet).
bool is_rates_choice(const std::string& choice);
// The preset with the measured rates in its measured fields (HBM copy, L2, shared memory, exp),
// so that the step-level timing model of `--ceilings measured` uses them too.
sim::Machine with_measured(const sim::Machine& m, const sim::KernelRates& r);

nlohmann::json kernel_prediction_json(const sim::KernelPrediction& k);
std::string kernel_prediction_text(const sim::KernelPrediction& k);

}  // namespace report
