"""``sss-viewer train``: train an SSS model on a labelled cohort or file."""

from __future__ import annotations

import dataclasses

from sss_viewer.commands._shared import _cache, _labelled_data, say


def _train_overrides(args) -> dict:
    names = {
        "backbone": "backbone",
        "epochs": "epochs",
        "batch_size": "batch_size",
        "lr": "lr",
        "window_length": "window_length",
        "train_stride": "train_stride",
        "calibrator": "calibrator",
        "calibrate_on": "calibrate_on",
        "split": "split",
        "balance": "balance",
        "window_loss_weight": "window_loss_weight",
        "seed": "seed",
        "device": "device",
        "windows_per_epoch": "windows_per_epoch",
        "head_solver": "head_solver",
        "refit_on_train_val": "refit_on_train_val",
    }
    overrides = {field: getattr(args, arg) for arg, field in names.items() if getattr(args, arg) is not None}
    if args.scale is not None:
        overrides["preprocess"] = {"scale": args.scale}  # train_preset applies it to the preset's preprocessing
    if "window_length" in overrides:
        overrides.setdefault("inference_stride", max(1, overrides["window_length"] // 4))
    return overrides


def train_config(args):
    """The :class:`~sss_viewer.engine.config.TrainConfig` of ``sss-viewer train``: ``--preset`` with the options.

    ``--gpu-kernels`` is added to the preset's model parameters; it is refused, naming the backbone, for a local
    model other than PatchTST.
    """
    from sss_viewer.engine.config import train_preset

    config = train_preset(args.preset, **_train_overrides(args))
    if args.target_sfreq is not None:
        preprocess = dataclasses.replace(config.preprocess, target_sfreq=args.target_sfreq or None)
        config = dataclasses.replace(config, preprocess=preprocess)
    if args.gpu_kernels is not None:
        if config.backbone != "patchtst":
            raise ValueError(
                f"--gpu-kernels {args.gpu_kernels} applies to the patchtst local model; preset {args.preset!r} trains "
                f"{config.backbone!r} (pass --backbone patchtst, or drop --gpu-kernels)."
            )
        config = dataclasses.replace(config, model_params={**config.model_params, "gpu_kernels": args.gpu_kernels})
    return config


def run(args, progress: bool) -> int:
    """Train a model of ``--preset`` with the options' overrides and save it to ``--out``."""
    from sss_viewer.engine import _distributed as distributed
    from sss_viewer.engine.bundle import check_model_destination
    from sss_viewer.engine.checkpoint import checkpoint_path_for
    from sss_viewer.engine.training import train

    if args.out.exists() and args.out.is_dir() and any(args.out.iterdir()) and not args.overwrite:
        raise ValueError(f"Model directory {args.out} exists and is not empty; pass --overwrite to replace it.")
    check_model_destination(args.out)  # before training: nothing else in it would be lost
    checkpoint = checkpoint_path_for(args.out)
    if checkpoint.exists() and not (args.resume or args.overwrite):
        raise ValueError(
            f"An interrupted training run left its checkpoint at {checkpoint}: pass --resume to continue it, or "
            "--overwrite to start over (the checkpoint is then replaced)."
        )
    if args.resume and args.overwrite:
        raise ValueError("--resume continues the interrupted run and --overwrite starts over; pass one of them.")
    config = train_config(args)
    recordings = _labelled_data(args)
    ranks = distributed.start(config.device)  # a no-op unless torchrun started several ranks
    try:
        with distributed.stopped_by_launcher(ranks):  # another rank failed: torchrun's SIGTERM becomes a clear error
            bundle = train(
                recordings,
                config,
                progress=progress and ranks.is_main,
                cache=_cache(args),
                checkpoint=checkpoint,
                resume=args.resume,
            )
    except RuntimeError as exc:
        hint = (
            f" The last completed epoch is in {checkpoint}: rerun the same command with --resume."
            if checkpoint.exists()
            else ""
        )
        lost = distributed.lost_rank(exc, ranks, hint)
        if lost is None:
            raise
        raise lost from exc
    finally:
        distributed.stop()
    if not ranks.is_main:  # rank 0 saves the model
        return 0
    if getattr(args, "viewer_labels", None) is not None:  # which sidecars labelled which recording, in the model
        bundle.info["viewer_labels"] = {
            "viewer_out": str(args.viewer_labels),
            "recordings": {r.label: r.info.get("viewer_labels", {}) for r in recordings},
        }
    bundle.save(args.out)
    checkpoint.unlink(missing_ok=True)  # the model is saved: nothing left to resume
    val = bundle.info["val_metrics"]
    fitted = (
        f"L-BFGS head, l2 {bundle.info['head_l2']:g}"
        if "head_l2" in bundle.info
        else f"best epoch {bundle.info['best_epoch']}"
    )
    say(
        f"saved model to {args.out}: {fitted}, validation AUC {val['auc']:.3f}, "
        f"threshold {bundle.threshold:.3f}; test split: {', '.join(bundle.info['split']['test']) or '-'}"
    )
    return 0
