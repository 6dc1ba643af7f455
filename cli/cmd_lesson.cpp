// flashsim lesson — the lessons in the terminal.
//
//   flashsim lesson --list                 every lesson (number, id, title; load errors shown)
//   flashsim lesson ID                     step through: Enter for the next step, q to quit
//   flashsim lesson ID --all               print every step without waiting (for scripts)
//   flashsim lesson --all                  the whole course, every lesson in order
//   flashsim lesson ID --answer "k=v,..."  check an answer to the lesson's exercise
//   flashsim lesson --check [ID]           load every lesson (or the one named) and check its expectations
//   flashsim lesson --term NAME            a glossary entry (the app shows the same text)
// ID is a lesson's id or its number. --dir (or $FLASHSIM_LESSONS) picks the lessons directory;
// --file loads one lesson file directly (e.g. one being written).
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>

#include "lessons/lib/glossary.hpp"
#include "lessons/lib/lesson.hpp"
#include "cli/commands.hpp"
#include "report/report.hpp"

namespace {

struct LessonArgs {
    std::string id, dir, file, answer, term;
    bool list = false, all = false, check = false;
    bool answered = false;  // --answer was given (an empty answer is refused, not read as "no answer")
};

// Wrap paragraph lines to `width` columns; lines starting with a space are printed as they are.
std::string wrap(const std::string& text, size_t width = 88) {
    std::string out, line;
    std::stringstream ss(text);
    while (std::getline(ss, line)) {
        if (line.empty() || line[0] == ' ' || line[0] == '\t') {
            out += line + "\n";
            continue;
        }
        std::stringstream ws(line);
        std::string word, cur;
        size_t cols = 0;
        auto u8len = [](const std::string& w) {
            size_t n = 0;
            for (unsigned char c : w) n += (c & 0xC0) != 0x80;
            return n;
        };
        while (ws >> word) {
            const size_t wl = u8len(word);
            if (cols > 0 && cols + 1 + wl > width) {
                out += cur + "\n";
                cur.clear();
                cols = 0;
            }
            if (cols > 0) {
                cur += ' ';
                ++cols;
            }
            cur += word;
            cols += wl;
        }
        out += cur + "\n";
    }
    return out;
}

void print_step(const lessons::Lesson& l, size_t i) {
    const auto& s = l.steps[i];
    std::cout << "\n── " << l.number << "." << (i + 1) << "/" << l.steps.size() << "  " << s.title << "\n\n"
              << wrap(s.text);
    const auto& v = s.view;
    if (!v.panel.empty() && v.panel != "text") {
        std::cout << "   [app: " << v.panel;  // the view's name, as --panel takes it
        if (!v.config.empty()) std::cout << ", config " << v.config;
        if (!v.compare.empty()) {
            std::cout << ", comparing";
            for (const auto& c : v.compare) std::cout << " " << c;
        }
        if (v.step_from >= 0) std::cout << ", steps " << v.step_from << ".." << v.step_to;
        if (v.row >= 0) std::cout << ", row " << v.row;
        if (v.tile_row >= 0 || v.tile_col >= 0) std::cout << ", tile (" << v.tile_row << ", " << v.tile_col << ")";
        std::cout << "]\n";
    }
    if (!s.terms.empty()) {
        std::cout << "   [terms:";
        for (size_t k = 0; k < s.terms.size(); ++k) std::cout << (k ? ", " : " ") << s.terms[k];
        std::cout << " (flashsim lesson --term NAME)]\n";
    }
}

// `flashsim lesson --term NAME`: the glossary entry (the same text the app's "(?)" markers show).
int print_term(const std::string& term) {
    if (!lessons::glossary_has(term)) {
        std::string known;
        for (const auto& [k, v] : lessons::glossary_entries()) known += (known.empty() ? "" : ", ") + std::string(k);
        print_error("lesson", "no glossary entry '" + term + "' (known: " + known + ")");
        return 1;
    }
    std::cout << term << ": " << wrap(std::string(lessons::glossary(term)));
    return 0;
}

void print_exercise(const lessons::Lesson& l) {
    if (!l.exercise) return;
    std::cout << "\n── " << (l.exercise->predict.empty() ? "Exercise" : "Predict first") << "\n\n"
              << wrap(l.exercise->prompt);
    std::cout << "\nAnswer with: flashsim lesson " << l.id << " --answer \"";
    for (size_t i = 0; i < l.exercise->fields.size(); ++i)
        std::cout << (i ? "," : "") << l.exercise->fields[i] << "=...";
    std::cout << "\"\n";
}

void print_lesson(const lessons::Lesson& l, bool interactive);

// ID is a lesson's id or its number
bool named(const lessons::Lesson& l, const std::string& id) { return l.id == id || std::to_string(l.number) == id; }

// The files that may hold lesson ID, found from each file's header alone (nothing computed): the
// first whose id or number is ID, and any file before it whose header cannot be read and whose name
// holds ID (loading it reports what is wrong). `ids` collects the ids seen, for the refusal.
std::vector<std::string> files_named(const std::string& dir, const std::string& id, std::string& ids) {
    std::vector<std::string> out;
    for (const auto& f : lessons::lesson_files(dir)) {
        try {
            const lessons::Header h = lessons::read_header(f);
            ids += (ids.empty() ? "" : ", ") + h.id;
            if (h.id == id || std::to_string(h.number) == id) {
                out.push_back(f);
                break;
            }
        } catch (const lessons::LoadError&) {
            if (f.find(id) != std::string::npos) out.push_back(f);
        }
    }
    return out;
}

int run(const LessonArgs& a) {
    if (!a.term.empty()) return print_term(a.term);
    if (!a.file.empty() && !a.id.empty()) {
        print_error("lesson", "--file " + a.file + " names the lesson to load; leave out the id '" + a.id +
                                  "' (or drop --file to look it up)");
        return 1;
    }
    const std::string dir = a.dir.empty() ? lessons::lessons_dir() : a.dir;
    if (a.list || a.check) {
        // --file: that lesson alone, checked or listed (a load error is its line)
        std::vector<lessons::Loaded> all;
        if (!a.file.empty()) {
            all.push_back(lessons::load_file(a.file));
        } else if (!a.id.empty()) {  // only the lesson named (a file that does not load might be it: kept)
            std::string ids;
            for (const auto& f : files_named(dir, a.id, ids)) all.push_back(lessons::load_file(f));
            if (all.empty() && !lessons::lesson_files(dir).empty()) {
                print_error("lesson",
                            "no lesson '" + a.id + "' in " + dir + " (known: " + ids + "; see flashsim lesson --list)");
                return 1;
            }
        } else {
            all = lessons::load_all(dir);
        }
        if (all.empty()) {
            print_error("lesson", "no lesson files (*.toml) in " + dir);
            return 1;
        }
        int bad = 0;
        for (const auto& x : all) {
            if (!x.lesson) {
                std::cout << "  !!  " << x.error << "\n";
                ++bad;
                continue;
            }
            std::vector<std::string> fails;
            if (a.check) fails = lessons::check_expectations(*x.lesson);
            size_t n = 0;
            for (const auto& s : x.lesson->steps) n += s.expect.size();
            std::printf("%3lld  %-22s %s  (%zu steps%s)\n", static_cast<long long>(x.lesson->number),
                        x.lesson->id.c_str(), x.lesson->title.c_str(), x.lesson->steps.size(),
                        x.lesson->exercise ? ", exercise" : "");
            if (a.check) {
                std::printf("     %zu expectations: %s\n", n, fails.empty() ? "all hold" : "FAILED");
                for (const auto& f : fails) std::cout << "     " << f << "\n";
                bad += !fails.empty();
            }
        }
        return bad ? 1 : 0;
    }
    lessons::Lesson l;
    if (!a.file.empty()) {
        l = lessons::load_lesson(a.file);
    } else {
        if (a.id.empty() && a.all && !a.answered) {  // the whole course, in lesson order
            std::vector<lessons::Lesson> course;
            for (auto& x : lessons::load_all(dir)) {
                if (!x.lesson) {
                    print_error("lesson", x.error);
                    return 1;
                }
                course.push_back(std::move(*x.lesson));
            }
            std::stable_sort(course.begin(), course.end(),
                             [](const auto& x, const auto& y) { return x.number < y.number; });
            for (size_t i = 0; i < course.size(); ++i) {
                if (i) std::cout << "\n\n";
                print_lesson(course[i], false);
            }
            return 0;
        }
        if (a.id.empty()) {
            print_error("lesson", "name a lesson (flashsim lesson ID), use --list, or --all for the whole course");
            return 1;
        }
        bool found = false;
        std::string ids;
        for (const auto& f : files_named(dir, a.id, ids)) {
            lessons::Loaded x = lessons::load_file(f);
            if (!x.lesson) {  // a broken file only matters if it might be the one asked for
                print_error("lesson", x.error);
                return 1;
            }
            if (named(*x.lesson, a.id)) {
                l = std::move(*x.lesson);
                found = true;
                break;
            }
        }
        if (!found) {
            print_error("lesson",
                        "no lesson '" + a.id + "' in " + dir + " (known: " + ids + "; see flashsim lesson --list)");
            return 1;
        }
    }
    if (a.answered) {
        if (!l.exercise) {
            print_error("lesson", "lesson '" + l.id + "' has no exercise to answer");
            return 1;
        }
        std::map<std::string, std::string> ans;
        try {
            ans = lessons::parse_answer(a.answer);
        } catch (const lessons::LoadError& e) {  // the learner's words, without a file position
            print_error("lesson", "--answer: " + e.message +
                                      (l.exercise->predict.empty() ? "" : "; this lesson asks for value=NUMBER"));
            return 1;
        }
        const auto r = lessons::check_answer(l, ans);
        if (!r.valid) {  // not an answer at all: an error, on stderr, as every other bad input
            print_error("lesson", "--answer: " + r.message);
            return 1;
        }
        std::cout << r.message << "\n";
        return r.passed ? 0 : 3;
    }
    print_lesson(l, !a.all && isatty(STDIN_FILENO));
    return 0;
}

// One lesson, its steps in order (waiting for Enter between them when interactive).
void print_lesson(const lessons::Lesson& l, bool interactive) {
    std::cout << "Lesson " << l.number << ": " << l.title << "\n";
    if (!l.summary.empty()) std::cout << l.summary << "\n";
    // A prediction is asked before the steps that reveal its number; a design exercise comes last.
    const bool predict_first = l.exercise && !l.exercise->predict.empty();
    if (predict_first) print_exercise(l);
    for (size_t i = 0; i < l.steps.size(); ++i) {
        print_step(l, i);
        if (interactive && i + 1 < l.steps.size()) {
            std::cout << "\n[Enter: next step, q: quit] " << std::flush;
            std::string line;
            if (!std::getline(std::cin, line) || line == "q" || line == "Q") return;
        }
    }
    if (!predict_first) print_exercise(l);
}

}  // namespace

void register_lesson(CLI::App& app, int& rc) {
    auto a = std::make_shared<LessonArgs>();
    auto* cmd =
        app.add_subcommand("lesson", "Lessons: worked examples whose every number is computed by the simulator");
    cmd->add_option("id", a->id, "Lesson id or number (see --list)");
    cmd->add_flag("--list", a->list, "List the lessons");
    cmd->add_flag("--all", a->all, "Print every step without waiting for Enter");
    cmd->add_flag("--check", a->check,
                  "Load every lesson (or the one named) and check its expectations (exit 1 if any fails)");
    cmd->add_option("--answer", a->answer, "Answer the lesson's exercise, e.g. \"block_rows=64,block_cols=128\"")
        ->each([a](const std::string&) { a->answered = true; });
    cmd->add_option("--dir", a->dir, "Lessons directory (default: $FLASHSIM_LESSONS or the repo's lessons/)");
    cmd->add_option("--file", a->file, "Load this lesson file instead of looking up ID");
    cmd->add_option("--term", a->term, "Print a glossary term's entry, e.g. --term LSE");
    cmd->callback([a, &rc] {
        try {
            rc = run(*a);
        } catch (const lessons::LoadError& e) {
            print_error("lesson", e.what());
            rc = 1;
        } catch (const sim::Error& e) {
            print_error("lesson", e.what());
            rc = 1;
        }
    });
}
