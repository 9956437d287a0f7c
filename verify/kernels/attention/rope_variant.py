"""Which rotary embedding a kernel applies: the pairing of dims and the frequency scaling.

Shipped models differ in two ways (references/rope.py):

- pairing: NeoX (dim d with d + D/2; Llama, Qwen, TVM's attention kernels) or GPT-J (2i with
  2i + 1; GPT-J, some ports);
- scaling: none (f_d = theta^(-e_d)) or Llama 3's (low frequencies divided by `rope_factor`,
  high ones kept, the band between interpolated), with the parameters of the model's
  config.json `rope_scaling` block. Llama 3.1: factor 8, low 1, high 4, original 8192;
  Llama 3.2 1B/3B: factor 32, low 1, high 4, original 8192.

Both are compiled into the WGSL, so they are config keys. The Llama 3 parameters apply only
with rope_scaling=llama3: a config without it carries no such keys (`trim_config`), so what
the console and the report show is the variant a kernel ran, nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.errors import UsageError
from verify.kernels.contract import ConfigKey
from verify.references.rope import Llama3Scaling

ROPE_SCALING = ConfigKey("rope_scaling", "none", ("none", "llama3"),
                         "frequency scaling: none, or llama3 (HF rope_type llama3, compiled into the WGSL)")
ROPE_FACTOR = ConfigKey("rope_factor", 8.0, (),
                        "llama3 only: low frequencies are divided by it (Llama 3.1: 8, 3.2: 32)")
LOW_FREQ_FACTOR = ConfigKey("low_freq_factor", 1.0, (), "llama3 only: wavelengths above original/low are divided")
HIGH_FREQ_FACTOR = ConfigKey("high_freq_factor", 4.0, (), "llama3 only: wavelengths below original/high are kept")
ORIGINAL_MAX_POSITION = ConfigKey("original_max_position", 8192, (),
                                  "llama3 only: original_max_position_embeddings of the model")
ROPE_PAIRING = ConfigKey("rope_pairing", "neox", ("neox", "gptj"),
                         "which dims rotate together: neox (d, d + D/2) or gptj (2i, 2i + 1)")

#: The keys every rope-applying kernel has; kernels that rotate only NeoX-style leave out ROPE_PAIRING.
SCALING_KEYS = (ROPE_SCALING, ROPE_FACTOR, LOW_FREQ_FACTOR, HIGH_FREQ_FACTOR, ORIGINAL_MAX_POSITION)
_LLAMA3_ONLY = tuple(key.name for key in SCALING_KEYS[1:])

#: Llama 3.x `rope_scaling` blocks (config.json of meta-llama/Llama-3.1-8B and Llama-3.2-1B/3B).
LLAMA_3_1 = dict(rope_scaling="llama3", rope_factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                 original_max_position=8192)
LLAMA_3_2 = dict(LLAMA_3_1, rope_factor=32.0)


@dataclass(frozen=True)
class RopeVariant:
    """The rotation a config compiles in: `pairing` ("neox" | "gptj") and `llama3` (None: unscaled)."""

    pairing: str = "neox"
    llama3: Llama3Scaling | None = None

    @classmethod
    def from_config(cls, config: dict) -> RopeVariant:
        llama3 = None
        if config.get("rope_scaling", "none") == "llama3":
            llama3 = Llama3Scaling(float(config["rope_factor"]), float(config["low_freq_factor"]),
                                   float(config["high_freq_factor"]), float(config["original_max_position"]))
        return cls(config.get("rope_pairing", "neox"), llama3)

    def frequency_constants(self) -> dict:
        """Constants `frequency_file` uses (none without scaling). The band edges are wavelengths,
        as the models' reference code compares them: original / high and original / low,
        computed here in float64 so the WGSL rounds each once."""
        if self.llama3 is None:
            return {}
        original = float(self.llama3.original_max_position_embeddings)
        return dict(ROPE_FACTOR=float(self.llama3.factor), LOW_FREQ_FACTOR=float(self.llama3.low_freq_factor),
                    HIGH_FREQ_FACTOR=float(self.llama3.high_freq_factor), ORIGINAL_MAX_POSITION=original,
                    LOW_FREQ_WAVELENGTH=original / self.llama3.low_freq_factor,
                    HIGH_FREQ_WAVELENGTH=original / self.llama3.high_freq_factor)

    @property
    def frequency_file(self) -> str:
        """The .wgsl file defining `rope_frequencies` for this variant."""
        return "rope_frequency_llama3.wgsl" if self.llama3 is not None else "rope_frequency.wgsl"

    def tvm_rope_scaling(self) -> dict:
        """The `rope_scaling` argument of TVM's attention factories (position_embedding.py
        `switch_rope_freq_func`): {} selects the default frequencies."""
        if self.llama3 is None:
            return {}
        return {"rope_type": "llama3", "factor": float(self.llama3.factor),
                "low_freq_factor": float(self.llama3.low_freq_factor),
                "high_freq_factor": float(self.llama3.high_freq_factor),
                "original_max_position_embeddings": int(self.llama3.original_max_position_embeddings)}


def trim_config(config: dict, overrides: dict | None) -> dict:
    """`config` without the Llama 3 parameters when rope_scaling is none (they would be noise in
    every record); naming one of them without rope_scaling=llama3 is a usage error."""
    if config.get("rope_scaling", "none") == "llama3":
        return config
    named = [name for name in _LLAMA3_ONLY if name in (overrides or {})]
    if named:
        raise UsageError(f"{', '.join(named)} apply only with rope_scaling=llama3")
    return {k: v for k, v in config.items() if k not in _LLAMA3_ONLY}


def validate_variant(config: dict) -> None:
    """Raise UsageError for Llama 3 parameters no model uses and the WGSL cannot evaluate."""
    if config.get("rope_scaling", "none") != "llama3":
        return
    try:
        variant = RopeVariant.from_config(config)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    assert variant.llama3 is not None  # from_config makes one for rope_scaling=llama3
    if variant.llama3.high_freq_factor <= variant.llama3.low_freq_factor:
        raise UsageError(f"high_freq_factor={variant.llama3.high_freq_factor} must exceed "
                         f"low_freq_factor={variant.llama3.low_freq_factor}: the kernels compute Llama 3's "
                         "interpolated band (the step form high == low is not offered)")
