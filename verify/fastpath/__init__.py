"""What fast float64 references and budgets share: bit-level float helpers and a per-case memo.

references/ is the plain math a reviewer checks against a paper and verify/budgets/ the error
model with its derivations; both stay the definition. A family may add a second implementation of
its heaviest pairs, held to the first by tests/fastpath/ (docs/fastpath.md); each lives in its
family's folder:

- decode: `verify.kernels.attention.fastpath.evaluate` (references.decode.decode_attention and
  verify.budgets.attention.decode_budget; logits and LSE bit for bit, o within float64 rounding,
  budgets never smaller and larger by rounding only);
- DP4A matmul: `verify.kernels.dp4a.fastpath.evaluate` (references.nbits.dp4a_product and
  verify.budgets.dp4a.matmul_budget, bit for bit);
- `floats`: bit-level twins of verify.budgets.roundoff's ulp and rounding bounds;
- `memo`: one evaluation per case, however many checks ask (`remembered` in each module).

Anything a fast path does not take goes to the plain code, which decides it as before.
"""
