"""`verify setup --llamacpp`: llama.cpp's pinned sources in the cache, said in one line, or one error line."""

from __future__ import annotations

import pytest

from verify.cli import main as verify_main
from verify.sources.llamacpp import source


def test_setup_check_without_the_sources_is_one_line_naming_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(source.CACHE_ENV, str(tmp_path))
    assert verify_main(["setup", "--llamacpp", "--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "verify setup --llamacpp" in err[0] and str(tmp_path) in err[0]
    assert not any(tmp_path.iterdir())  # --check installs nothing


def test_setup_with_the_sources_in_the_cache_says_where(capsys):
    if source.extracted() is None:
        pytest.skip(f"the pinned ggml-webgpu sources are not in the cache ({source.INSTALL})")
    assert verify_main(["setup", "--llamacpp", "--check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"llama.cpp ggml-webgpu ({source.DISTRIBUTION} {source.VERSION}): in {source.extracted()}" in lines
