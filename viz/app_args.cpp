#include "viz/app_args.hpp"

#include "viz/ring_view.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

namespace viz {

std::string parse_app_args(int argc, const char* const* argv, AppArgs& a, bool* help, std::string* help_text) {
    CLI::App app{"flashsim-app: watch attention move bytes between HBM and SRAM", "flashsim-app"};
    std::string panel, size, algo, pass;
    int step = 0;
    app.add_option("--lesson", a.lesson, "Lesson id or number to open (default: the first)");
    app.add_option("--step", step, "Lesson step to open, 1-based");
    app.add_option(
        "--panel", panel,
        "View: memory, compare, scores, timeline, softmax, charts, measured, ring, exact, footprint, decoding, "
        "roofline; all (with "
        "--screenshot F.png: one PNG a view, "
        "F-memory.png, ...)");
    app.add_option("--answer", a.answer,
                   "An answer to the lesson's exercise, checked as if typed in its field (with --lesson); a "
                   "design's answer opens its run beside the reference");
    app.add_option("--size", size, "Window size WxH (default 1280x800)");
    app.add_option("--screenshot", a.screenshot, "Render, write this PNG, exit 0");
    app.add_option("--frames", a.frames, "Frames to render before the screenshot or exit");
    app.add_flag("--report-frame-time", a.report_frame_time, "Print frame-time statistics at exit");
    app.add_option("--seq,-n", a.seq, "Sequence length N");
    app.add_option("--head-dim,-d", a.head_dim, "Head dimension d");
    app.add_option("--algo", algo, "Algorithm the memory view shows: standard, flash1, flash2");
    app.add_flag("--causal", a.causal, "Causal mask");
    app.add_option("--pass", pass, "Pass the views walk: forward, backward or both (forward, then backward)");
    app.add_option("--anim-step", a.anim_step, "Animation step to show");
    std::string layout;
    int64_t gpus = 0;
    app.add_option("--gpus", gpus, "Ring view: GPUs in the ring (1 to 64; --pass sets its pass too)");
    app.add_option("--layout", layout, "Ring view: balanced or contiguous");
    app.add_flag("--play", a.play, "Start playing the animation");
    app.add_option("--speed", a.speed, "Animation speed, steps per second");
    app.add_option("--results", a.results_dir, "Folder of measured results (default results)");
    app.add_flag("--show-keys", a.show_keys, "Open with the keyboard help shown (as F1 does)");
    app.add_option("--font-size", a.font_px, "Font size in pixels before the monitor's scale (default 17)");
    app.add_option("--zoom", a.zoom, "Zoom, 1 to 2 (as Ctrl +/- sets it while running)");
    app.add_flag("--tour", a.tour,
                 "Open every step of every lesson in turn (as Next does), render --frames frames of each (default 2), "
                 "print a line a step; exit 1 if a step fails");
    app.add_option("--contact-sheet", a.contact_sheet,
                   "With --tour: write one JPEG a lesson into this folder, every step's frame in step order, three a "
                   "row (lesson-01-ID.jpg, ...)");
    app.add_option("--trace", a.trace,
                   "A lab trace (TileMachine.save_trace) to replay in the memory view beside the built-in algorithm "
                   "at the same problem and tiles; with --screenshot, --anim-step picks its step (from 0)");
    if (help) *help = false;
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        if (help) *help = true;
        if (help_text) *help_text = app.help();
        return {};
    } catch (const CLI::ParseError& e) { return std::string(e.what()) + " (see flashsim-app --help)"; }
    if (app.count("--step")) {
        if (step < 1) return "--step counts lesson steps from 1, got " + std::to_string(step);
        a.lesson_step = step - 1;
        a.lesson_step_given = true;
    }
    if (panel == "all") {
        if (a.screenshot.empty()) return "--panel all needs --screenshot FILE.png (it writes one PNG a view)";
        a.all_panels = true;
        a.panel = Panel::memory;
    } else if (!panel.empty()) {
        a.panel = parse_panel(panel);
        if (!a.panel)
            return "--panel must be one of memory, compare, scores, timeline, softmax, charts, measured, ring, exact, "
                   "footprint, decoding, roofline; "
                   "got '" +
                   panel + "'";
    }
    if (!size.empty()) {
        int w = 0, h = 0;
        char extra = 0;
        if (std::sscanf(size.c_str(), "%dx%d%c", &w, &h, &extra) != 2 || w < 640 || h < 400 || w > 8192 || h > 8192)
            return "--size must be WIDTHxHEIGHT between 640x400 (below it the views have no room beside the lesson) "
                   "and 8192x8192, e.g. 1280x800; got '" +
                   size + "'";
        a.width = w;
        a.height = h;
    }
    if (!algo.empty()) {
        a.algo = sim::parse_algo(algo);
        if (!a.algo) return "--algo must be standard, flash1 or flash2; got '" + algo + "'";
    }
    if (!pass.empty()) {
        a.pass = sim::parse_pass(pass);
        if (!a.pass) return "--pass must be forward, backward or both; got '" + pass + "'";
    }
    if (app.count("--gpus")) {
        if (gpus < 1 || gpus > kRingMaxGpus)
            return "--gpus must be 1 to " + std::to_string(kRingMaxGpus) + " (the ring view draws at most " +
                   std::to_string(kRingMaxGpus) + " GPUs; flashsim ring takes up to 1,024); got " +
                   std::to_string(gpus);
        a.gpus = gpus;
    }
    if (app.count("--anim-step") && a.anim_step < 0)
        return "--anim-step counts the animation's steps from 0; got " + std::to_string(a.anim_step);
    if (!layout.empty()) {
        a.layout = sim::parse_enum<sim::RingLayout>(layout);
        if (!a.layout) return "--layout must be balanced or contiguous; got '" + layout + "'";
    }
    if (app.count("--frames") && a.frames < 1) return "--frames must be at least 1, got " + std::to_string(a.frames);
    if (a.tour) {
        // the tour chooses the lesson, step, view and parameters itself, step by step
        for (const char* f :
             {"--lesson", "--step", "--panel", "--screenshot", "--anim-step", "--play", "--seq", "--head-dim", "--algo",
              "--causal", "--pass", "--gpus", "--layout", "--trace", "--answer"})
            if (app.count(f))
                return std::string("--tour opens every lesson step itself; it cannot be combined with ") + f;
        if (a.frames < 0) a.frames = 2;
    }
    if (!a.contact_sheet.empty() && !a.tour) return "--contact-sheet needs --tour: the sheets show the tour's steps";
    if (!a.answer.empty() && a.lesson.empty()) return "--answer needs --lesson: the lesson whose exercise it answers";
    if (!a.screenshot.empty() && a.frames < 0) a.frames = 3;  // let the layout settle
    if (app.count("--speed") && !(a.speed >= kMinSpeed && a.speed <= kMaxSpeed)) {
        char got[32];
        std::snprintf(got, sizeof got, "%g", a.speed);
        return std::string("--speed must be between 0.25 and 200 steps per second, got ") + got;
    }
    if (app.count("--font-size") && !(a.font_px >= 8 && a.font_px <= 64))
        return "--font-size must be between 8 and 64 pixels";
    if (app.count("--zoom") && !(a.zoom >= 1.0 && a.zoom <= 2.0)) return "--zoom must be between 1 and 2";
    if (!a.screenshot.empty()) {
        const auto& s = a.screenshot;
        if (s.size() < 5 || s.substr(s.size() - 4) != ".png")
            return "--screenshot needs a file name ending in .png, got '" + s + "'";
    }
    return {};
}

}  // namespace viz
