"""The clinician viewer: Panel components over the SSS engine (``panel serve app.py``, or in Jupyter)."""
