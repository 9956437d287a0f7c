"""Standalone reproductions of a kernel's failure: WebGPU calls and numbers a maintainer runs in a
browser, with wgpu or with Dawn, without verify (docs/findings.md "Reproductions", docs/cli.md).

- `recording`: a device that records what a kernel's launch asks of it;
- `capture`: one case as pipelines, buffers, dispatches and per-element acceptable intervals;
- `write`: the folder's files (repro.html, repro.py, repro.mjs, repro.json, kernel.wgsl, ISSUE.md),
  written all at once;
- `export`: a saved case file as such a folder (`verify export`);
- `findings`: every documented upstream finding as such a folder (`verify findings export`).
"""
