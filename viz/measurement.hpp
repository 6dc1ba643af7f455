// viz/measurement.hpp — what the CUDA kernels measured, read from results/*.json (written by
// `flashsim bench --json` and scripts/gpu_session.sh). Read tolerantly: any field may be missing or
// null; what is missing is shown as missing, never as zero.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace viz {

struct MeasuredRow {
    std::string variant, pass = "forward", dtype;
    int64_t seq = 0, head_dim = 0, batch = 1, heads = 1;
    bool causal = false;
    std::optional<double> ms, tflops;
    std::optional<double> dram_read, dram_write;  // bytes, from the hardware counters (ncu)
    std::optional<double> sim_read, sim_write;    // the simulator's HBM<->SRAM bytes for the kernel's tiling (no L2)
    std::optional<double> sim_l2_read, sim_l2_write;  // the same tiling's DRAM bytes through the L2 model
    // that walk as a counted range sees it (less the dirty lines it leaves in L2 at the end, plus the
    // counters probes' residue; `flashsim bench --resimulate`), and the residue
    std::optional<double> sim_l2_counters_view, counters_residue;
    std::optional<int64_t> block_rows, block_cols, sram_bytes;
    std::vector<std::pair<std::string, double>> vs_torch;    // ratios against PyTorch's kernels (positive only)
    std::vector<std::pair<std::string, double>> anchors_ms;  // PyTorch's kernels' median ms, same shape
    std::optional<double> anchor_ms(const std::string& name) const {
        for (const auto& [k, v] : anchors_ms)
            if (k == name) return v;
        return std::nullopt;
    }
    // The kernel model's time for the row's own kernel configuration, as the bench recorded it (or
    // `bench --resimulate` recomputed it with today's model; tests/cli/predicted_band.sh holds the two
    // equal), and whether the model called itself uncertain there.
    std::optional<double> predicted_ms;
    bool predicted_uncertain = false;
    std::string error;   // the row's own error, if the run failed
    std::string device;  // the GPU it ran on: its own run's (merged files), else its file's
    // What sets the row apart from the kernel as it runs by default, in a side-by-side file or a
    // mode (gpu_session.sh's stages tag their rows: "deterministic", "grid static",
    // "FLASH2H_PINGPONG=on, round 2"); empty for a default row. Shown beside the kernel's name;
    // rows_at skips tagged rows.
    std::string tag;
    std::string label() const { return tag.empty() ? variant : variant + " [" + tag + "]"; }
    std::optional<double> dram_total() const {
        if (!dram_read && !dram_write) return std::nullopt;
        return dram_read.value_or(0) + dram_write.value_or(0);
    }
    std::optional<double> sim_l2_total() const {
        if (!sim_l2_read && !sim_l2_write) return std::nullopt;
        return sim_l2_read.value_or(0) + sim_l2_write.value_or(0);
    }
    std::optional<double> sim_total() const {
        if (!sim_read && !sim_write) return std::nullopt;
        return sim_read.value_or(0) + sim_write.value_or(0);
    }
};

struct MeasuredFile {
    std::string path;
    std::string device, driver, date, commit;
    std::string anchor_note;  // how PyTorch's kernels were timed (torch version, method)
    std::vector<MeasuredRow> rows;
    std::string error;  // could not be read / parsed: the file's rows are empty
};

struct MeasuredSet {
    std::string dir;
    std::vector<MeasuredFile> files;
    std::string note;  // e.g. "no results in DIR: run ... to produce them"
};

// The timed rows of `ms` at exactly this shape and pass ("forward" / "backward"), in file order;
// failed, untimed and tagged rows (a mode or a side-by-side value, MeasuredRow::tag) are left out,
// and a variant measured in several files keeps its first row. With `gpu` (a machine preset's name,
// "H200", "H100-SXM"), only rows measured on that GPU (device_matches).
std::vector<const MeasuredRow*> rows_at(const MeasuredSet& ms, const std::string& pass, int64_t seq, int64_t head_dim,
                                        bool causal, int64_t batch, int64_t heads, const std::string& gpu = "");
// Whether a measured device name ("NVIDIA H100 80GB HBM3") is the preset's GPU: the preset's name up
// to its first '-' ("H100-SXM" -> "H100") appears in it as a word.
bool device_matches(const std::string& device, const std::string& preset);

// Parse one results document (the JSON text). Never throws: problems land in .error.
MeasuredFile parse_measurements(const std::string& json_text, const std::string& path);
// Every *.json file in `dir`, sorted by name.
MeasuredSet load_measurements(const std::string& dir);

}  // namespace viz
