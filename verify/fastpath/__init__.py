"""The float64 references and budgets the gate needs most, computed fast with the same numbers.

references/ is the plain math a reviewer checks against a paper and verify/budgets/ the error
model with its derivations; both stay the definition. This package is a second implementation of
the decode and DP4A pairs, held to the first by tests/fastpath/ (docs/fastpath.md):

- decode: `verify.fastpath.decode.evaluate` (references.decode.decode_attention and
  verify.budgets.attention.decode_budget; logits and LSE bit for bit, o within float64 rounding,
  budgets never smaller and larger by rounding only);
- DP4A matmul: `verify.fastpath.dp4a.evaluate` (references.nbits.dp4a_product and
  verify.budgets.dp4a.matmul_budget, bit for bit);
- `floats`: bit-level twins of verify.budgets.roundoff's ulp and rounding bounds;
- `memo`: one evaluation per case, however many checks ask (`remembered` in each module).

Anything a fast path does not take goes to the plain code, which decides it as before.
"""
