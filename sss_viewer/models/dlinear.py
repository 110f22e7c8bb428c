"""DLinear window classifier: one univariate window ``(B, L)`` to one logit per window ``(B,)``.

Zeng et al. (2023), *Are Transformers Effective for Time Series Forecasting?*, used as a
finite-context baseline in the SSS paper (appendix C, "DLinear", via the Time-Series-Library).
Written from the paper's description, not from any published code.

Architecture
------------
RevIN → series decomposition ``x = trend + seasonal`` where ``trend`` is a moving average of
``moving_avg`` samples (the series is extended at both ends by repeating its first / last value
so the trend has length ``L``) → one linear layer ``L → d_hidden`` on the seasonal part and one on
the trend, summed → dropout → linear ``d_hidden → 1``.

Head choice (deviation)
-----------------------
The Time-Series-Library classifier maps each component ``L → L`` (its ``pred_len`` equals the
input length) and then flattens into the class projection: ``2 L²`` weights, 200 M at the
paper's ``L = 10000``. Every map in DLinear is linear, so the hidden width changes only the
parametrisation, not the family of functions (a linear functional of the normalised window, with
dropout in between). We use ``d_hidden`` (default 128) instead; ``d_hidden=window_length``
reproduces the library's sizes.

Mask
----
``forward(x, mask)``: RevIN statistics are taken over the valid samples only, and padded samples
are set to 0 (the window mean, in normalised units) before the decomposition, so the output does
not depend on what the padding holds. The linear layers still see the zeros at padded positions
(the model has a fixed input length); the moving average near the end of the valid part averages
in those zeros.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer.models.base import WindowModel
from sss_viewer.models.revin import MaskedRevIN

__all__ = ["APP_C_BEST", "DLinear", "MaskedRevIN"]

APP_C_BEST: dict[str, Any] = {"moving_avg": 25, "lr": 1e-6, "window_length": 10000}
"""The paper's best DLinear configuration (appendix C, red entries); ``lr`` is for Adam."""


def moving_average(x: Tensor, kernel: int) -> Tensor:
    """Moving average over the last axis with edge replication, same length as the input.

    Parameters
    ----------
    x : Tensor, shape (B, L)
    kernel : int
        Window of the average; the series is extended by ``(kernel - 1) // 2`` copies of its
        first value and ``kernel - 1 - (kernel - 1) // 2`` copies of its last value.

    Returns
    -------
    Tensor, shape (B, L)
    """
    if kernel == 1:
        return x
    front = (kernel - 1) // 2
    back = kernel - 1 - front
    padded = torch.cat([x[:, :1].expand(-1, front), x, x[:, -1:].expand(-1, back)], dim=1)
    return F.avg_pool1d(padded.unsqueeze(1), kernel, stride=1).squeeze(1)


class DLinear(WindowModel):
    """DLinear classifier for univariate windows: ``(B, L)`` float32 → ``(B,)`` logits.

    Parameters
    ----------
    window_length : int
        Window length ``L`` in samples (App. C's best is 10000; see :data:`APP_C_BEST`).
    moving_avg : int
        Kernel of the trend moving average (App. C best: 25).
    d_hidden : int
        Output width of the seasonal and trend linear layers (see the module notes).
    dropout : float
        Dropout on the summed components before the output layer.
    revin : bool
        Instance-normalise every window (RevIN).
    revin_affine : bool
        Learn RevIN's scalar affine map.
    revin_eps : float
        RevIN's variance floor.

    Notes
    -----
    The seasonal and trend layers are initialised as in the DLinear paper's description: every
    weight ``1 / L`` (a moving average of the input) with zero bias; the output layer uses
    PyTorch's default initialisation.
    """

    name: ClassVar[str] = "dlinear"
    positive_ints = ("window_length", "moving_avg", "d_hidden")
    fractions = ("dropout",)

    def __init__(
        self,
        window_length: int = 1024,
        moving_avg: int = 25,
        d_hidden: int = 128,
        dropout: float = 0.2,
        revin: bool = True,
        revin_affine: bool = True,
        revin_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        if moving_avg > window_length:
            raise ValueError(f"Invalid moving_avg={moving_avg}: longer than window_length={window_length}.")
        self.window_length = window_length
        self.moving_avg = moving_avg
        self.revin = MaskedRevIN(revin_eps, revin_affine) if revin else None
        self.seasonal = nn.Linear(window_length, d_hidden)
        self.trend = nn.Linear(window_length, d_hidden)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d_hidden, 1)
        for layer in (self.seasonal, self.trend):
            nn.init.constant_(layer.weight, 1.0 / window_length)
            nn.init.zeros_(layer.bias)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        x = self.masked_input(x, mask, self.revin)
        trend = moving_average(x, self.moving_avg)
        z = self.seasonal(x - trend) + self.trend(trend)  # (B, d_hidden)
        return self.head(self.dropout(z)).squeeze(-1)
