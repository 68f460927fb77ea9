"""Dynamic int8 quantization of the Linear layers (weights int8, activations quantized on the fly)."""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn


def quantize_linear_int8(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with every ``nn.Linear`` replaced by its dynamic int8 version (CPU)."""
    with warnings.catch_warnings():
        # torch.ao.quantization is deprecated in favour of torchao, which is not a dependency here.
        warnings.simplefilter("ignore")
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(copy.deepcopy(model).cpu().eval(), {nn.Linear}, dtype=torch.qint8)
