// viz/app_args.hpp — the app's command line (no GL: unit-tested).
//
//   flashsim-app [--lesson ID] [--step K] [--panel NAME] [--size WxH] [--screenshot FILE.png]
//                [--frames N] [--report-frame-time] [--seq N --head-dim D --algo A --causal --pass P]
//                [--anim-step S] [--play] [--results DIR] [--gpus P --layout L]
//   flashsim-app --tour [--frames N] [--size WxH]   every step of every lesson in one process
//   flashsim-app --trace run.json   a lab trace (TileMachine.save_trace) beside the built-in run
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "viz/model.hpp"
#include "viz/view_state.hpp"

namespace viz {

struct AppArgs {
    std::string screenshot;  // write a PNG of the last frame and exit
    std::string lesson;      // lesson id or number (1-based); empty: the first
    int lesson_step = 0;     // --step K: 1-based on the command line, stored 0-based
    bool lesson_step_given = false;
    std::string answer;  // --answer TEXT: checked against the lesson's exercise as if typed in its field
    std::optional<Panel> panel;
    bool all_panels = false;  // --panel all (with --screenshot F.png): F-memory.png, F-compare.png, ... in one run
    int width = 1280, height = 800;
    int frames = -1;                 // frames to render before the screenshot / exit (-1: run interactively)
    bool report_frame_time = false;  // print frame-time statistics at exit
    std::optional<int64_t> seq, head_dim;
    std::optional<sim::Algo> algo;
    bool causal = false;
    std::optional<sim::Pass> pass;          // --pass forward|backward|both
    int64_t anim_step = -1;                 // --anim-step: the animation step to show (the ring view: its step)
    std::optional<int64_t> gpus;            // --gpus P: the ring view's GPUs, 1 to kRingMaxGpus
    std::optional<sim::RingLayout> layout;  // --layout balanced|contiguous: the ring view's layout
    bool play = false;                      // start playing
    double speed = 0;                       // steps per second (0: the default)
    std::string results_dir;                // results/ by default (report::results_dir())
    double font_px = 0;                     // font size before content scaling (0: default)
    double zoom = 1.0;                      // the live zoom to open with (Ctrl +/- change it), 1 to 2
    bool show_keys = false;                 // open with the keyboard help overlay
    // --tour: open every step of every lesson in turn, as Next does, render `frames` frames of each
    // (default 2), print a line a step and a summary; exit 1 when a step failed to open or render
    bool tour = false;
    // --tour --contact-sheet DIR: one JPEG a lesson in DIR, its steps' frames side by side (contact_sheet.hpp)
    std::string contact_sheet;
    std::string trace;  // --trace FILE: a lab trace to replay in the memory view (viz/lab_trace.hpp)
};

// Parse argv. On a bad argument returns the one-line error (and `args` is unspecified); "" when
// fine. `help` is set when --help was given (its text in *help_text).
std::string parse_app_args(int argc, const char* const* argv, AppArgs& args, bool* help, std::string* help_text);

}  // namespace viz
