"""verify.gpu.wgpu_types: wgpu-py's C types parsed in one pass are cffi's own, and they are all
a check's run needs (each case in a fresh process: cffi's cache lives as long as the process)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verify.gpu.wgpu_types import RUN_TYPES, _parse_together


def _fresh(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.webgpu
def test_a_check_parses_no_c_type_beyond_the_ones_parsed_together():
    found = _fresh("""
        import json, verify
        from verify.gpu.wgpu_adapters import list_adapters
        list_adapters()
        from wgpu.backends.wgpu_native import _ffi
        parser = _ffi.ffi._parser
        parsed, parse = [], parser._parse
        parser._parse = lambda source: (parsed.append(source), parse(source))[1]
        results = verify.check("merge_state", profile="quick", implementation="wgpu", isolate=False, examples=3)
        print(json.dumps({"verdicts": [r.verdict.value for r in results], "parsed": parsed}))
    """)
    assert found["verdicts"] and set(found["verdicts"]) == {"pass"}
    assert found["parsed"] == []


@pytest.mark.webgpu
def test_types_parsed_together_are_the_ones_cffi_parses_one_at_a_time():
    found = _fresh("""
        import json
        from verify.gpu.wgpu_types import RUN_TYPES, load_wgpu
        load_wgpu()
        from wgpu.backends.wgpu_native import _ffi
        ffi = _ffi.ffi
        differ = []
        for cdecl in RUN_TYPES:
            filed, is_function = ffi._parsed_types[cdecl]
            alone = ffi._parser.parse_type(cdecl)   # cffi's own parse of this string, alone
            if alone.is_raw_function:
                alone = alone.as_function_pointer()
            with ffi._lock:
                same = ffi._get_cached_btype(alone) is filed
            if not same or is_function != ffi._parser.parse_type(cdecl).is_raw_function:
                differ.append(cdecl)
        print(json.dumps({"differ": differ, "filed": sum(c in ffi._parsed_types for c in RUN_TYPES)}))
    """)
    assert found == {"differ": [], "filed": len(RUN_TYPES)}


def test_an_unknown_cffi_leaves_every_type_to_its_first_use():
    class Elsewhere:  # an FFI without the internals the one-pass parse files into
        pass

    assert _parse_together(Elsewhere(), RUN_TYPES) == 0


def test_a_name_that_is_not_a_type_is_left_for_cffi_to_refuse():
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()
    ffi.cdef("typedef struct { int x; } Pair; extern int not_a_type;")
    assert _parse_together(ffi, ("Pair *", "not_a_type", "int[]")) == 2
    assert "not_a_type" not in ffi._parsed_types
    assert ffi.typeof("Pair *") is ffi._parsed_types["Pair *"][0]
    with pytest.raises(cffi.CDefError):
        ffi.typeof("not_a_type")


_DECLARATIONS = """
    import json, os, pycparser.c_parser
    parses = []
    parse = pycparser.c_parser.CParser.parse
    pycparser.c_parser.CParser.parse = lambda self, text, *a, **k: (parses.append(len(text)), parse(self, text, *a, **k))[1]
    from verify.gpu.wgpu_types import load_wgpu
    load_wgpu()
    from wgpu.backends.wgpu_native import _ffi
    parser = _ffi.ffi._parser
    declared = {name: repr(kind) if not hasattr(kind, "_get_c_name") else kind._get_c_name()
                for name, (kind, _quals) in parser._declarations.items()}
    print(json.dumps({"parses": parses, "declared": declared, "constants": parser._int_constants,
                      "version": list(_ffi.lib_version_info)}))
"""


def test_the_header_read_back_from_the_cache_declares_what_a_fresh_parse_does(tmp_path, monkeypatch):
    """The first process parses wgpu-native's header and keeps the trees; the next parses nothing
    with pycparser and ends with the same declarations and constants."""
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path))
    first = _fresh(_DECLARATIONS)
    kept = sorted((tmp_path / "cffi").glob("*.pickle"))
    assert first["parses"] and max(first["parses"]) > 50_000  # the header itself
    assert len(kept) == len(first["parses"]) and not list((tmp_path / "cffi").glob(".*.tmp"))
    second = _fresh(_DECLARATIONS)
    assert second["parses"] == []
    assert second["declared"] == first["declared"] and len(first["declared"]) > 400
    assert second["constants"] == first["constants"] and second["version"] == first["version"]


def test_a_damaged_or_unwritable_cache_costs_only_the_parse(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path))
    first = _fresh(_DECLARATIONS)
    for kept in (tmp_path / "cffi").glob("*.pickle"):
        kept.write_bytes(b"not a pickle")
    damaged = _fresh(_DECLARATIONS)
    assert damaged["parses"] == first["parses"] and damaged["declared"] == first["declared"]
    assert _fresh(_DECLARATIONS)["parses"] == []  # the damaged files were written again

    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("VERIFY_CACHE", str(blocked))
    unwritable = _fresh(_DECLARATIONS)
    assert unwritable["parses"] == first["parses"] and unwritable["declared"] == first["declared"]


def test_kept_trees_are_keyed_by_the_text_and_restored_on_leaving():
    from cffi import cparser

    from verify.gpu.wgpu_types import _key, trees_kept

    assert _key("typedef int a;") == _key("typedef int a;") != _key("typedef int b;")
    real = cparser._get_parser
    with pytest.raises(RuntimeError), trees_kept(Path("/nonexistent")):
        assert cparser._get_parser is not real
        raise RuntimeError
    assert cparser._get_parser is real
