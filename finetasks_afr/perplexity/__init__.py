"""Perplexity signals outside a checkpoint sweep: recommending a pretrained model for a language from its
(pseudo-)perplexity (Koya), agreement between model rankings, and cross-lingual key-paragraph perplexity (LongPPL).
"""
