"""The names of the compute blocks a forward's time is split into (no MLX: the core and the app read it too)."""

BLOCK_NAMES = ["linear_attention", "full_attention", "moe", "dense_mlp", "output_head", "other", "unclassified"]
