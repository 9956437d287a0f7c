// Rotary frequencies, unscaled (TVM position_embedding.py `rope_freq_default`): f = theta^(-e)
// for four dims whose exponents e = ((2d) mod D) / D are given, in f32.
fn rope_frequencies(theta: f32, exponent: vec4<f32>) -> vec4<f32> {
  return pow(vec4<f32>(theta), -exponent);
}
