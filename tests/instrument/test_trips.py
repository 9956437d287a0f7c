"""`count_trips` counts a kernel's loop trips in the kernel itself: per loop, the most trips one
execution made in any invocation; per invocation, every trip of every loop added up (lavapipe's
loop cap counts so, docs/findings.md §9). The kernel's own outputs are untouched."""

from __future__ import annotations

import numpy as np
import pytest

from verify.gpu import Output
from verify.gpu.uniforms import pack_struct
from verify.instrument.trips import TripCountingDevice, count_trips

#: Two sequential loops of `n` trips, then a 10 x 10 nest, in each of 4 invocations; invocation i
#: runs its second loop only to n - i, so the largest counts come from different invocations.
_LOOPS = """
struct Trips { n: u32, }
@group(0) @binding(0) var<storage, read_write> ran: array<u32>;
@group(0) @binding(1) var<uniform> trips: Trips;

@compute @workgroup_size(4)
fn main(@builtin(local_invocation_index) lane: u32) {
  var first = 0u;
  for (var i = 0u; i < trips.n; i++) { first += 1u; }
  var second = 0u;
  var j = 0u;
  while (j + lane < trips.n) { second += 1u; j += 1u; }
  var nested = 0u;
  loop {
    if (nested >= 100u) { break; }
    for (var k = 0u; k < 10u; k++) { nested += 1u; }
  }
  ran[lane] = first + second + nested;
}
"""


def test_every_loop_kind_is_counted_with_its_line():
    counted = count_trips(_LOOPS)
    assert [(loop.number, loop.text.split("(")[0].strip()) for loop in counted.loops] == \
        [(0, "for"), (1, "while"), (2, "loop {"), (3, "for")]
    assert "_trips_max" in counted.wgsl and counted.wgsl.count("atomicMax") == 8


@pytest.mark.webgpu
def test_counts_are_the_largest_per_loop_and_per_invocation_and_outputs_are_the_kernels(webgpu_device):
    device = TripCountingDevice(webgpu_device)
    pipeline = device.pipeline(_LOOPS)
    n = 300
    uniform = pack_struct(pipeline.interface.structs["Trips"], {"n": n})
    ran = device.run(pipeline, {"ran": Output(np.uint32, (4,)), "trips": uniform}, 1).outputs["ran"]
    assert ran.tolist() == [n + (n - lane) + 100 for lane in range(4)]
    # first: n; second: n (lane 0); the outer `loop`: 10 trips, 11 entered (the last breaks);
    # the inner `for`: 10 per execution; lane 0 in all: n + n + 11 + 100.
    assert device.last.per_loop == (n, n, 11, 10)
    assert device.last.invocation == n + n + 11 + 100
    assert device.launch_invocation == device.last.invocation
    device.reset()
    assert device.last is None and device.launch_invocation == 0
