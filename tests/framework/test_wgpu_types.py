"""verify.gpu.wgpu_types: wgpu-py's C types parsed in one pass are cffi's own, and they are all
a check's run needs (each case in a fresh process: cffi's cache lives as long as the process)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

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
