"""The model's output layer, reduced to what scoring needs (`OutputLayer`)."""

from __future__ import annotations

from transnli.common.lm.memory import FilePages, logsumexp_in_place


class OutputLayer:
    """The model's output layer, reduced to what scoring needs: the log-probability of each
    position's actual next token. The vocabulary is taken in chunks with a running log-sum-exp,
    so the full logits (positions x 262k words for Gemma) never exist at once."""

    CHUNK = 32768

    def __init__(self, weight, bias=None, softcap: float | None = None):
        self.weight = weight
        self.bias = bias
        self.softcap = softcap
        # a memory-mapped weight's pages, handed back after each chunk (common/lm/memory.py)
        self.pages: FilePages | None = None

    @classmethod
    def of(cls, model) -> OutputLayer:
        head = model.get_output_embeddings()
        softcap = getattr(model.config, "final_logit_softcapping", None)
        layer = cls(head.weight, getattr(head, "bias", None), softcap)
        layer.pages = FilePages.of(head.weight)
        return layer

    def _logits(self, hidden, weight, bias):
        logits = hidden @ weight.to(hidden.dtype).T
        if bias is not None:
            logits = logits + bias.to(hidden.dtype)
        if self.softcap:
            logits = (logits / self.softcap).tanh() * self.softcap
        return logits

    def log_probs(self, hidden, targets):
        """hidden: [batch, positions, width]; targets: [batch, positions] token ids. Returns
        [batch, positions] log-probabilities in float32."""
        import torch

        shape = targets.shape
        flat = hidden.reshape(-1, hidden.shape[-1]).float()
        total = None
        for lo in range(0, self.weight.shape[0], self.CHUNK):
            hi = lo + self.CHUNK
            bias = None if self.bias is None else self.bias[lo:hi]
            part = logsumexp_in_place(self._logits(flat, self.weight[lo:hi], bias))
            total = part if total is None else torch.logaddexp(total, part)
            if self.pages is not None:
                self.pages.release(lo, hi)
        ids = targets.reshape(-1)
        rows = self.weight[ids].to(flat.dtype)
        if self.pages is not None:  # the rows gathered here and by the embedding lookup
            self.pages.release()
        picked = (flat * rows).sum(-1)
        if self.bias is not None:
            picked = picked + self.bias[ids].to(flat.dtype)
        if self.softcap:
            picked = (picked / self.softcap).tanh() * self.softcap
        return (picked - total).reshape(shape)
