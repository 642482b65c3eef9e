"""Training: domain adaptation of masked LMs (``adapt``) and the maskless student (``distill``)."""
