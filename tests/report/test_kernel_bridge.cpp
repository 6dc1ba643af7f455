// The bridge from a kernel's configuration to the simulator's (sim/kernel_config.hpp,
// report/kernel_bridge.hpp): the bench, `bench --resimulate` and the app's live run must walk every
// recorded row the same way, and old rows whose configuration is prose must still be read right.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "report/kernel_bridge.hpp"
#include "sim/kernel_config.hpp"

using nlohmann::json;

namespace {

// The fields of sim::Config that the bridge sets; two configs that agree on these walk alike.
void check_same(const sim::Config& a, const sim::Config& b) {
    CHECK(a.algo == b.algo);
    CHECK(a.pass == b.pass);
    CHECK(a.block_rows == b.block_rows);
    CHECK(a.block_cols == b.block_cols);
    CHECK(a.bwd_block_rows == b.bwd_block_rows);
    CHECK(a.bwd_block_cols == b.bwd_block_cols);
    CHECK(a.sram_bytes == b.sram_bytes);
    CHECK(a.dq_copies == b.dq_copies);
    CHECK(a.dq_in_block_order == b.dq_in_block_order);
    CHECK(a.launch_per_kv_block == b.launch_per_kv_block);
    CHECK(a.grid_order == b.grid_order);
    CHECK(a.lone_middles == b.lone_middles);
    CHECK(a.fwd_blocks_per_sm == b.fwd_blocks_per_sm);
    CHECK(a.bwd_blocks_per_sm == b.bwd_blocks_per_sm);
    CHECK(a.numerics == b.numerics);
    CHECK(a.l2_budget == b.l2_budget);
}

std::vector<std::filesystem::path> recorded_files() {
    namespace fs = std::filesystem;
    // every recorded H200 bench row, and every H100 file, current or archived (the archive's grid
    // experiments hold the prose-only rows the legacy reader must still understand)
    const fs::path dir = fs::path(FLASHSIM_SOURCE_DIR) / "results";
    std::vector<fs::path> files{dir / "h200" / "bench.json"};
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        const bool h100 = e.path().parent_path().filename() == "h100" || name.rfind("h100_", 0) == 0;
        if (h100 && e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

bool contains(const json& tiles, const char* words) {
    return tiles.contains("layout") && tiles["layout"].get<std::string>().find(words) != std::string::npos;
}

}  // namespace

TEST_CASE("bench, resimulate and the live run give one sim config for every recorded row") {
    int rows = 0, static_rows = 0, lone = 0, ordered = 0, flash1 = 0;
    for (const auto& path : recorded_files()) {
        std::ifstream in(path);
        REQUIRE_MESSAGE(in, path.string());
        const json doc = json::parse(in);
        if (!doc.contains("rows")) continue;
        for (const json& row : doc["rows"]) {
            if (!row.is_object() || !row.contains("tiles") || !row.contains("ms_median")) continue;
            if (row["pass"] == "step" && !row.contains("tiles_forward")) continue;
            CAPTURE(path.string());
            CAPTURE(row.dump().substr(0, 300));
            ++rows;
            // resimulate: the recorded row as it is
            const sim::KernelRun recorded = report::kernel_run_of_row(row);
            // the live run: the kernel's TileConfig straight to the bridge, no JSON
            const sim::KernelRun live =
                sim::kernel_run(recorded.problem, recorded.pass, row["variant"].get<std::string>(), recorded.tiles,
                                recorded.tiles_forward);
            // the bench: the TileConfig written as the bench writes it, then read back
            json fresh = row;
            fresh["tiles"] = report::tiles_json(recorded.tiles);
            if (recorded.tiles_forward) fresh["tiles_forward"] = report::tiles_json(*recorded.tiles_forward);
            const sim::KernelRun bench = report::kernel_run_of_row(fresh);
            const sim::Config c = sim::sim_config(recorded);
            check_same(c, sim::sim_config(live));
            check_same(c, sim::sim_config(bench));
            // what the row says, read from its JSON here without the bridge: a forward flash2h row ran the
            // static order when tiles.grid says static or counter, or (older rows) its layout names a
            // persistent grid; lone middles when such a grid's layout does not pair two heads' middle blocks
            const json& tf = row["pass"] == "step" ? row["tiles_forward"] : row["tiles"];
            const bool grid_static = (tf.contains("grid") && (tf["grid"] == "static" || tf["grid"] == "counter")) ||
                                     contains(tf, "persistent grid");
            if (row["pass"] != "backward" && c.algo == sim::Algo::flash2) {
                CHECK((c.grid_order == sim::GridOrder::static_units) == grid_static);
                // rows that write tiles.lone_middles say it outright (a grid of single query blocks,
                // as a row without the causal mask runs, has no middles at all)
                const bool lone_said = tf.contains("lone_middles") ? tf["lone_middles"].get<bool>()
                                                                   : !contains(tf, "two heads' middle blocks");
                CHECK(c.lone_middles == (grid_static && lone_said));
            }
            if (row["pass"] != "forward") CHECK(c.dq_in_block_order == contains(row["tiles"], "dQ in block order"));
            CHECK(c.launch_per_kv_block == (row["variant"] == "flash1"));
            static_rows += c.grid_order == sim::GridOrder::static_units;
            lone += c.lone_middles;
            ordered += c.dq_in_block_order;
            flash1 += c.launch_per_kv_block;
        }
    }
    // every kind of row is among them, so each check above ran on some row
    CHECK(rows >= 158);
    CHECK(static_rows > 0);
    CHECK(lone > 0);
    CHECK(ordered > 0);
    CHECK(flash1 > 0);
}

TEST_CASE("legacy prose: the words flash2h wrote before the structured fields") {
    using sim::KernelGrid;
    const std::string base = "2 consumer warpgroups x 64 query rows (wgmma), 1 TMA producer warpgroup";
    const auto turn = sim::legacy_tiles_fields(base +
                                                   "; persistent grid (a block an SM; units of a head's p-th heaviest "
                                                   "and p-th lightest query blocks, in turn)",
                                               false);
    CHECK(turn.grid == KernelGrid::static_units);
    CHECK(turn.lone_middles);  // written before the middles were paired
    const auto paired = sim::legacy_tiles_fields(
        base +
            "; persistent grid (a block an SM; units of a head's p-th heaviest and p-th lightest query blocks, or "
            "two heads' middle blocks, the next from a counter)",
        false);
    CHECK(paired.grid == KernelGrid::counter);
    CHECK_FALSE(paired.lone_middles);
    const auto plain = sim::legacy_tiles_fields(base + "; S_{j+1} overlaps P_j V_j", false);
    CHECK(plain.grid == KernelGrid::tiles);
    CHECK_FALSE(plain.lone_middles);
    const std::string bwd = "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup";
    CHECK(sim::legacy_tiles_fields(bwd + "; pipelined, dQ in block order", true).dq == sim::DqSchedule::block_order);
    CHECK(sim::legacy_tiles_fields(bwd + "; dQ by bulk reduction", true).dq == sim::DqSchedule::bulk_reduction);
    CHECK(sim::legacy_tiles_fields(bwd, true).dq == sim::DqSchedule::atomics);
}

TEST_CASE("structured fields win over the prose, and bad ones are refused by name") {
    json t = json::parse(R"J({"variant": "flash2h", "algo": "flash2", "block_rows": 128, "block_cols": 128,
        "sram_bytes": 100000, "layout": "persistent grid (a block an SM; units, in turn)", "grid": "tiles",
        "lone_middles": false})J");
    const sim::KernelTiles k = report::tiles_of_json(t, "flash2h", false);
    CHECK(k.grid == sim::KernelGrid::tiles);
    CHECK_FALSE(k.lone_middles);
    t["grid"] = "diagonal";
    CHECK_THROWS_WITH_AS(report::tiles_of_json(t, "flash2h", false),
                         "tiles.grid is \"diagonal\"; it must be one of tiles, static, counter", sim::Error);
    // a round trip keeps every field
    sim::KernelTiles x;
    x.variant = "flash2h";
    x.algo = "flash2";
    x.block_rows = 192;
    x.block_cols = 176;
    x.grid = sim::KernelGrid::counter;
    x.dq = sim::DqSchedule::block_order;
    x.lone_middles = true;
    x.launch_per_kv_block = true;
    x.dq_copies = 2;
    const sim::KernelTiles y = report::tiles_of_json(report::tiles_json(x), "other", true);
    CHECK(y.variant == x.variant);
    CHECK(y.block_rows == 192);
    CHECK(y.block_cols == 176);
    CHECK(y.grid == x.grid);
    CHECK(y.dq == x.dq);
    CHECK(y.lone_middles);
    CHECK(y.launch_per_kv_block);
    CHECK(y.dq_copies == 2);
}

TEST_CASE("a step whose kernels run different simulator algorithms is refused, not walked") {
    sim::KernelTiles fwd, bwd;
    fwd.algo = "flash1";
    bwd.algo = "flash2";
    sim::Problem p;
    const sim::KernelRun r = sim::kernel_run(p, sim::Pass::both, "flash1+flash2", bwd, fwd);
    CHECK(r.fwd_kernel == "flash1");
    CHECK(r.bwd_kernel == "flash2");
    CHECK_THROWS_AS(sim::sim_config(r), sim::Error);
}

TEST_CASE("the preset for the card the bench runs on") {
    CHECK(sim::preset_for_device("NVIDIA H100 80GB HBM3").value() == "H100-SXM");
    CHECK(sim::preset_for_device("NVIDIA H200").value() == "H200");
    CHECK(sim::preset_for_device("NVIDIA A100-SXM4-80GB").value() == "A100-80GB");
    CHECK(sim::preset_for_device("NVIDIA A100-SXM4-40GB").value() == "A100-40GB");
    CHECK_FALSE(sim::preset_for_device("NVIDIA H100 PCIe").has_value());  // other clocks and memory: no preset
    CHECK_FALSE(sim::preset_for_device("").has_value());
}
