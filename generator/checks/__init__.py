"""Grammar and acceptability checks for generated sentences, each backend registered by kind and
name beside its class (registry.py): a new backend is a new module here."""
