"""The WGSL parser accepts every module the toolkit runs and the WGSL features ONNX Runtime Web's
shaders use, keeps source positions, and reports bad input by line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.instrument.sources import TVM_CACHES, file_modules, kernel_modules
from verify.instrument import WgslSyntaxError, parse
from verify.wgsl.parser import TEMPLATE_END, TEMPLATE_START, blank_comments, mark_template_lists

HERE = Path(__file__).resolve().parent


def test_every_kernel_module_of_every_gate_config_parses():
    modules = kernel_modules()
    assert len(modules) >= 40  # every kernel, every gate config
    for name, source in modules.items():
        assert parse(source).tree.data == "start", name


def test_every_wgsl_file_the_tests_and_tvm_cache_hold_parses():
    modules = file_modules()
    assert any("attention_decode" in name for name in modules), f"no TVM WGSL in {TVM_CACHES}"
    assert any("mutants" in name for name in modules)
    for name, source in modules.items():
        parse(source)


def test_the_language_features_onnx_runtime_web_uses_parse():
    module = parse((HERE / "wgsl" / "language_features.wgsl").read_text())
    kinds = {node.data for node in module.tree.iter_subtrees()}
    assert {"enable_directive", "requires_directive", "diagnostic_directive", "diagnostic_attribute",
            "override_decl", "const_assert", "type_alias_decl", "loop_statement", "continuing_statement",
            "break_if_statement", "switch_statement", "default_selector", "default_clause",
            "phony_assignment", "deref", "address_of", "compound_assignment", "increment"} <= kinds
    literals = {module.text(n) for n in module.tree.iter_subtrees() if n.data == "float_literal"}
    assert {"1.0h", "0x1p-3f", "1e-3", "0x1.8p1", ".5", "1.", "3f", "0h"} <= literals


def test_template_lists_are_told_from_comparisons_as_the_specification_says():
    marked = mark_template_lists("let x = select((a < b), c > d, e); var<storage, read> v: array<vec4<f32>>;"
                                 " let y = a<<2u; let z = i < n && j > m;")
    assert marked.count(TEMPLATE_START) == 3 and marked.count(TEMPLATE_END) == 3
    assert "(a < b), c > d" in marked and "a<<2u" in marked and "i < n && j > m" in marked
    # The specification's own pitfall: without parentheses `a < b, c > d` is a template list.
    assert mark_template_lists("select(a < b, c > d, e)") == f"select(a {TEMPLATE_START} b, c {TEMPLATE_END} d, e)"


def test_positions_are_positions_in_the_original_source():
    source = "/* a /* nested */ comment */\nfn f() -> vec4<f32> {\n  // line comment\n  return vec4<f32>(1.0);\n}\n"
    assert len(blank_comments(source)) == len(source)
    module = parse(source)
    calls = [n for n in module.tree.iter_subtrees() if n.data == "call"]
    assert [module.text(c) for c in calls] == ["vec4<f32>(1.0)"]
    assert calls[0].meta.line == 4 and calls[0].meta.column == 10


@pytest.mark.parametrize("source,line,column,found", [
    ("fn f() {\n  let x = 1 +;\n}\n", 2, 14, "';'"),
    ("fn f() {\n  let y = (1;\n}\n", 2, 13, "';'"),
    ("fn f() {\n  return 1 $ 2;\n}\n", 2, 12, "'$'"),
    ("fn f() {\n  let z = a < b || c < d && e;\n}\n", 2, 26, "'&&'"),
])
def test_bad_wgsl_is_one_error_naming_line_column_and_the_line(source, line, column, found):
    with pytest.raises(WgslSyntaxError) as raised:
        parse(source)
    error = raised.value
    assert (error.line, error.column) == (line, column)
    assert error.source_line == source.splitlines()[line - 1]
    assert found in str(error) and error.source_line in str(error)


def test_an_unterminated_block_comment_is_a_syntax_error():
    with pytest.raises(WgslSyntaxError, match="unterminated block comment"):
        parse("fn f() {}\n/* open /* nested */\n")


def test_the_parser_from_lark_s_cache_file_reads_like_one_built_from_the_grammar():
    """_parser() keeps its LALR tables in a cache file (lark's `cache=True`); the second process
    on a machine loads them. Trees from a parser loaded that way equal a freshly built one's."""
    import subprocess
    import sys
    from importlib import resources

    from lark import Lark

    from verify.wgsl.parser import _parser

    subprocess.run([sys.executable, "-c", "from verify.wgsl.parser import _parser; _parser()"], check=True)
    _parser.cache_clear()
    loaded = _parser()
    grammar = resources.files("verify.wgsl").joinpath("wgsl.lark").read_text()
    built = Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)
    for name, source in list(kernel_modules().items())[:12]:
        masked = mark_template_lists(blank_comments(source))
        assert loaded.parse(masked) == built.parse(masked), name
