"""Device selection: the GPU when there is one, the CPU always."""

from __future__ import annotations

import torch

from sss_viewer._validate import check_option


def resolve_device(device: str = "auto") -> torch.device:
    """Return the torch device for ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda[:N]"``.

    Parameters
    ----------
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (device N).

    Returns
    -------
    torch.device
        ``cuda`` for ``"auto"`` when torch sees a CUDA device, else ``cpu``; otherwise ``device`` itself.

    Raises
    ------
    ValueError
        ``device`` is none of these, or asks for CUDA on a machine without it.
    """
    base = device.split(":")[0]
    check_option("device", base, ("auto", "cpu", "cuda"))
    if base == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if base == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"Invalid device={device!r}: torch reports no CUDA device on this machine; use 'cpu' or 'auto'."
        )
    return torch.device(device)
