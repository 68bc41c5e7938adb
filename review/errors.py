"""The review package's one error: the message names the file, line and field, and the CLI shows
it as one line."""


class ReviewError(ValueError):
    """A run folder, triples file or review log that cannot be used as asked."""
