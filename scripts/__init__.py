"""Scripts that may use both the app and the model package: `python -m scripts.load_check`. `app_process`
(the app in a subprocess) and `tiny_models` (tiny random models) are shared with tests/."""
