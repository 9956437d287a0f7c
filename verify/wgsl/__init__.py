"""verify's one WGSL front end: a parser from the specification's grammar, WGSL types with their
byte layout, constant evaluation, and a module's interface.

- `parse(source) -> Module`: the whole module (the instrumentation rewrites it);
  `parse_declarations(source)`: module-scope declarations only, with function bodies blanked,
  for reading interfaces and resources cheaply.
- `read_interface(source) -> Interface`: bindings, structs (with layout) and entry points.
- `Declarations(module)`: module-scope names, constant evaluation (`evaluate`), types (`resolve`).
- verify.wgsl.types: `Scalar`, `Vector`, `Matrix`, `Array`, `Struct`, ... and `byte_size`,
  `byte_align`, `member_offsets` (WGSL §14.4).
- `sha256(source)`: the hash that names a WGSL text in caches, records and case files.
"""

import hashlib

from verify.wgsl.declarations import Declarations
from verify.wgsl.interface import Binding, EntryPoint, Interface, read_interface
from verify.wgsl.parser import Module, WgslSyntaxError, blank_comments, parse, parse_declarations
from verify.wgsl.types import UnsupportedWgsl


def sha256(source: str) -> str:
    """The sha256 of a WGSL text (hex): the key of pipeline caches and the identity records carry."""
    return hashlib.sha256(source.encode()).hexdigest()


__all__ = [
    "Binding", "Declarations", "EntryPoint", "Interface", "Module", "UnsupportedWgsl", "WgslSyntaxError",
    "blank_comments", "parse", "parse_declarations", "read_interface", "sha256",
]
