"""A deterministic synthetic multi-centre iEEG cohort with known seizure-onset zones.

Modules: ``config`` (centres, ``SynthConfig``), ``patients`` (montage, SOZ, channel parameters),
``signals`` (background, waveforms, placement), ``run`` (one ``Recording``), ``bids`` (writing a
BIDS-like dataset), ``cohort`` (a whole cohort on disk).

Each synthetic patient belongs to one of the four ds003029 centres (round-robin) and takes its
channel count, run duration, sampling rate, acquisition type, shaft names, mains frequency and
seizure-marker wording from the real per-centre table ``sss_viewer/data/ds003029_centres.json``
(written by ``training/summarise_ds003029.py`` from the dataset's sidecars).

Signal model, in µV, per channel::

    amplitude_c · [ 1/f^β background (knee, theta/alpha/beta/gamma peaks, white floor) + slow drift
                    + benign distractors (theta, alpha–gamma bursts, K-complex-like waves, muscle)
                    + SOZ channels:     spike episodes, HFO-like ripples, seizure
                      other channels:   seizure spread (some), spectral mimics of the SOZ signature ]
    + line noise (mains and harmonics)

The SOZ signature is local in time: interictal spike episodes (2–8 s clusters of 20–70 ms sharp
spikes, each followed by a slow wave, some with an 80–90 Hz ripple), isolated ripples, and a seizure
that starts with low-voltage fast activity and evolves into rhythmic 8 → 3 Hz spike-wave. All of it
is band-limited below ``SynthConfig.signature_max_freq_hz`` (< 100 Hz) so that it survives the
default resampling to 250 Hz. Abnormal activity covers at most ``max_abnormal_fraction`` of any SOZ
channel (asserted).

Whole-channel statistics must not give the SOZ away, so non-SOZ channels carry: wide per-channel
amplitude and spectral-shape variation, the same benign distractors, seizure spread, and *spectral
mimics* — phase-randomised copies of spike episodes and seizures, with the SOZ signature's power
spectrum but none of its sharp morphology. A global-feature classifier (log variance, line length,
band powers) then stays near chance while a 4-s spike detector separates SOZ channels well.

Determinism: ``np.random.SeedSequence(seed).spawn`` gives patient ``k`` its own stream, so patient
``k`` is identical whatever the cohort size, and two cohorts from the same seed are byte-identical.
"""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.synth.config": ("ABNORMAL_KINDS", "CENTRES", "SynthConfig", "centre_table"),
    "sss_viewer.synth.run": ("synthesise_recording",),
    "sss_viewer.synth.bids": ("write_recording_bids",),
    "sss_viewer.synth.cohort": ("generate_cohort",),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)
