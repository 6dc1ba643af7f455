// flashsim decode — one decoding step with split-KV (Flash-Decoding): q_len new tokens against a KV
// cache of L keys, grouped-query heads. Prints the split count it chooses and why, the bytes (K and
// V read once per KV head), the predicted time, and with --check the split-and-merge output against
// the float64 reference.
//
//   flashsim decode --kv-len 32768 [--batch 1 --q-heads 32 --kv-heads 8 --q-len 1 --head-dim 128]
//                   [--dtype bf16] [--gpu H200] [--splits 0] [--tile-keys 64] [--check] [--json]
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "report/memory.hpp"

namespace {
struct DecodeArgs {
    sim::DecodeProblem p;
    sim::DecodeConfig c;
    std::string dtype = "bf16", gpu = "H200";
    bool check = false, json = false, datasheet = false;
};
}  // namespace

void register_decode(CLI::App& app, int& rc) {
    auto a = std::make_shared<DecodeArgs>();
    auto* cmd = app.add_subcommand(
        "decode", "Decoding with a KV cache (split-KV, grouped-query heads): splits, bytes, predicted time, numerics");
    cmd->add_option("--kv-len,-L", a->p.kv_len, "Keys in the KV cache, the new tokens included")->required();
    cmd->add_option("--batch,-b", a->p.batch, "Sequences decoded together")->capture_default_str();
    cmd->add_option("--q-heads", a->p.q_heads, "Query heads H_q")->capture_default_str();
    cmd->add_option("--kv-heads", a->p.kv_heads, "Key/value heads H_kv (dividing H_q; 1: multi-query)")
        ->capture_default_str();
    cmd->add_option("--q-len", a->p.q_len, "New tokens per sequence (1 to a few)")->capture_default_str();
    cmd->add_option("--head-dim,-d", a->p.head_dim, "Head dimension d")->capture_default_str();
    cmd->add_option("--dtype", a->dtype, "fp16, bf16 or fp32")->capture_default_str();
    cmd->add_option("--gpu", a->gpu, "GPU preset")->capture_default_str();
    cmd->add_option("--seed", a->p.seed, "Input generator seed")->capture_default_str();
    cmd->add_option("--splits", a->c.splits, "Splits of the cache (0: choose to fill the SMs)")->capture_default_str();
    cmd->add_option("--tile-keys", a->c.tile_keys, "Keys per K/V tile")->capture_default_str();
    cmd->add_option("--min-tiles", a->c.min_tiles_per_split, "Splits no shorter than this many tiles")
        ->capture_default_str();
    cmd->add_option("--blocks-per-sm", a->c.blocks_per_sm, "Blocks per SM the splits aim to fill")
        ->capture_default_str();
    cmd->add_flag("--datasheet", a->datasheet, "Time with the datasheet HBM bandwidth, not the measured copy rate");
    cmd->add_flag("--check", a->check, "Compute the output by split and merge and compare with the float64 reference");
    cmd->add_flag("--json", a->json, "Print one JSON object");
    cmd->callback([a, &rc] {
        try {
            const auto dt = sim::parse_dtype(a->dtype);
            if (!dt) throw sim::Error("unknown --dtype '" + a->dtype + "'; use fp16, bf16 or fp32");
            if (*dt == sim::DType::fp8)
                throw sim::Error(
                    "fp8 is modelled for the attention forward only (`flashsim simulate --kernel flash2h --dtype fp8`, "
                    "`flashsim numerics --dtype fp8`); use fp16, bf16 or fp32 here");
            a->p.dtype = *dt;
            a->c.measured_bandwidth = !a->datasheet;
            a->c.numerics = a->check;
            const sim::Machine& m = sim::find_machine(a->gpu);
            if (a->check && double(a->p.batch) * double(a->p.q_heads) * double(a->p.q_len) * double(a->p.kv_len) *
                                    double(a->p.head_dim) >
                                4e10)
                throw sim::Error(
                    "--check on this shape would take minutes on the CPU (B*H_q*q_len*L*d > 4e10); "
                    "check a smaller L or batch");
            const double cache =
                double(a->p.batch) * double(a->p.kv_heads) * double(a->p.kv_len) * double(a->p.head_dim);
            if (a->check && cache > double(int64_t{1} << 28))
                throw sim::Error("--check holds the cache's K and V as fp32 on the CPU (" +
                                 std::to_string(static_cast<int64_t>(cache * 8 / double(int64_t{1} << 30))) +
                                 " GiB here; the limit is B*H_kv*L*d <= 2^28, 2 GiB): check a smaller L or batch");
            const sim::DecodeResult r = sim::simulate_decode(a->p, m, a->c);
            sim::ErrorStats vs;
            if (r.output) {
                const sim::DecodeInputs in = sim::generate_decode_inputs(a->p);
                vs = sim::validate(*r.output, sim::decode_reference(a->p, in), a->p.dtype);
                require_finite("O", vs);
            }
            if (a->json)
                std::cout << report::decode_json(r, m, vs).dump(2) << "\n";
            else
                std::cout << report::decode_text(r, m, vs);
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("decode", e.what());
            rc = 1;
        }
    });
}
