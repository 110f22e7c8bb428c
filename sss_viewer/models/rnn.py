"""Recurrent infinite-context classifiers: a whole channel ``(1, T)`` or windows ``(B, L)`` → ``(B,)``.

GRU and LSTM baselines of the SSS paper (appendix C, "GRUs": :class:`torch.nn.GRU`, best
configuration ``d_model=32``, 3 layers, bidirectional, ``lr=1e-4``). The paper has no LSTM table;
:class:`LSTMClassifier` uses the GRU's best sizes.

Pipeline
--------
``x (B, T)`` → RevIN over the whole sequence → optional patching (``patch_size``/``patch_stride``;
``1/1`` feeds raw samples) → ``n_layers`` recurrent layers of width ``d_model`` (both directions
when ``bidirectional``) → pooling over time → dropout → linear head → one logit per row.

Any ``T >= patch_size`` (and ``T >= 2``) is accepted and no padding is ever added, so the same
model scores a batch of fixed windows or one variable-length channel (batch size 1). Samples past
the last full patch (fewer than ``patch_stride``) are not seen.

Recommendation for long channels
--------------------------------
At 1 kHz a channel holds 10^5–10^6 samples; a recurrent pass over raw samples is sequential in
``T`` (about 10^5 steps per layer and direction), slow on CPU and prone to vanishing gradients.
Use patches for whole channels, e.g. ``patch_size=16, patch_stride=8`` (8x fewer steps, each step
sees 16 samples through the input projection). Raw samples (``1/1``, the paper's setting as far
as appendix C states) remain the default for fidelity.

Pooling
-------
``pooling="mean"`` (default) averages the top layer's outputs over time (both directions
concatenated): length-invariant and it lets every time step receive gradient, which matters for
10^4+ steps. ``pooling="last"`` uses the final hidden state of each direction of the top layer
(forward: after the last step, backward: after the first), the classic choice for short windows.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from torch import Tensor, nn

from sss_viewer.models.base import WindowModel
from sss_viewer.models.revin import RevIN

logger = logging.getLogger(__name__)

__all__ = ["APP_C_BEST", "GRUClassifier", "LSTMClassifier"]

APP_C_BEST: dict[str, dict[str, Any]] = {
    "gru": {
        "lr": 1e-4,
        "d_model": 32,
        "n_layers": 3,
        "bidirectional": True,
        "note": "App. C table 'GRUs' (red entries); search: lr {1e-4,1e-5,1e-6}, "
        "d_model {16,32,64}, layers {1,2,3}, bidirectional {True,False}.",
    },
    "lstm": {
        "lr": 1e-4,
        "d_model": 32,
        "n_layers": 3,
        "bidirectional": True,
        "note": "No table in App. C; GRU's used.",
    },
}
"""Best configurations from the paper's appendix C (learning rate and sizes)."""


class _RecurrentClassifier(WindowModel):
    """Shared implementation of :class:`GRUClassifier` and :class:`LSTMClassifier`."""

    name: ClassVar[str] = ""
    positive_ints = ("d_model", "n_layers", "patch_size", "patch_stride")
    fractions = ("dropout", "head_dropout")
    choices: ClassVar[dict[str, tuple]] = {"pooling": ("mean", "last")}
    _rnn_cls: ClassVar[type[nn.RNNBase]]

    def __init__(
        self,
        d_model: int = 32,
        n_layers: int = 3,
        bidirectional: bool = True,
        patch_size: int = 1,
        patch_stride: int = 1,
        dropout: float = 0.2,
        head_dropout: float = 0.2,
        pooling: str = "mean",
        revin: bool = True,
        revin_affine: bool = True,
        revin_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.patch_stride = patch_stride
        self.pooling = pooling
        self.bidirectional = bool(bidirectional)
        self.min_length = max(2, patch_size)
        self.revin = RevIN(revin_eps, revin_affine) if revin else nn.Identity()
        self.rnn = self._rnn_cls(
            input_size=patch_size,
            hidden_size=d_model,
            num_layers=n_layers,
            batch_first=True,
            dropout=float(dropout) if n_layers > 1 else 0.0,  # between layers only
            bidirectional=self.bidirectional,
        )
        n_dir = 2 if self.bidirectional else 1
        self.head_dropout = nn.Dropout(head_dropout)
        self.head = nn.Linear(n_dir * d_model, 1)

    def n_steps(self, length: int) -> int:
        """Recurrent steps for a sequence of ``length`` samples (number of patches)."""
        return (length - self.patch_size) // self.patch_stride + 1

    def patchify(self, x: Tensor) -> Tensor:
        """Cut sequences into patches.

        Parameters
        ----------
        x : Tensor, shape (B, T)

        Returns
        -------
        Tensor, shape (B, N, patch_size)
            ``N = (T - patch_size) // patch_stride + 1``; a strided view, no copy.
        """
        return x.unfold(-1, self.patch_size, self.patch_stride)

    def forward(self, x: Tensor) -> Tensor:
        self.check_input(x)
        tokens = self.patchify(self.revin(x))  # (B, N, P)
        out, state = self.rnn(tokens)  # out: (B, N, n_dir * d_model)
        if self.pooling == "mean":
            pooled = out.mean(dim=1)
        else:
            h = state[0] if isinstance(state, tuple) else state  # (n_layers * n_dir, B, d_model)
            n_dir = 2 if self.bidirectional else 1
            pooled = h[-n_dir:].transpose(0, 1).reshape(x.shape[0], -1)
        return self.head(self.head_dropout(pooled)).squeeze(-1)


class GRUClassifier(_RecurrentClassifier):
    """GRU classifier over a whole sequence: ``(B, T)`` float32 → ``(B,)`` logits.

    Parameters
    ----------
    d_model : int
        Hidden size per direction (App. C best: 32).
    n_layers : int
        Stacked recurrent layers (App. C best: 3).
    bidirectional : bool
        Run both directions (App. C best: True).
    patch_size, patch_stride : int
        Samples per recurrent step and the step between them; ``1/1`` feeds raw samples.
        ``16/8`` is recommended for whole channels (see the module docstring).
    dropout : float
        Dropout between recurrent layers (ignored for one layer).
    head_dropout : float
        Dropout on the pooled features before the linear head.
    pooling : {"mean", "last"}
        Mean of the top layer's outputs over time, or the final hidden states.
    revin : bool
        Instance-normalise every row over its whole length (RevIN) first.
    revin_affine : bool
        Learn RevIN's scalar affine map.
    revin_eps : float
        RevIN's variance floor.

    Attributes
    ----------
    min_length : int
        Smallest accepted ``T``: ``max(2, patch_size)``.
    """

    name: ClassVar[str] = "gru"
    _rnn_cls = nn.GRU


class LSTMClassifier(_RecurrentClassifier):
    """LSTM classifier over a whole sequence: ``(B, T)`` float32 → ``(B,)`` logits.

    Same parameters and defaults as :class:`GRUClassifier` (the paper gives no LSTM table; the
    GRU's best sizes are used), with :class:`torch.nn.LSTM` as the recurrent stack.
    ``pooling="last"`` uses the final hidden (not cell) states.
    """

    name: ClassVar[str] = "lstm"
    _rnn_cls = nn.LSTM
