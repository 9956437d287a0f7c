"""The dawn implementation: Dawn (Chromium's WebGPU implementation, WGSL compiled by Tint) through Node."""

from verify.gpu.dawn.device import Dawn, DawnDevice, DawnPipeline, list_dawn_adapters

__all__ = ["Dawn", "DawnDevice", "DawnPipeline", "list_dawn_adapters"]
