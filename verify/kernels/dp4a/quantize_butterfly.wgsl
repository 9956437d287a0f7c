// block_max over (native or emulated) subgroups of any power-of-two width
// (PR microsoft/onnxruntime#33560): an XOR butterfly inside the subgroup that stops below
// distance BLOCK_LANES, so a subgroup wider than a block (64 or 128 lanes) keeps its blocks
// apart; a subgroup narrower than a block leaves one maximum per subgroup, and the block's
// subgroups combine theirs through workgroup memory, behind a barrier (without it, ORT's sg16
// path read other subgroups' maxima before they were written; docs/ort-dp4a.md §9.3).

var<workgroup> subgroup_max: array<a_t, WORKGROUP_LANES>;

fn block_max(lanes: Lanes, lane_max: a_t) -> a_t {
  let width = subgroup_width(lanes);
  let span = min(width, BLOCK_LANES);
  var m = lane_max;
  for (var distance = 1u; distance < span; distance <<= 1u) {
    m = max(m, shuffle_xor(lanes, m, distance));
  }
  if (span < BLOCK_LANES) {
    if (lanes.local % width == 0u) {
      subgroup_max[lanes.local / width] = m;
    }
    workgroupBarrier();
    let per_block = BLOCK_LANES / width;
    let first = lanes.local / BLOCK_LANES * per_block;
    for (var i = 0u; i < per_block; i++) {
      m = max(m, subgroup_max[first + i]);
    }
  }
  return m;
}
