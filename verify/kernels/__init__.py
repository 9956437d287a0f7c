"""Kernels under test: the contract every kernel meets (contract), how kernels are found
(registry: entry points and import paths), how WGSL is specialised on a config (specialize), and
one folder per kernel family of verify's own (attention, dp4a), each holding the family's
contracts, WGSL, case strategies, family checks, fast path and case sizes."""
