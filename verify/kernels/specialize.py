"""Turn a kernel's .wgsl body into the exact module for one config, visibly.

The body files reference constants (HEAD_DIM, ...) and type aliases (qkv_t, ...) that a short
header defines; the header's first lines record the kernel and config, so a module printed
by `verify show`, edited and handed back with `--wgsl` can be checked against the config it
was made for.
"""

from __future__ import annotations

import re
from importlib import resources

from verify.errors import UsageError
from verify.wgsl.source_map import marker

_CONFIG_LINE = re.compile(r"^//\s*config:(.*)$", re.M)


def body(package: str, filename: str) -> str:
    """A .wgsl file shipped next to its contract (`package` is the contract's `__package__`),
    starting with a marker line naming it (verify.wgsl.source_map), so messages about a line of
    the specialised module also name the line of this file."""
    text = resources.files(package).joinpath(filename).read_text()
    return marker(f"{package.replace('.', '/')}/{filename}") + "\n" + text


def _literal(value) -> tuple[str, str]:
    if isinstance(value, bool):
        return "bool", "true" if value else "false"
    if isinstance(value, int):
        return ("u32", f"{value}u") if value >= 0 else ("i32", f"{value}i")
    if isinstance(value, float):
        return "f32", repr(value)
    raise TypeError(f"cannot write {value!r} as a WGSL constant")


def config_line(config: dict) -> str:
    """The header line recording a module's config (`// config: k=v ...`), which `verify check
    --wgsl` reads back to check an edited file against the config it was made for."""
    return "// config: " + " ".join(f"{k}={v}" for k, v in sorted(config.items()))


def specialize(kernel: str, source: str, config: dict, *, enables=(), aliases=None, constants=None) -> str:
    """Header (kernel, config, enables, aliases, constants) + body."""
    lines = [f"// verify kernel: {kernel}", config_line(config)]
    lines += [f"enable {e};" for e in enables]
    lines += [f"alias {name} = {target};" for name, target in (aliases or {}).items()]
    for name, value in (constants or {}).items():
        wgsl_type, literal = _literal(value)
        lines.append(f"const {name}: {wgsl_type} = {literal};")
    return "\n".join(lines) + "\n\n" + source


def recorded_config(wgsl: str) -> dict | None:
    """The config a module's header says it was made for (None if it has no header)."""
    match = _CONFIG_LINE.search(wgsl)
    if not match:
        return None
    pairs = (item.split("=", 1) for item in match[1].split() if "=" in item)
    return {k: v for k, v in pairs}


def check_recorded_config(wgsl: str, config: dict, origin: str) -> None:
    """A user's file made for another config would be judged against the wrong reference."""
    recorded = recorded_config(wgsl)
    if recorded is None:
        return
    differ = [f"{k}={recorded[k]} (file) vs {config[k]} (--config)"
              for k in sorted(recorded) if k in config and str(config[k]) != recorded[k]]
    if differ:
        raise UsageError(f"{origin} was specialised for another config: {'; '.join(differ)}; "
                         "pass the matching --config or regenerate it with `verify show`")
