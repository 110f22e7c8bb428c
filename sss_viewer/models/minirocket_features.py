"""MiniRocket's transform: 84 fixed kernels, dilations, fitted biases and PPV features, ``(B, T)`` → ``(B, F)``.

Dempster, Schmidt & Webb (2021), *MiniRocket: a very fast (almost) deterministic transform for
time series classification*, written here in PyTorch from the paper's description. Used by the
classifier (:mod:`sss_viewer.models.minirocket`), its per-sample evidence series
(:mod:`sss_viewer.models._minirocket_series`) and the MiniRocket-LR baseline.

Kernels
-------
The 84 kernels of length 9 whose weights are -1 except three taps of 2 (every choice of 3 of the 9
positions), so each kernel sums to zero. Dilations ``floor(2 ** e)`` for ``e`` spread evenly over
``[0, log2((input_length - 1) / 8)]`` (at most 32 distinct values); every dilation gets a share of
the ``num_features`` proportional to how often it appears in that spread, split as the reference
implementation (Dempster et al.'s ``_fit_dilations``, also aeon's) splits it: ``count * (features per
kernel / spread length)`` truncated, the remainder handed out one by one from the smallest dilation
(``dilation_split="reference"``, the default). Models saved before this split was matched used
``"legacy"``: the spread's quotient per entry, the remainder to the first entries of the spread; their
configs (without the key) are rebuilt with it. Kernel ``k`` at dilation
index ``i`` uses "same" zero padding when ``i + k`` is even, else only the valid output positions
(the alternation of the original).

Biases and features
-------------------
Each (dilation, kernel) has several biases, drawn as quantiles of its convolution output on one
training example chosen at random; the quantile levels are the low-discrepancy sequence
``(n * phi) mod 1`` (``phi`` the golden ratio). :meth:`MiniRocketFeatures.fit` sets them from
training data; a model whose biases were never fitted fits them from the first batch it sees in
training mode (a data-dependent initialisation, saved in the state dict like any buffer).
The feature of a (dilation, kernel, bias) is PPV, the proportion of output positions above the
bias. PPV is a global pooling, so one model reads a fixed window and a whole variable-length
channel alike.
"""

from __future__ import annotations

import itertools
import logging
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer._validate import check_option, check_positive_int
from sss_viewer.models.base import check_sequence

logger = logging.getLogger(__name__)

__all__ = [
    "DILATION_SPLITS",
    "KERNEL_LENGTH",
    "MAX_DILATIONS",
    "N_KERNELS",
    "MiniRocketFeatures",
    "kernel_taps",
    "minirocket_dilations",
]

KERNEL_LENGTH = 9
N_KERNELS = 84
MAX_DILATIONS = 32
_PHI = (math.sqrt(5) + 1) / 2
_CPU_CHUNK_BYTES = 1 << 22
"""Convolution outputs of one chunk of rows on the CPU (4 MB of float32): each chunk is convolved and
pooled while it is still in cache, so the one pass per bias does not go back to memory: 209-359
windows/s at 9,996 features and L = 1024 on 2 threads, against 68-75 when the whole batch was
convolved first (measured with the script that ``benchmarks/minirocket_features.py`` replaced)."""
_DEVICE_CHUNK_BYTES = 1 << 26
"""The same bound on an accelerator (64 MB): there, fewer and larger kernels are what is fast."""


def kernel_taps() -> np.ndarray:
    """Positions (0-8) of the three taps of weight 2 of each kernel, shape (84, 3), in kernel order."""
    return np.array(list(itertools.combinations(range(KERNEL_LENGTH), 3)), dtype=np.int64)


def _kernel_weights() -> Tensor:
    """The 84 MiniRocket kernels, shape (84, 9): -1 everywhere, 2 at three positions."""
    weights = -torch.ones(N_KERNELS, KERNEL_LENGTH)
    for k, taps in enumerate(kernel_taps()):
        weights[k, list(taps)] = 2.0
    return weights


DILATION_SPLITS = ("reference", "legacy")
"""How the features per kernel are split over the dilations (see the module docstring)."""


def minirocket_dilations(input_length: int, num_features: int, split: str = "reference") -> tuple[list[int], list[int]]:
    """Dilations and the number of features (biases per kernel) at each.

    Parameters
    ----------
    input_length : int
        Reference length of the series (at least 9).
    num_features : int
        Wanted number of features (rounded down to a multiple of 84, at least 84).
    split : {"reference", "legacy"}
        ``"reference"``: the reference implementation's split (at L = 1024 and 9,996 features the
        first counts are 19, 12, 4, 8); ``"legacy"``: this project's split before it matched the
        reference (16, 10, 4, 7 there), kept so models trained with it load unchanged.

    Returns
    -------
    dilations : list of int
        Distinct dilations, increasing.
    per_dilation : list of int
        Biases per kernel at each dilation; ``84 * sum(per_dilation)`` features in all.
    """
    check_option("split", split, DILATION_SPLITS)
    per_kernel = max(1, num_features // N_KERNELS)
    n_dil = min(per_kernel, MAX_DILATIONS)
    max_exponent = math.log2(max(input_length - 1, KERNEL_LENGTH - 1) / (KERNEL_LENGTH - 1))
    spread = np.floor(np.logspace(0, max_exponent, n_dil, base=2)).astype(np.int64)
    dilations, counts = np.unique(spread, return_counts=True)
    if split == "legacy":
        per_dilation = counts * (per_kernel // n_dil)
        per_dilation[: per_kernel % n_dil] += 1  # the remainder went to the first entries of the spread
    else:
        per_dilation = np.floor(counts * (per_kernel / n_dil)).astype(np.int64)
        remainder = per_kernel - int(per_dilation.sum())
        for i in range(remainder):  # one by one from the smallest dilation, cycling
            per_dilation[i % len(per_dilation)] += 1
    keep = per_dilation > 0
    return dilations[keep].tolist(), per_dilation[keep].tolist()


class MiniRocketFeatures(nn.Module):
    """The MiniRocket transform: ``(B, T)`` → PPV features ``(B, n_features)``.

    Parameters
    ----------
    input_length : int
        Reference length for the dilation range (the SSS window, or the segment length).
    num_features : int
        Wanted number of features (rounded down to a multiple of 84).
    seed : int
        Seed of the bias fitting (which training examples give each kernel's quantiles).
    dilation_split : {"reference", "legacy"}
        How the features are split over the dilations (:func:`minirocket_dilations`).

    Attributes
    ----------
    n_features : int
    fitted : Tensor, bool scalar
        Whether :meth:`fit` has set the biases.
    """

    def __init__(
        self, input_length: int, num_features: int = 9_996, seed: int = 0, dilation_split: str = "reference"
    ) -> None:
        super().__init__()
        check_positive_int("input_length", input_length)
        check_positive_int("num_features", num_features)
        if input_length < KERNEL_LENGTH:
            raise ValueError(f"Invalid input_length={input_length}: expected at least {KERNEL_LENGTH} samples.")
        self.seed = seed
        self.dilations, self.per_dilation = minirocket_dilations(input_length, num_features, dilation_split)
        self.n_features = N_KERNELS * sum(self.per_dilation)
        self.register_buffer("weights", _kernel_weights())
        self.register_buffer("biases", torch.zeros(self.n_features))
        self.register_buffer("fitted", torch.zeros((), dtype=torch.bool))

    @staticmethod
    def _taps(x: Tensor, dilation: int) -> Tensor:
        """The 9 dilated taps of every "same" output position, (B, 9, T), zero outside the series."""
        t = x.shape[-1]
        half = KERNEL_LENGTH // 2 * dilation
        xp = F.pad(x, (half, half))
        return torch.stack([xp[:, j * dilation : j * dilation + t] for j in range(KERNEL_LENGTH)], dim=1)

    def _outputs(self, x: Tensor, dilation: int) -> Tensor:
        """Convolution outputs of all 84 kernels at one dilation with "same" padding, (B, 84, T)."""
        return torch.matmul(self.weights, self._taps(x, dilation))

    @torch.no_grad()
    def fit(self, x: Tensor) -> MiniRocketFeatures:
        """Set the biases from quantiles of the outputs on training examples.

        Parameters
        ----------
        x : Tensor, shape (N, T), float
            Training examples (windows or whole series of one length).

        Returns
        -------
        self
        """
        check_sequence(x, KERNEL_LENGTH, "MiniRocketFeatures.fit")
        gen = torch.Generator().manual_seed(int(self.seed))
        n_all = self.n_features
        levels = torch.from_numpy(((np.arange(1, n_all + 1) * _PHI) % 1).astype(np.float32)).to(x.device)
        offset = 0
        biases = []
        for dilation, n_b in zip(self.dilations, self.per_dilation, strict=True):
            pick = torch.randint(x.shape[0], (N_KERNELS,), generator=gen).to(x.device)
            own = torch.einsum("kj,kjt->kt", self.weights, self._taps(x[pick], dilation))  # kernel k, example k
            q = levels[offset : offset + N_KERNELS * n_b].reshape(N_KERNELS, n_b)
            biases.append(_row_quantiles(own, q).reshape(-1))
            offset += N_KERNELS * n_b
        self.biases.copy_(torch.cat(biases))
        self.fitted.fill_(True)
        return self

    def forward(self, x: Tensor) -> Tensor:
        """PPV features.

        Parameters
        ----------
        x : Tensor, shape (B, T), float

        Returns
        -------
        Tensor, shape (B, n_features), float
            Per dilation (increasing), per kernel, per bias.
        """
        b, t = x.shape
        feats = x.new_empty(b, self.n_features)
        kernels = torch.arange(N_KERNELS, device=x.device)
        chunk_bytes = _CPU_CHUNK_BYTES if x.device.type == "cpu" else _DEVICE_CHUNK_BYTES
        step = max(1, chunk_bytes // (x.element_size() * N_KERNELS // 2 * t))
        offset = 0
        for i, (dilation, n_b) in enumerate(zip(self.dilations, self.per_dilation, strict=True)):
            bias = self.biases[offset : offset + N_KERNELS * n_b].reshape(N_KERNELS, n_b)
            block = feats[:, offset : offset + N_KERNELS * n_b].view(b, N_KERNELS, n_b)
            offset += N_KERNELS * n_b
            reach = KERNEL_LENGTH // 2 * dilation
            padded = kernels[(kernels + i) % 2 == 0]
            unpadded = kernels[(kernels + i) % 2 == 1]  # valid positions only, where there are any
            for lo in range(0, b, step):
                taps = self._taps(x[lo : lo + step], dilation)
                valid = taps[:, :, reach : t - reach] if t > 2 * reach else taps
                for rows, positions in ((padded, taps), (unpadded, valid)):
                    block[lo : lo + step, rows] = _ppv(torch.matmul(self.weights[rows], positions), bias[rows])
        return feats


def _row_quantiles(values: Tensor, levels: Tensor) -> Tensor:
    """Linear-interpolated quantiles of each row at its own levels: (R, T), (R, Q) → (R, Q)."""
    ordered = values.sort(dim=1).values
    pos = levels * (values.shape[1] - 1)
    lo = pos.floor().long()
    hi = (lo + 1).clamp(max=values.shape[1] - 1)
    frac = pos - lo
    return torch.gather(ordered, 1, lo) * (1 - frac) + torch.gather(ordered, 1, hi) * frac


def _ppv(out: Tensor, bias: Tensor) -> Tensor:
    """Proportion of positions above each bias: out (B, K, T), bias (K, Q) → (B, K, Q).

    Computed as ``(sum(sign(out - bias)) + T) / 2T``, one float pass per bias over ``out`` (which the
    caller keeps cache-sized); a position exactly equal to the bias counts one half.
    """
    b, k, t = out.shape
    ppv = out.new_empty(b, k, bias.shape[1])
    for q in range(bias.shape[1]):
        ppv[:, :, q] = ((out - bias[None, :, q, None]).sign_().sum(-1) + t) / (2 * t)
    return ppv
