// tests/cuda/gpu_cases.hpp — what the GPU suite did on this card: the cases it ran, the cases (and
// the parts of cases) the card cannot run, each with its reason, and a guard that no case passes
// with nothing checked.
//
// A case the card cannot run calls skip(reason) and returns; it prints "SKIPPED <case>: <reason>".
// A case that runs some of its variants calls not_run(part, reason) for each one it leaves out;
// it prints "NOT RUN <case> / <part>: <reason>". At the end, summarize() prints one line per card,
//
//   GPU summary, NVIDIA H100 80GB HBM3: 38 cases ran, 3 skipped, 5 parts not run, 0 empty
//
// then the skips by name, and returns non-zero when a case ran zero assertions without saying why
// (an "empty" case: it passed without testing anything).
#pragma once
#include <string>

namespace gpu_cases {

// The running case cannot run on this card: record it (by the case's name) and say why.
void skip(const std::string& reason);
// A part (a variant, a pairing) of the running case does not run on this card: record it and say why.
void not_run(const std::string& part, const std::string& reason);
// Print the summary for `device`; return 0, or 1 when a case ran empty.
int summarize(const std::string& device);

}  // namespace gpu_cases
