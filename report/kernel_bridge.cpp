// report/kernel_bridge.cpp — tiles to JSON and back (see the header).
#include "report/kernel_bridge.hpp"

#include "sim/dtype.hpp"

namespace report {

using nlohmann::json;

json tiles_json(const sim::KernelTiles& t) {
    return json{{"variant", t.variant},
                {"algo", t.algo},
                {"block_rows", t.block_rows},
                {"block_cols", t.block_cols},
                {"loop_order", t.loop_order},
                {"stages", t.stages},
                {"sram_bytes", t.sram_bytes},
                {"smem_bytes", t.smem_bytes},
                {"threads", t.threads},
                {"layout", t.layout},
                {"dq_copies", t.dq_copies},
                {"grid", std::string(sim::name_of(t.grid))},
                {"dq_schedule", std::string(sim::name_of(t.dq))},
                {"lone_middles", t.lone_middles},
                {"launch_per_kv_block", t.launch_per_kv_block},
                {"tail_split", t.tail_split}};
}

namespace {

std::string text_or(const json& j, const char* key, const std::string& fallback) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

int64_t integer(const json& j, const char* key, int64_t fallback) {
    if (!j.contains(key)) return fallback;
    if (!j[key].is_number_integer())
        throw sim::Error(std::string("tiles.") + key + " is " + j[key].dump() + "; it must be a whole number");
    return j[key].get<int64_t>();
}

template <typename E>
E enum_field(const json& j, const char* key, E legacy) {
    if (!j.contains(key)) return legacy;
    const auto v = j[key].is_string() ? sim::parse_enum<E>(j[key].get<std::string>()) : std::nullopt;
    if (!v) {
        std::string names;
        for (const auto& row : sim::EnumNames<E>::table) names += (names.empty() ? "" : ", ") + std::string(row.name);
        throw sim::Error(std::string("tiles.") + key + " is " + j[key].dump() + "; it must be one of " + names);
    }
    return *v;
}

}  // namespace

sim::KernelTiles tiles_of_json(const json& j, const std::string& row_variant, bool backward) {
    if (!j.is_object())
        throw sim::Error("tiles is " + j.dump() + "; it must be an object as `flashsim bench` writes it");
    sim::KernelTiles t;
    t.variant = text_or(j, "variant", row_variant);
    t.algo = text_or(j, "algo", row_variant);  // rows recorded before tiles.algo name it as their variant
    t.block_rows = integer(j, "block_rows", 0);
    t.block_cols = integer(j, "block_cols", 0);
    t.loop_order = text_or(j, "loop_order", "");
    t.stages = static_cast<int>(integer(j, "stages", 1));
    t.sram_bytes = integer(j, "sram_bytes", 0);
    t.smem_bytes = integer(j, "smem_bytes", 0);
    t.threads = static_cast<int>(integer(j, "threads", 0));
    t.layout = text_or(j, "layout", "");
    t.dq_copies = static_cast<int>(integer(j, "dq_copies", 1));
    const sim::LegacyTilesFields old = sim::legacy_tiles_fields(t.layout, backward);
    t.grid = enum_field(j, "grid", old.grid);
    t.dq = enum_field(j, "dq_schedule", old.dq);
    // rows with tiles.grid but no tiles.lone_middles (2026-12-03 to this field) still say it in prose
    t.lone_middles = j.contains("lone_middles") ? j["lone_middles"].get<bool>()
                                                : t.grid != sim::KernelGrid::tiles && old.lone_middles;
    t.launch_per_kv_block =
        j.contains("launch_per_kv_block") ? j["launch_per_kv_block"].get<bool>() : t.algo == "flash1";
    t.tail_split = j.contains("tail_split") && j["tail_split"].get<bool>();  // rows before the field: whole
    return t;
}

sim::KernelRun kernel_run_of_row(const json& row) {
    auto need = [&](const char* k, bool ok, const char* kind) {
        if (!row.contains(k) || !ok) throw sim::Error(std::string("the row has no ") + kind + " \"" + k + "\"");
    };
    need("variant", row.contains("variant") && row["variant"].is_string(), "string");
    need("pass", row.contains("pass") && row["pass"].is_string(), "string");
    for (const char* k : {"seq", "head_dim", "batch", "heads"})
        need(k, row.contains(k) && row[k].is_number_integer(), "integer");
    need("dtype", row.contains("dtype") && row["dtype"].is_string(), "string");
    need("causal", row.contains("causal") && row["causal"].is_boolean(), "true/false");
    need("tiles", row.contains("tiles"), "object");
    sim::Problem p;
    p.seq = row["seq"];
    p.head_dim = row["head_dim"];
    p.batch = row["batch"];
    p.heads = row["heads"];
    const auto dt = sim::parse_dtype(row["dtype"].get<std::string>());
    if (!dt) throw sim::Error("the row's dtype " + row["dtype"].dump() + " is not bf16 or fp16");
    p.dtype = *dt;
    p.causal = row["causal"];
    const std::string pass = row["pass"], variant = row["variant"];
    const sim::Pass sp = pass == "step"       ? sim::Pass::both
                         : pass == "backward" ? sim::Pass::backward
                                              : sim::Pass::forward;
    if (pass != "forward" && pass != "backward" && pass != "step")
        throw sim::Error("the row's pass \"" + pass + "\" is not forward, backward or step");
    const auto plus = variant.find('+');
    const std::string fk = variant.substr(0, plus), bk = plus == std::string::npos ? variant : variant.substr(plus + 1);
    std::optional<sim::KernelTiles> tf;
    if (sp == sim::Pass::both) {
        need("tiles_forward", row.contains("tiles_forward"), "object");
        tf = tiles_of_json(row["tiles_forward"], fk, false);
    }
    return sim::kernel_run(
        p, sp, variant, tiles_of_json(row["tiles"], sp == sim::Pass::forward ? fk : bk, sp != sim::Pass::forward), tf);
}

}  // namespace report
