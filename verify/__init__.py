"""verify: prove WebGPU LLM kernels correct against float64 references with derived budgets."""

__version__ = "0.1.0"
