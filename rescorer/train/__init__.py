"""Training: one loop (``loop``) whose objectives are masked-LM adaptation (``adapt``), the maskless student
(``distill``) and small causal LMs (``causal``, with ``scratch`` word tokenizers and fresh models)."""
