#!/usr/bin/env python3
# tests/lessons/make_bad_corpus.py — regenerate bad/*.toml (run from tests/lessons/bad).
# Generates tests/lessons/bad/*.toml. Each case: (name, body, target, offset, substring).
# The expected line:column is where `target` first occurs in the body (plus `offset` characters),
# computed here from the text itself, independently of the loader.
import os
HEAD = 'id = "bad"\ntitle = "Bad"\n'
CFG = '[config.f]\nalgo = "flash2"\nseq = 64\nhead_dim = 16\n'
STEP = '[[step]]\ntext = "ok"\n'
cases = [
 ("syntax_unterminated_string", 'id = "bad\ntitle = "x"\n', 'id = "bad', 9, "TOML syntax"),  # at the line's end
 ("syntax_bad_value", HEAD + CFG + 'batch = = 2\n' + STEP, '= 2', 0, "TOML syntax"),  # the second '=' 
 ("unknown_top_key", HEAD + 'colour = "red"\n' + CFG + STEP, "colour", 0, "unknown key 'colour' in the lesson"),
 ("missing_id", 'title = "Bad"\n' + CFG + STEP, None, (1,1), "needs 'id'"),
 ("bad_id_chars", 'id = "no spaces please"\ntitle = "Bad"\n' + CFG + STEP, '"no spaces', 0, "'id' must be 1-64 letters"),
 ("missing_steps", HEAD + CFG, None, (1,1), "needs 'step'"),
 ("config_missing_seq", HEAD + '[config.f]\nalgo = "flash2"\nhead_dim = 16\n' + STEP, "[config.f]", 0, "needs 'seq'"),
 ("config_unknown_algo", HEAD + '[config.f]\nalgo = "flash9"\nseq = 64\nhead_dim = 16\n' + STEP, '"flash9"', 0, "unknown algo 'flash9'"),
 ("config_seq_is_text", HEAD + '[config.f]\nalgo = "flash2"\nseq = "64"\nhead_dim = 16\n' + STEP, '"64"', 0, "'seq' must be a whole number, got text"),
 ("config_negative_seq", HEAD + '[config.f]\nalgo = "flash2"\nseq = -4\nhead_dim = 16\n' + STEP, '-4', 0, "'seq' must be at least 1"),
 ("config_unknown_dtype", HEAD + CFG + 'dtype = "fp4"\n' + STEP, '"fp4"', 0, "unknown dtype 'fp4'"),
 ("fp8_incoherent_d96", HEAD + CFG + '[fp8.e]\nseq = 64\nhead_dim = 96\nincoherent = true\n' + STEP, "[fp8.e]", 0, "--incoherent needs d a power of two"),
 ("kernel_fp8_off_wgmma", HEAD + CFG + '[kernel.k]\nkernel = "flash2"\nseq = 1024\nhead_dim = 128\ndtype = "fp8"\n' + STEP, "[kernel.k]", 0, "the FP8 forward is modelled on wgmma"),
 ("fp8_dtype_in_footprint", HEAD + CFG + '[footprint.f8]\nalgo = "flash2"\nseq = 1024\nhead_dim = 128\ndtype = "fp8"\n' + STEP, '"fp8"', 0, "dtype fp8 is modelled for the attention forward only"),
 ("config_unknown_gpu", HEAD + CFG + 'gpu = "TPUv9"\n' + STEP, '"TPUv9"', 0, "unknown GPU preset 'TPUv9'"),
 ("config_bad_pass", HEAD + CFG + 'pass = "sideways"\n' + STEP, '"sideways"', 0, "'pass' must be one of forward, backward, both"),
 ("config_bad_l2", HEAD + CFG + 'l2 = "maybe"\n' + STEP, '"maybe"', 0, "'l2' must be one of auto, on, off"),
 ("config_unknown_key", HEAD + CFG + 'blocks = 64\n' + STEP, 'blocks =', 0, "unknown key 'blocks' in [config.f]"),
 ("config_block_sparse_above_one", HEAD + CFG + 'block_sparse = 1.5\n' + STEP, '1.5', 0, "'block_sparse' is the fraction of key blocks each query block keeps"),
 ("config_refused_sram", HEAD + CFG + 'block_rows = 64\nblock_cols = 64\nsram = 1024\n' + STEP, "[config.f]", 0, "the simulator refuses this configuration: tiles do not fit in SRAM"),
 ("config_reserved_name", HEAD + '[config.machine]\nalgo = "flash2"\nseq = 64\nhead_dim = 16\n' + STEP, "machine]", 0, "'machine' is reserved"),
 ("config_numerics_too_big", HEAD + CFG.replace("seq = 64", "seq = 8192").replace("head_dim = 16", "head_dim = 128") + 'numerics = "on"\n' + STEP, "[config.f]", 0, "numerics = \"on\" needs"),
 ("config_too_many_steps", HEAD + CFG.replace("seq = 64", "seq = 65536") + 'block_rows = 16\nblock_cols = 16\n' + STEP, "[config.f]", 0, "tile steps; a lesson must load in milliseconds"),
 ("placeholder_unknown_name", HEAD + CFG + '[[step]]\ntext = "Traffic: {{ flsh.hbm.total | MiB }}"\n', "flsh.", 0, "unknown name 'flsh'"),
 ("placeholder_unknown_field", HEAD + CFG + '[[step]]\ntext = "Traffic: {{ f.hbm.totl }}"\n', "f.hbm.totl", 0, "'f.hbm' has no 'totl'"),
 ("placeholder_unknown_filter", HEAD + CFG + '[[step]]\ntext = "Traffic: {{ f.hbm.total | MB2 }}"\n', "MB2", 0, "unknown filter 'MB2'"),
 ("placeholder_bad_filter_arg", HEAD + CFG + '[[step]]\ntext = "Traffic: {{ f.hbm.total | fixed:x }}"\n', "fixed:x", 6, "the filter argument after ':' must be a number"),
 ("placeholder_unclosed", HEAD + CFG + '[[step]]\ntext = """\nLine one.\nTraffic: {{ f.hbm.total | MiB\n"""\n', "{{ f.hbm", 0, "'{{' is never closed"),
 ("placeholder_stray_close", HEAD + CFG + '[[step]]\ntext = "Traffic: f.hbm.total }} bytes"\n', "}} bytes", 0, "'}}' without an opening"),
 ("placeholder_empty", HEAD + CFG + '[[step]]\ntext = "Traffic: {{ }}"\n', "{{ }}", 0, "empty placeholder"),
 ("placeholder_division_by_zero", HEAD + CFG + '[[step]]\ntext = "Ratio: {{ f.hbm.total / f.tensors.S.write_bytes }}"\n', "/ f.tensors", 0, "division by zero"),
 ("placeholder_text_arithmetic", HEAD + CFG + '[[step]]\ntext = "Sum: {{ f.algo + 1 }}"\n', "f.algo", 0, "is text; only numbers can be combined"),
 ("placeholder_index_past_end", HEAD + CFG + '[[step]]\ntext = "Buffer: {{ f.sram_buffers.9.bytes }}"\n', "f.sram_buffers.9", 0, "index 9 is past the end"),
 ("placeholder_group_not_value", HEAD + CFG + '[[step]]\ntext = "Traffic: {{ f.hbm }}"\n', "f.hbm }}", 0, "is a group of values"),
 ("placeholder_in_title", HEAD + CFG + '[[step]]\ntitle = "About {{ f.nope }}"\ntext = "ok"\n', "f.nope", 0, "'f' has no 'nope'"),
 ("view_unknown_panel", HEAD + CFG + '[[step]]\ntext = "ok"\nview = { panel = "graphs" }\n', '"graphs"', 0, "unknown panel 'graphs'"),
 ("view_unknown_config", HEAD + CFG + '[[step]]\ntext = "ok"\nview = { panel = "memory", config = "g" }\n', '"g"', 0, "no configuration named 'g'"),
 ("view_step_out_of_range", HEAD + CFG + '[[step]]\ntext = "ok"\nview = { panel = "memory", step_from = 0, step_to = 99 }\n', '99', 0, "'step_to' = 99 is outside the steps"),
 ("view_unknown_key", HEAD + CFG + '[[step]]\ntext = "ok"\nview = { panel = "memory", zoom = 2 }\n', 'zoom', 0, "unknown key 'zoom' in view"),
 ("view_ring_unknown", HEAD + CFG + '[[step]]\ntext = "ok"\nview = { panel = "ring", ring = "r" }\n', '"r"', 0, "ring: no [ring.r] in this lesson (it has none)"),
 ("view_ring_unnamed", HEAD + CFG + '[[step]]\ntext = "ok"\nview = { panel = "ring" }\n', '{ panel', 0, "panel = \"ring\" needs ring = \"NAME\""),
 ("view_ring_other_panel", HEAD + CFG + '[[step]]\ntext = "ok"\nview = { panel = "memory", ring = "r" }\n', '"r"', 0, "'ring' belongs to a view with panel = \"ring\""),
 ("step_missing_text", HEAD + CFG + '[[step]]\ntitle = "No text"\n', '[[step]]', 0, "every [[step]] needs 'text'"),
 ("expect_without_value", HEAD + CFG + '[[step]]\ntext = "ok"\n[[step.expect]]\nexpr = "f.hbm.total"\n', "[[step.expect]]", 0, "needs 'value', 'at_least' or 'at_most'"),
 ("expect_bad_path", HEAD + CFG + '[[step]]\ntext = "ok"\n[[step.expect]]\nexpr = "f.hbm.totals"\nvalue = 1\n', '"f.hbm.totals"', 1, "'f.hbm' has no 'totals'"),
 ("expect_syntax", HEAD + CFG + '[[step]]\ntext = "ok"\n[[step.expect]]\nexpr = "f.hbm.total * * 2"\nvalue = 1\n', '* 2"', 0, "a number, a name or '(' was expected"),
 ("softmax_missing_scores", HEAD + CFG + '[softmax]\nblock = 4\n' + STEP, "[softmax]", 0, "[softmax] needs 'scores'"),
 ("softmax_values_shape", HEAD + CFG + '[softmax]\nscores = [1.0, 2.0]\nblock = 1\nvalues = [[1.0], [1.0, 2.0]]\n' + STEP, "[softmax]", 0, "value row 2 has 2 entries"),
 ("error_without_numerics", HEAD + CFG + '[error.e]\nactual = "f"\nexpected = "reference"\n' + STEP, '"f"', 0, "has no output; add numerics = \"on\""),
 ("exercise_unknown_base", HEAD + CFG + STEP + '[exercise]\nprompt = "p"\nbase = "nope"\nfields = ["algo"]\ngoal = "answer.hbm.total"\nat_most = 1\nsolution = "algo=flash2"\n', '"nope"', 0, "no configuration named 'nope'"),
 ("exercise_field_not_settable", HEAD + CFG + STEP + '[exercise]\nprompt = "p"\nbase = "f"\nfields = ["causal"]\ngoal = "answer.hbm.total"\nat_most = 1\nsolution = "algo=flash2"\n', '"causal"', 0, "a learner cannot set 'causal'"),
 ("step_unknown_term", HEAD + CFG + '[[step]]\ntext = "ok"\nterms = ["HBM", "flux capacitor"]\n', '"flux capacitor"', 0, "terms: 'flux capacitor' has no glossary entry"),
 ("exercise_predict_with_fields", HEAD + CFG + STEP + '[exercise]\nprompt = "p"\nbase = "f"\npredict = "f.hbm.total"\nfields = ["algo"]\nsolution = "value=1"\n', '[exercise]', 0, "a prediction ('predict') takes one 'value'"),
 ("exercise_predict_tolerance", HEAD + CFG + STEP + '[exercise]\nprompt = "p"\nbase = "f"\npredict = "f.hbm.total"\ntolerance = 2.0\nsolution = "value=1"\n', '2.0', 0, "'tolerance' is relative"),
 ("exercise_hint_without_bound", HEAD + CFG + STEP + '[exercise]\nprompt = "p"\nbase = "f"\npredict = "f.hbm.total"\nsolution = "value=1"\n[[exercise.hint]]\nexpr = "answer.ratio"\ntext = "t"\n', '[[exercise.hint]]', 0, "needs 'at_least' or 'at_most'"),
 ("exercise_solution_field", HEAD + CFG + STEP + '[exercise]\nprompt = "p"\nbase = "f"\nfields = ["algo"]\ngoal = "answer.hbm.total"\nat_most = 1\nsolution = "block_rows=16"\n', '"block_rows=16"', 0, "sets 'block_rows', which is not in 'fields'"),
 ("decode_unknown_key", HEAD + CFG + '[decode.d]\nkv_len = 64\nhead_dim = 16\nsplit = 2\n' + STEP, 'split =', 0, "unknown key 'split' in [decode.d]"),
 ("decode_heads_not_dividing", HEAD + CFG + '[decode.d]\nkv_len = 64\nhead_dim = 16\nq_heads = 6\nkv_heads = 4\n' + STEP, '[decode.d]', 0, "the simulator refuses this: the KV heads (4) must divide the query heads (6)"),
 ("fit_bad_pass", HEAD + CFG + '[fit.x]\nalgo = "flash2"\nhead_dim = 16\npass = "step"\n' + STEP, '"step"', 0, "'pass' must be one of forward, backward, both"),
 ("footprint_missing_seq", HEAD + CFG + '[footprint.x]\nalgo = "flash2"\nhead_dim = 16\n' + STEP, '[footprint.x]', 0, "[footprint.x] needs 'seq'"),
 ("measured_file_outside", HEAD + CFG + '[measured.m]\nfile = "../../etc/x.json"\nvariant = "decode"\n' + STEP, '"../../etc', 0, "'file' names a current results file, card/kind.json under results/"),
]
def pos(body, target, off):
    i = body.index(target) + off
    line = body.count("\n", 0, i) + 1
    col = i - (body.rfind("\n", 0, i) + 1) + 1
    return line, col
os.makedirs(".", exist_ok=True)
for name, body, target, off, sub in cases:
    if target is None and off is None:
        hdr = "# expect: TOML syntax\n"  # position checked separately (toml++ decides where)
    else:
        if target is None: line, col = off  # not tied to a place: the start of the file
        else:
            line, col = pos(body, target, off)
            line += 1  # the header line itself
        hdr = f"# expect: {line}:{col}: {sub}\n"
    with open(name + ".toml", "w") as f:
        f.write(hdr + body)
print(len(cases))
