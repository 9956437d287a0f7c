"""The dawn backend: Dawn (Chromium's WebGPU implementation, WGSL compiled by Tint) through Node."""

from verify.gpu.dawn.device import DawnDevice, DawnPipeline, list_dawn_adapters

__all__ = ["DawnDevice", "DawnPipeline", "list_dawn_adapters"]
