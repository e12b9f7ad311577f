"""The compute categories a forward's time is split into (no MLX: the core and the app read it too)."""

CATEGORIES = ["linear_attention", "full_attention", "moe", "dense_mlp", "output_head", "other", "unclassified"]
