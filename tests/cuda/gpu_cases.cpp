// tests/cuda/gpu_cases.cpp — the GPU suite's record of what ran and what was skipped (gpu_cases.hpp).
// A doctest listener sees each case start and end, with the number of assertions it made.
#include "tests/cuda/gpu_cases.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace gpu_cases {
namespace {

struct CaseRecord {
    int asserts = 0;
    bool ended = false;
    std::vector<std::string> skips;    // the whole case: why it did not run
    std::vector<std::string> not_run;  // parts of it: "part: why"
};

struct Book {
    std::string current;
    std::vector<std::string> order;
    std::map<std::string, CaseRecord> cases;
    CaseRecord& at(const std::string& name) {
        auto [it, fresh] = cases.try_emplace(name);
        if (fresh) order.push_back(name);
        return it->second;
    }
};
Book& book() {
    static Book b;
    return b;
}

struct Listener : doctest::IReporter {
    explicit Listener(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData& tc) override {
        book().current = tc.m_name;
        book().at(tc.m_name);
    }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats& s) override {
        CaseRecord& r = book().at(book().current);
        r.asserts = s.numAssertsCurrentTest;
        r.ended = true;
    }
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

void skip(const std::string& reason) {
    book().at(book().current).skips.push_back(reason);
    std::printf("SKIPPED %s: %s\n", book().current.c_str(), reason.c_str());
    std::fflush(stdout);
}

void not_run(const std::string& part, const std::string& reason) {
    book().at(book().current).not_run.push_back(part + ": " + reason);
    std::printf("NOT RUN %s / %s: %s\n", book().current.c_str(), part.c_str(), reason.c_str());
    std::fflush(stdout);
}

int summarize(const std::string& device) {
    int ran = 0, skipped = 0, parts = 0;
    std::vector<std::string> empty;
    for (const auto& name : book().order) {
        const CaseRecord& r = book().cases.at(name);
        if (!r.ended) continue;
        parts += static_cast<int>(r.not_run.size());
        if (r.asserts == 0 && !r.skips.empty())
            ++skipped;
        else if (r.asserts == 0)
            empty.push_back(name);
        else
            ++ran;
    }
    std::printf("GPU summary, %s: %d cases ran, %d skipped, %d parts not run, %zu empty\n", device.c_str(), ran,
                skipped, parts, empty.size());
    for (const auto& name : book().order) {
        const CaseRecord& r = book().cases.at(name);
        for (const auto& s : r.skips) std::printf("  skipped  %s: %s\n", name.c_str(), s.c_str());
        for (const auto& s : r.not_run) std::printf("  not run  %s / %s\n", name.c_str(), s.c_str());
    }
    for (const auto& name : empty)
        std::printf(
            "  EMPTY    %s: passed with zero assertions and no recorded skip (a case must check "
            "something or say why it cannot)\n",
            name.c_str());
    std::fflush(stdout);
    return empty.empty() ? 0 : 1;
}

}  // namespace gpu_cases

DOCTEST_REGISTER_LISTENER("gpu_cases", 1, gpu_cases::Listener);
