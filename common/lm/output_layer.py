"""The model's output layer, reduced to what scoring needs (`OutputLayer`)."""

from __future__ import annotations


class OutputLayer:
    """The model's output layer, reduced to what scoring needs: the log-probability of each
    position's actual next token. The vocabulary is taken in chunks with a running log-sum-exp,
    so the full logits (positions x 262k words for Gemma) never exist at once."""

    CHUNK = 32768

    def __init__(self, weight, bias=None, softcap: float | None = None):
        self.weight = weight
        self.bias = bias
        self.softcap = softcap

    @classmethod
    def of(cls, model) -> OutputLayer:
        head = model.get_output_embeddings()
        softcap = getattr(model.config, "final_logit_softcapping", None)
        return cls(head.weight, getattr(head, "bias", None), softcap)

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
            part = torch.logsumexp(self._logits(flat, self.weight[lo:hi], bias), -1)
            total = part if total is None else torch.logaddexp(total, part)
        ids = targets.reshape(-1)
        rows = self.weight[ids].to(flat.dtype)
        picked = (flat * rows).sum(-1)
        if self.bias is not None:
            picked = picked + self.bias[ids].to(flat.dtype)
        if self.softcap:
            picked = (picked / self.softcap).tanh() * self.softcap
        return (picked - total).reshape(shape)
