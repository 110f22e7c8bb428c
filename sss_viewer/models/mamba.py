"""Mamba infinite-context classifier: a whole channel ``(1, T)`` or windows ``(B, L)`` → ``(B,)``.

The SSS paper's Mamba baseline (appendix C): Mamba blocks from the pure-PyTorch ``mambapy``
package (``mambapy.mamba.Mamba`` / ``MambaConfig``; each block is ``x + mixer(RMSNorm(x))`` with
the selective-scan mixer of Gu & Dao, 2023, computed by a parallel scan), on PatchTST-style
patches of 64 samples with stride 16, 2 layers and ``lr=1e-6`` (App. C best; ``d_model`` was
searched over {16, 32, 64} with no best marked, 32 is used).

Pipeline
--------
``x (B, T)`` → RevIN over the whole sequence → patches ``(B, N, patch_size)`` with
``N = (T - patch_size) // patch_stride + 1`` → linear patch embedding to ``d_model`` → ``n_layers``
Mamba residual blocks → final RMSNorm → mean over the ``N`` tokens → dropout → linear head.

No padding is added: any ``T >= patch_size`` works (shorter input raises a ValueError naming the
minimum); samples past the last full patch (fewer than ``patch_stride``) are not seen.

Memory
------
``mambapy``'s parallel scan materialises ``(B, N', 2 * d_model, d_state)`` float32 tensors, with
``N'`` the token count rounded up to a power of two, several times per layer: about 270 MB each
for a 10^6-sample channel at the default sizes (62,497 tokens), so a 1 kHz channel of ~17 minutes
needs a few GB in eval mode and more to train.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from torch import Tensor, nn

from sss_viewer._lazy import require
from sss_viewer.models.base import WindowModel
from sss_viewer.models.revin import RevIN

logger = logging.getLogger(__name__)

__all__ = ["APP_C_BEST", "MambaClassifier"]

APP_C_BEST: dict[str, Any] = {
    "lr": 1e-6,
    "n_layers": 2,
    "patch_size": 64,
    "patch_stride": 16,
    "d_model": None,
    "note": "App. C table 'Mamba': lr {1e-4,1e-5,1e-6} best 1e-6; layers {1,2,3} best 2; "
    "d_model {16,32,64} with no best marked (32 used as default); patching 64/16.",
}
"""Best configuration from the paper's appendix C (learning rate and sizes)."""


class MambaClassifier(WindowModel):
    """Mamba classifier over a whole sequence: ``(B, T)`` float32 → ``(B,)`` logits.

    Parameters
    ----------
    d_model : int
        Token width.
    n_layers : int
        Mamba residual blocks.
    patch_size : int
        Samples per token.
    patch_stride : int
        Step between token starts.
    d_state : int
        SSM state size per channel (``mambapy`` default 16).
    expand_factor : int
        Inner width multiplier of the Mamba mixer (default 2).
    d_conv : int
        Width of the mixer's causal depthwise convolution (default 4).
    head_dropout : float
        Dropout on the pooled features before the linear head.
    revin : bool
        Instance-normalise every row over its whole length (RevIN) first.
    revin_affine : bool
        Learn RevIN's scalar affine map.
    revin_eps : float
        RevIN's variance floor.

    Attributes
    ----------
    min_length : int
        Smallest accepted ``T`` (``patch_size``).
    """

    name: ClassVar[str] = "mamba"
    positive_ints = ("d_model", "n_layers", "patch_size", "patch_stride", "d_state", "expand_factor", "d_conv")
    fractions = ("head_dropout",)

    def __init__(
        self,
        d_model: int = 32,
        n_layers: int = 2,
        patch_size: int = 64,
        patch_stride: int = 16,
        d_state: int = 16,
        expand_factor: int = 2,
        d_conv: int = 4,
        head_dropout: float = 0.2,
        revin: bool = True,
        revin_affine: bool = True,
        revin_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.patch_stride = patch_stride
        self.min_length = patch_size
        self.revin = RevIN(revin_eps, revin_affine) if revin else nn.Identity()
        self.patch_embed = nn.Linear(patch_size, d_model)
        mambapy = require("mambapy.mamba", extra="mamba", feature="The Mamba backbone")  # not needed to list models
        self.mamba = mambapy.Mamba(
            mambapy.MambaConfig(
                d_model=d_model,
                n_layers=n_layers,
                d_state=d_state,
                expand_factor=expand_factor,
                d_conv=d_conv,
                pscan=True,
                use_cuda=False,
            )
        )
        self.norm = mambapy.RMSNorm(d_model)
        self.head_dropout = nn.Dropout(head_dropout)
        self.head = nn.Linear(d_model, 1)

    def n_tokens(self, length: int) -> int:
        """Tokens for a sequence of ``length`` samples."""
        return (length - self.patch_size) // self.patch_stride + 1

    def forward(self, x: Tensor) -> Tensor:
        self.check_input(x)
        patches = self.revin(x).unfold(-1, self.patch_size, self.patch_stride)  # (B, N, P)
        z = self.norm(self.mamba(self.patch_embed(patches)))  # (B, N, d_model)
        return self.head(self.head_dropout(z.mean(dim=1))).squeeze(-1)
