// Rotary frequencies with Llama 3 scaling, as the models' reference code writes it (HF
// `_compute_llama3_parameters`; TVM's `rope_freq_llama3` is the same map in clamp form), for
// four dims whose exponents e = ((2d) mod D) / D are given, in f32. With f = theta^(-e) and its
// wavelength w = 2 pi / f:
//   w < HIGH_FREQ_WAVELENGTH (original / high): f            (short waves are kept)
//   w > LOW_FREQ_WAVELENGTH  (original / low):  f / factor   (long waves are stretched)
//   otherwise, with HF's `smooth_factor` (`smooth` is a WGSL reserved word)
//     weight = (original / w - low) / (high - low) in [0, 1]:
//                                               (1 - weight) f / factor + weight f
// The map is continuous at both edges (weight 0 gives f / factor, weight 1 gives f), so a
// frequency within rounding of an edge may take either branch and lands within the error the
// budget allows for the weight (verify.budgets.rope.llama3_frequency_rel).
const TWO_PI: f32 = 6.283185307179586;

fn rope_frequencies(theta: f32, exponent: vec4<f32>) -> vec4<f32> {
  let freq = pow(vec4<f32>(theta), -exponent);
  let wavelength = TWO_PI / freq;
  let weight = (ORIGINAL_MAX_POSITION / wavelength - LOW_FREQ_FACTOR) / (HIGH_FREQ_FACTOR - LOW_FREQ_FACTOR);
  let blended = (1.0 - weight) * freq / ROPE_FACTOR + weight * freq;
  let long_waves = select(blended, freq / ROPE_FACTOR, wavelength > vec4<f32>(LOW_FREQ_WAVELENGTH));
  return select(long_waves, freq, wavelength < vec4<f32>(HIGH_FREQ_WAVELENGTH));
}
