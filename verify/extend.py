"""What a kernel author needs beyond `verify` itself: writing WGSL for a config, packing
uniforms, checks of one's own, WebGPU implementations of one's own, and case sizes per profile.

`import verify` gives the kernel contract (`Kernel`, `ConfigKey`, `Expected`, `Case`, `Launched`,
`Output`, `InOut`); this module gives the rest of the extension surface. Everything here is public
and kept stable; the modules it comes from are internal.

WGSL:
    wgsl_file(package, filename)   a .wgsl file shipped next to the kernel's contract (with the
                                   marker that maps sanitizer line numbers back to it)
    specialize(kernel, source, config, *, enables=(), aliases=None, constants=None)
                                   the exact module for one config: a header recording the
                                   kernel and config, then the source
    config_line(config)            the header's `// config: ...` line, for WGSL made otherwise
    pack_struct(struct, values)    a uniform struct's bytes by WGSL's layout; the struct is
                                   `pipeline.interface.structs[NAME]`

Checks (register under the entry-point group `verify.checks`, or call `register`):
    Check, CheckContext, Outcome, Preflight, CaseFamilyCheck, register

WebGPU implementations (register under `verify.implementations`):
    Implementation, Device, AdapterInfo, ShaderCompileError

Case sizes and results:
    FamilySizes, Profile, Verdict, FailureKind

Budget helpers with their signatures are in `verify.budgets` (docs/budgets.md §10).
"""

from verify.checks import CaseFamilyCheck, Check, CheckContext, Outcome, Preflight, register
from verify.errors import FailureKind
from verify.gpu.device import AdapterInfo, Device, ShaderCompileError
from verify.gpu.implementations import Implementation
from verify.gpu.uniforms import pack_struct
from verify.kernels.specialize import body as wgsl_file
from verify.kernels.specialize import config_line, specialize
from verify.profiles import FamilySizes, Profile
from verify.results.record import Verdict

__all__ = [
    "AdapterInfo", "CaseFamilyCheck", "Check", "CheckContext", "Device", "FailureKind", "FamilySizes",
    "Implementation", "Outcome", "Preflight", "Profile", "ShaderCompileError", "Verdict", "config_line",
    "pack_struct", "register", "specialize", "wgsl_file",
]
