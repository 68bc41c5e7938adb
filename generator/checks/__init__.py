"""Grammar and acceptability checks for generated sentences."""
