"""What a model is: loading it (mlx-lm's loader, checkpoint files), the cheap support check per class, its
structure (the blocks a forward's time is split into), and the models specscope generates (the demo, a real
model's shape at random weights)."""
