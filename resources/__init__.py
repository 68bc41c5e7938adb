"""Data shipped with transnli (presets, prompt templates, samples) and provisioning of
external resources. Installed as the import package ``transnli.resources``."""

from importlib.resources import files


def resource_path(*parts: str):
    """A Traversable for a file shipped in this package, e.g. resource_path("presets",
    "default.toml")."""
    return files(__name__).joinpath(*parts)
