"""One module per paper; each lists its executable claims in a module-level ``CLAIMS`` tuple.

* ``linear_attention``   — Zhang, Singh, Latham, Saxe (ICML 2025, arXiv 2501.16265)
* ``softmax_regression`` — Gao, Song, Xie (arXiv 2307.02419) and Li et al. (arXiv 2304.13276)
* ``categorical_icl``    — Wang, Convertino, Cheng, Henao, Carin (ICML 2025, arXiv 2405.17248)
* ``nonlinear_regression`` — Li, Duan, Liang (arXiv 2507.20443)
"""
