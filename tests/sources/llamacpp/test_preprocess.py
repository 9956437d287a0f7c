"""verify.sources.llamacpp.preprocess does what pre_wgsl.hpp and embed_wgsl.py do, rule by rule."""

from __future__ import annotations

import pytest

from verify.sources.llamacpp.preprocess import (
    PreprocessError,
    Preprocessor,
    defines_read,
    evaluate,
    expand_includes,
)


def run(text: str, *defines: str) -> str:
    return Preprocessor().preprocess(text, defines)


def test_a_caller_define_wins_over_the_templates_own_default():
    # pre_wgsl.hpp L693: "Don't override predefined macros from options"
    text = "#define WG_SIZE 64\n@workgroup_size(WG_SIZE)\n"
    assert run(text) == "@workgroup_size(64)\n"
    assert run(text, "WG_SIZE=256") == "@workgroup_size(256)\n"


def test_a_caller_define_is_not_undefined_by_the_text():
    assert run("#undef X\n#ifdef X\nkept\n#endif\n", "X") == "kept\n"
    assert run("#define Y 1\n#undef Y\n#ifdef Y\nkept\n#endif\n") == ""


def test_nested_conditions_take_the_first_true_branch_only():
    text = "#ifdef A\n#if B == 2\nab2\n#elif B\nab\n#else\na\n#endif\n#else\nnone\n#endif\n"
    assert run(text, "A", "B=2") == "ab2\n"
    assert run(text, "A", "B=3") == "ab\n"
    assert run(text, "A") == "a\n"
    assert run(text) == "none\n"


def test_an_if_inside_an_inactive_region_is_not_evaluated():
    # an #if whose parent is inactive pushes (false, false, false) without parsing (L735-740)
    assert run("#ifdef NO\n#if defined(\n#endif\n#endif\nafter\n") == "after\n"


def test_expressions_follow_c_precedence_and_int_arithmetic():
    macros = {"A": "", "B": "7", "C": "B * 2"}
    assert evaluate("defined(A) && defined B", macros) == 1
    assert evaluate("B + 1 * 2 == 9", macros) == 1
    assert evaluate("C == 14 && !UNDEFINED", macros) == 1  # a macro's value is an expression (L431-440)
    assert evaluate("A", macros) == 1  # an empty macro is 1
    assert evaluate("-7 / 2 == -3 && -7 % 2 == -1 && 5 / 0 == 0", macros) == 1  # truncation; division by 0 is 0
    assert evaluate("1 << 4 >> 2 == 4 && (2 < 3) + (3 <= 3) == 2", macros) == 1


def test_a_character_the_lexer_does_not_know_ends_the_expression():
    assert evaluate("1 & 0", {}) == 1  # '&' alone ends it after "1" (L196-198)


def test_expansion_replaces_every_identifier_run_recursively():
    text = "let x: SRC1_TYPE = f(SRC0);\n"
    assert run(text, "SRC1_TYPE=vec4<INNER>", "INNER=f32", "SRC0=merged") == "let x: vec4<f32> = f(merged);\n"
    assert run("a_b ab A\n", "A=z") == "a_b ab z\n"


def test_errors_are_the_ones_the_cpp_throws():
    with pytest.raises(PreprocessError, match="Recursive macro: X"):
        run("X\n", "X=Y", "Y=X")
    with pytest.raises(PreprocessError, match="Unknown directive: #pragma"):
        run("#pragma once\n")
    with pytest.raises(PreprocessError, match="Unclosed #if"):
        run("#ifdef A\n")
    with pytest.raises(PreprocessError, match="#endif without #if"):
        run("#endif\n")
    with pytest.raises(PreprocessError, match="#else without #if"):
        run("#else\n")


def test_a_directive_continues_over_backslashed_lines():
    assert run("#if defined(A) || \\\n    defined(B)\nyes\n#endif\n", "B") == "yes\n"


def test_includes_expand_recursively_as_embed_wgsl_does():
    # the include line's text is replaced by the file's, its own newline kept (embed_wgsl.py L11-23)
    files = {"a.tmpl": '#include "b.tmpl"\nA\n', "b.tmpl": "B\n"}
    assert expand_includes('x\n  #include "a.tmpl"  \ny\n', files.__getitem__) == "x\nB\n\nA\n\ny\n"
    with pytest.raises(KeyError):
        expand_includes('#include "missing.tmpl"\n', files.__getitem__)


def test_defines_read_lists_the_names_a_template_tests():
    assert defines_read("#ifdef A\n#if defined(B) || defined C\n#ifndef D\n") == {"A", "B", "C", "D"}
