"""Compressions of a trained model, each measured as one row (tuner/compress/measure.py).

One module per method: quantize.py (dynamic int8 of Linear layers), prune.py (global
magnitude pruning with a short, charged fine-tune), distill.py (narrower students trained to
the target with the winner as teacher); table.py runs them all and renders the table.
"""
