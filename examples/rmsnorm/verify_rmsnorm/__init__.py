"""An out-of-tree verify kernel: fused RMSNorm, y = x / sqrt(mean(x^2) + eps) * w, per row."""

from verify_rmsnorm.kernel import RmsNorm

__all__ = ["RmsNorm"]
