// Smoke test of flashsim-app under Xvfb: every panel renders to a PNG that is not blank (pixel
// variance), consecutive lesson steps differ, every view renders at five window sizes, `--tour` opens
// and renders every step of every lesson (counted from the lesson files) in one process, at 1280x800
// and at 1920x1080 with 2x zoom, with no text cut by its window's, pane's or cell's edge; bad
// arguments exit non-zero with a one-line error. Exits 77 (ctest: skipped) when Xvfb is not
// installed. One Xvfb server serves every run of the app: the exit status checked is the app's own
// (xvfb-run's is its cleanup's too: a run once failed with xvfb-run's exit 5, "problem while
// cleaning up temporary directory", after the app had exited 1 as expected).
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lessons/lib/lesson.hpp"
#include "tests/viz/app_harness.hpp"

using namespace app_test;

namespace {

const auto started = std::chrono::steady_clock::now();

// seconds since the test started, printed after each part (where the time goes under sanitizers)
void lap(const char* part) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("time: %s done at %.0f s\n", part, s);
}

}  // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const std::string app = FLASHSIM_APP_BIN;
    const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "flashsim_smoke";
    fs::create_directories(dir);
    // FLASHSIM_SMOKE_SAMPLE=K > 1: the sanitizer build's sampled run (tests/viz/CMakeLists.txt), read once
    const char* sample_env = std::getenv("FLASHSIM_SMOKE_SAMPLE");
    const int sample_every = sample_env ? std::max(1, std::atoi(sample_env)) : 1;
    const bool sampled = sample_every > 1;
    // The exactness view computes the default problem (N = 8,192, d = 128) for real: seconds in a
    // release build, far longer in the sanitizer build at -O0, in each of the five --panel all runs
    // below. This tour checks that views render, not those numbers (tests/viz/test_exact.cpp does),
    // so it holds the view to the smaller problems of the lessons' exactness steps.
    setenv("FLASHSIM_EXACT_LIMIT", "268435456", 1);

    // bad arguments: refused before any window opens
    for (const char* bad : {"--panel bogus", "--size 12", "--step 0", "--screenshot out.bmp", "--lesson no-such-lesson",
                            "--tour --lesson 2", "--tour --screenshot out.png"}) {
        const Run r = run(app + " " + bad);
        check(r.rc != 0 && r.out.find("error") != std::string::npos && r.out.find('\n') == r.out.size() - 1,
              std::string("refuses '") + bad + "' with one line: " + r.out.substr(0, r.out.find('\n')));
    }
    {  // no display: one line, exit 1, no crash
        const Run r = run("env -u DISPLAY -u WAYLAND_DISPLAY " + app + " --frames 1");
        check(r.rc == 1 && r.out.find("cannot open a window") != std::string::npos &&
                  r.out.find('\n') == r.out.size() - 1,
              "without a display: one line and exit 1: " + r.out.substr(0, r.out.find('\n')));
    }
    if (run("command -v Xvfb").rc != 0) {
        std::printf("skipped: Xvfb is not installed (apt install xvfb)\n");
        return failures ? 1 : 77;
    }
    const Xvfb server(dir);
    check(!server.display().empty(), "Xvfb started (log: " + (dir / "xvfb.log").string() + ")");
    if (server.display().empty()) return 1;
    auto shot = [&](const std::string& name, const std::string& args, const std::string& env = "") {
        const std::string png = (dir / (name + ".png")).string();
        fs::remove(png);
        const Run r = run(env + app + " --size 1280x800 --screenshot " + png + " " + args);
        check(r.rc == 0, name + ": exit 0 (" + std::to_string(r.rc) + ")" + (r.rc ? " " + r.out : ""));
        const Image im = load(png);
        check(im.w == 1280 && im.h == 800, name + ": PNG is 1280x800");
        const double var = im.px.empty() ? 0 : variance(im);
        check(var > 200.0, name + ": not blank (pixel variance " + std::to_string(var) + ")");
        return im;
    };
    // One process a view (--panel NAME). The sanitizer build's sampled run (FLASHSIM_SMOKE_SAMPLE=K)
    // takes every K-th view this way; every view still renders under it, in the --panel all runs below.
    const char* const one_by_one[] = {"memory", "compare",  "scores", "timeline", "softmax",
                                      "charts", "measured", "ring",   "decoding", "roofline"};
    for (size_t i = 0; i < std::size(one_by_one); i += static_cast<size_t>(sample_every))
        shot(std::string("panel_") + one_by_one[i], std::string("--panel ") + one_by_one[i]);
    lap("every panel");
    // The course as the lesson files have it, loaded by the lessons library from the directory the
    // app reads (passed to it below): how many lessons, how many steps each, what each step shows.
    std::string lessons_dir;
    std::vector<lessons::Loaded> course;
    try {
        lessons_dir = lessons::lessons_dir();
        course = lessons::load_all(lessons_dir);
    } catch (const std::exception& e) { check(false, std::string("the lessons directory: ") + e.what()); }
    // FLASHSIM_SMOKE_SAMPLE=K (the sanitizer build's setting, tests/viz/CMakeLists.txt): the tour below
    // takes every K-th lesson file, the first always, from a folder of links to them; the results stay
    // the source tree's (FLASHSIM_RESULTS). The Release build's run takes every lesson.
    if (sampled && !course.empty()) {
        const fs::path sample = dir / "sample_lessons";
        fs::remove_all(sample);
        fs::create_directories(sample);
        std::vector<lessons::Loaded> kept;
        for (size_t i = 0; i < course.size(); i += static_cast<size_t>(sample_every)) {
            const fs::path file(course[i].file);
            fs::create_symlink(fs::absolute(file), sample / file.filename());
            kept.push_back(course[i]);
        }
        setenv("FLASHSIM_RESULTS", (fs::path(lessons_dir) / ".." / "results").lexically_normal().c_str(), 1);
        std::printf("smoke: the tour takes %zu of %zu lessons (FLASHSIM_SMOKE_SAMPLE=%d)\n", kept.size(), course.size(),
                    sample_every);
        lessons_dir = sample.string();
        course = std::move(kept);
    }
    const std::string in_course = "FLASHSIM_LESSONS='" + lessons_dir + "' ";
    // consecutive lesson steps of the first lesson must look different (its first four at most)
    Image prev;
    const int first_steps = course.empty() || !course[0].lesson ? 0 : static_cast<int>(course[0].lesson->steps.size());
    check(first_steps >= 2, "lesson 1 has steps to compare (" + std::to_string(first_steps) + ")");
    // (the sampled run: its first two)
    for (int s = 1; s <= std::min(sampled ? 2 : 4, first_steps); ++s) {
        const Image im = shot("lesson1_step" + std::to_string(s), "--lesson 1 --step " + std::to_string(s), in_course);
        if (!prev.px.empty()) {
            const double f = differing(prev, im);
            check(f > 0.005, "lesson 1: step " + std::to_string(s) + " differs from step " + std::to_string(s - 1) +
                                 " (" + std::to_string(100 * f) + "% of pixels)");
        }
        prev = im;
    }
    lap("lesson 1's steps");
    // The whole course in one process: --tour opens every step of every lesson as Next does, renders
    // it and prints "tour: lesson ID step K/N view PANEL". What it must have shown comes from the
    // lesson files (`course`), not from a number written here. It also reads each step's frame back
    // glyph by glyph and prints "tour: clipped ..." for a line of text cut by the edge of its window,
    // pane or cell (viz/cut_text.hpp): none may be, at 1280x800 and at 1920x1080 with 2x zoom.
    // (the sampled run: the second only; clipping depends on the layout, not on the build)
    std::vector<const char*> tour_sizes{"--size 1280x800", "--size 1920x1080 --zoom 2"};
    if (sampled) tour_sizes.erase(tour_sizes.begin());
    for (const char* size : tour_sizes) {
        int expected = 0;
        for (const auto& x : course) {
            check(x.lesson.has_value(), "lesson file loads: " + x.file + (x.error.empty() ? "" : ": " + x.error));
            if (x.lesson) expected += static_cast<int>(x.lesson->steps.size());
        }
        const size_t least = sampled ? 4 : 12;
        check(course.size() >= least && expected >= 3 * static_cast<int>(course.size()),
              std::to_string(course.size()) + " lessons of " + std::to_string(expected) + " steps in " + lessons_dir);
        const std::string at = std::string(" at ") + size;
        const Run r = run(in_course + app + " " + size + " --tour");
        check(r.rc == 0, "--tour" + at + ": exit 0 (" + std::to_string(r.rc) + ")" + (r.rc ? " " + r.out : ""));
        std::set<std::string> shown;  // "ID step K/N view PANEL" as printed
        int lines = 0, cut = 0;
        std::string first_cut;
        std::istringstream in(r.out);
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("tour: lesson ", 0) == 0) {
                ++lines;
                shown.insert(line.substr(13));
            }
            if (line.rfind("tour: clipped ", 0) == 0 && cut++ == 0) first_cut = line;
        }
        check(cut == 0,
              "--tour" + at + ": no text cut (" + std::to_string(cut) + " lines, the first: " + first_cut + ")");
        for (const auto& x : course) {
            if (!x.lesson) continue;
            const lessons::Lesson& l = *x.lesson;
            const size_t n = l.steps.size();
            int missing = 0;
            std::string first_missing;
            for (size_t k = 0; k < n; ++k) {
                // the step's own view when it names one; a "text" step keeps the view before it
                const std::string& p = l.steps[k].view.panel;
                const std::string head = l.id + " step " + std::to_string(k + 1) + "/" + std::to_string(n) + " view ";
                const auto it = shown.lower_bound(head);
                const bool ok = it != shown.end() && it->rfind(head, 0) == 0 &&
                                (p == "text" ? it->find(" FAILED") == std::string::npos : *it == head + p);
                if (!ok && missing++ == 0) first_missing = head + (p == "text" ? "(any)" : p);
            }
            check(missing == 0, "--tour" + at + " rendered all " + std::to_string(n) + " steps of lesson " + l.id +
                                    (missing ? ", not " + first_missing : ""));
        }
        check(lines == expected, "--tour" + at + " printed one line a step: " + std::to_string(lines) + " lines, " +
                                     std::to_string(expected) + " steps in the lesson files");
        const std::string summary = "tour: rendered " + std::to_string(expected) + " of " + std::to_string(expected) +
                                    " steps of " + std::to_string(course.size()) + " lessons";
        check(r.out.find(summary + "\n") != std::string::npos, "--tour's summary" + at + ": " + summary);
        lap(("the tour" + at).c_str());
    }
    // a lesson file that does not load: the app still opens and shows the error in the lesson's place
    {
        const fs::path bad = dir / "bad_lessons";
        fs::create_directories(bad);
        FILE* f = std::fopen((bad / "01-broken.toml").c_str(), "w");
        if (f) {
            std::fputs("id = \"broken\"\ntitle = [unclosed\n", f);
            std::fclose(f);
        }
        shot("broken_lesson", "", "FLASHSIM_LESSONS='" + bad.string() + "' ");
        // the tour says which lesson it could not open, and fails
        const Run r = run("FLASHSIM_LESSONS='" + bad.string() + "' " + app + " --tour");
        check(r.rc == 1 && r.out.find("tour: lesson ") != std::string::npos &&
                  r.out.find("01-broken.toml FAILED: failed to load") != std::string::npos &&
                  r.out.find("rendered 0 of 1 steps") != std::string::npos,
              "--tour over a lesson that does not load: exit 1 and names it (" + std::to_string(r.rc) + ")" +
                  (r.rc != 1 ? " " + r.out : ""));
    }
    lap("a lesson that does not load");
    // every view at every window size from a small laptop to a 1440p monitor: one process a size
    // renders every view (--panel all); a crash (e.g. a chart too narrow for its labels) fails
    // (the sanitizer build's sampled run, FLASHSIM_SMOKE_SAMPLE: the smallest and the largest)
    const std::vector<const char*> sizes =
        sampled ? std::vector<const char*>{"640x400", "2560x1440"}
                : std::vector<const char*>{"640x400", "800x600", "1280x800", "1920x1080", "2560x1440"};
    for (const char* size : sizes) {
        const std::string base = (dir / (std::string("size_") + size + ".png")).string();
        const std::string stem = base.substr(0, base.size() - 4);
        const Run r = run(app + " --size " + size + " --panel all --frames 3 --screenshot " + base);
        check(r.rc == 0, std::string("all views at ") + size + ": exit 0 (" + std::to_string(r.rc) + ")" +
                             (r.rc ? " " + r.out : ""));
        int w = 0, h = 0;
        std::sscanf(size, "%dx%d", &w, &h);
        for (const char* p : {"memory", "compare", "scores", "timeline", "softmax", "charts", "measured", "ring",
                              "exact", "footprint", "decoding", "roofline"}) {
            const Image im = load(stem + "-" + p + ".png");
            check(im.w == w && im.h == h && variance(im) > 200.0,
                  std::string(p) + " at " + size + ": a " + size + " PNG, not blank");
        }
    }
    lap("every view at every size");
    // animation steps of one view differ too
    const Image a = shot("memory_step0", "--panel memory --anim-step 0");
    const Image b = shot("memory_step5", "--panel memory --anim-step 5");
    check(differing(a, b) > 0.001, "memory view: step 5 differs from step 0");
    // the backward pass draws its own tensors (dO, dQ, dK, dV, D) and its own steps
    const Image c = shot("memory_backward_step5", "--panel memory --pass backward --anim-step 5");
    check(differing(b, c) > 0.01, "memory view: the backward's step 5 differs from the forward's");
    // the score matrix fills as the sweep goes on
    const Image d = shot("scores_step0", "--panel scores --anim-step 0");
    const Image e = shot("scores_step40", "--panel scores --anim-step 40");
    check(differing(d, e) > 0.005, "score matrix: step 40 differs from step 0");
    lap("the animation steps");
    std::printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
