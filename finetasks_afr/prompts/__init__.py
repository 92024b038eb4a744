"""What a model is shown around a document: each dataset's language codes, human-made prompt words and the
lighteval literals built from them, the one text-cleaning step, and the seeded few-shot sampler.
"""
