// flashsim softmax — the streamed (online) softmax of one row, block by block: the seeds' example.
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "report/report.hpp"

namespace {

std::vector<double> parse_list(const std::string& s, const std::string& what) {
    std::vector<double> v;
    for (const auto& item : split_items(s, what)) {
        size_t used = 0;
        double x = 0;
        try {
            x = std::stod(item, &used);
        } catch (const std::exception&) { used = 0; }
        if (used != item.size())
            throw sim::Error(what + ": '" + item + "' is not a number (give numbers separated by commas)");
        v.push_back(x);
    }
    return v;
}

// Values: a file with one row of V per line (numbers separated by commas or spaces), or rows
// separated by ';' on the command line ("1,0;0,1;...").
std::vector<std::vector<double>> parse_score_rows(const std::string& arg) {
    std::vector<std::vector<double>> rows;
    std::ifstream f(arg);
    std::string text;
    char sep = ';';
    if (f) {
        std::stringstream b;
        b << f.rdbuf();
        text = b.str();
        sep = '\n';
        // a binary file is refused by where its first non-text byte is (not echoed into the message)
        for (size_t i = 0; i < text.size(); ++i) {
            const auto c = static_cast<unsigned char>(text[i]);
            if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02x", c);
                throw sim::Error("--values: '" + arg + "' is not a text file (byte " + hex + " at offset " +
                                 std::to_string(i) + "); give one row of V per line, numbers separated by commas");
            }
        }
    } else if (arg.find_first_not_of("0123456789.,;-+eE ") != std::string::npos) {
        throw sim::Error("--values: '" + arg + "' is neither a readable file nor a list like 1,0;0,1");
    } else {
        text = arg;
    }
    std::stringstream ss(text);
    std::string line;
    while (std::getline(ss, line, sep)) {
        for (char& ch : line)
            if (ch == ' ' || ch == '\t') ch = ',';
        while (!line.empty() && (line.back() == ',' || line.back() == '\r')) line.pop_back();
        size_t start = line.find_first_not_of(',');
        if (start == std::string::npos) continue;
        std::string cleaned;
        for (size_t i = start; i < line.size(); ++i)
            if (!(line[i] == ',' && !cleaned.empty() && cleaned.back() == ',')) cleaned += line[i];
        rows.push_back(parse_list(cleaned, "--values"));
    }
    if (rows.empty())
        throw sim::Error("--values: '" + arg + "' holds no rows (" +
                         (std::filesystem::is_directory(arg) ? std::string("it is a folder") : std::string("empty")) +
                         "); give a file with one row of V per score, or rows like 1,0;0,1");
    return rows;
}

struct SoftmaxArgs {
    std::string scores = "1.4,3.9,0.7,2.2,4.6,1.1,3.1,0.3";
    int64_t block = 4;
    std::string values;
    std::string precision = "fp32";
    bool json = false;
};

}  // namespace

void register_softmax(CLI::App& app, int& rc) {
    auto a = std::make_shared<SoftmaxArgs>();
    auto* cmd = app.add_subcommand("softmax", "Online softmax of one row, block by block, beside the plain softmax");
    cmd->add_option("--scores", a->scores, "Comma-separated scores of one row")->capture_default_str();
    cmd->add_option("--block", a->block, "Scores per block")->capture_default_str();
    cmd->add_option("--values", a->values, "V: a file (one row per line) or rows like 1,0;0,1 (one row per score)");
    cmd->add_option("--precision", a->precision, "fp32 (what GPUs use) or fp64")->capture_default_str();
    cmd->add_flag("--json", a->json, "Print one JSON object");
    cmd->callback([a, &rc] {
        try {
            const auto scores = parse_list(a->scores, "--scores");
            const auto values = a->values.empty() ? std::vector<std::vector<double>>{} : parse_score_rows(a->values);
            sim::Precision prec;
            if (a->precision == "fp32")
                prec = sim::Precision::fp32;
            else if (a->precision == "fp64")
                prec = sim::Precision::fp64;
            else
                throw sim::Error("--precision must be fp32 or fp64, got '" + a->precision + "'");
            const auto s = sim::stream_softmax(scores, a->block, values, prec);
            if (a->json)
                std::cout << report::softmax_json(s).dump(2) << "\n";
            else
                std::cout << report::softmax_text(s);
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("softmax", e.what());
            rc = 1;
        }
    });
}
